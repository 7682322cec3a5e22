#include "engine/transfer/segment_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace resmem::transfer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxSegments = 64;      // device to host: the DP's second dimension
constexpr uint64_t kWindowSegments = 32;  // PlanSegments' window, in largest segments
// Added per segment to what the DP minimises (not to the prediction): of cuts the model finds
// equal, which happens wherever the lanes, not the copy engine, set the pace, the one with
// fewer DMAs wins (each DMA costs the driving lane a submit and the engine per_dma_us).
constexpr double kTieBreakUs = 0.1;

double BytesPerUs(double gbps) { return gbps * 1e3; }

// One DMA of n bytes in the copy engine, alone or beside the lanes' copy.
double DmaUs(uint64_t n, const StagingCosts& c, bool beside = false) {
  return n / BytesPerUs(beside ? c.dma_beside_gbps : c.dma_gbps) + c.per_dma_us;
}

double PinnedUs(uint64_t length, const StagingCosts& c) { return c.submit_us + DmaUs(length, c); }

}  // namespace

StagingCosts StagingCosts::Ceiling() const {
  StagingCosts c = *this;
  c.fill_gbps = c.fill_alone_gbps = std::max(fill_gbps, fill_alone_gbps);
  c.drain_gbps = c.drain_alone_gbps = std::max(drain_gbps, drain_alone_gbps);
  c.dma_gbps = c.dma_beside_gbps = std::max(dma_gbps, dma_beside_gbps);
  return c;
}

std::string StagingCosts::Describe() const {
  char b[480];
  std::snprintf(b, sizeof b,
                "start %.1f us, fill %.1f GB/s alone and %.1f beside DMAs, drain %.1f and %.1f, "
                "submit %.1f us, DMA %.1f GB/s alone and %.1f beside the lanes + %.1f us each = "
                "--costs %g,%g,%g,%g,%g,%g,%g,%g,%g",
                start_us, fill_alone_gbps, fill_gbps, drain_alone_gbps, drain_gbps, submit_us,
                dma_gbps, dma_beside_gbps, per_dma_us, start_us, fill_alone_gbps, fill_gbps,
                drain_alone_gbps, drain_gbps, submit_us, dma_gbps, dma_beside_gbps, per_dma_us);
  return b;
}

Result<StagingCosts> ParseStagingCosts(const std::string& text) {
  constexpr int kFields = 9;
  static const char* const kNames[kFields] = {
      "start_us",  "fill_alone_gbps", "fill_gbps", "drain_alone_gbps", "drain_gbps",
      "submit_us", "dma_gbps",        "dma_beside_gbps", "per_dma_us"};
  const std::string want = std::string("; give ") + std::to_string(kFields) +
                           " numbers: " + kStagingCostsFields;
  std::vector<std::string> fields;
  for (size_t at = 0;;) {
    const size_t comma = text.find(',', at);
    fields.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (fields.size() != kFields)
    return Status::InvalidArgument("staging costs '" + text + "': " +
                                   std::to_string(fields.size()) + " numbers" + want);
  double v[kFields];
  for (int i = 0; i < kFields; ++i) {
    char* end = nullptr;
    v[i] = std::strtod(fields[i].c_str(), &end);
    const bool time = i == 0 || i == 5 || i == 8;
    if (fields[i].empty() || end != fields[i].c_str() + fields[i].size() ||
        !(time ? v[i] >= 0 : v[i] > 0))
      return Status::InvalidArgument("staging costs '" + text + "': " + kNames[i] + " is '" +
                                     fields[i] + "', not a number " + (time ? ">= 0" : "> 0") +
                                     want);
  }
  StagingCosts c;
  c.start_us = v[0], c.fill_alone_gbps = v[1], c.fill_gbps = v[2], c.drain_alone_gbps = v[3];
  c.drain_gbps = v[4], c.submit_us = v[5], c.dma_gbps = v[6], c.dma_beside_gbps = v[7];
  c.per_dma_us = v[8];
  return c;
}

double PredictSegmentsUs(PlanDirection dir, const std::vector<uint64_t>& segments,
                         const StagingCosts& c) {
  double filled = c.start_us, dma_end = 0, drain_end = c.start_us;
  for (size_t k = 0; k < segments.size(); ++k) {
    const uint64_t s = segments[k];
    const bool last = k + 1 == segments.size();
    if (dir == PlanDirection::kHostToDevice) {
      filled += s / BytesPerUs(k == 0 ? c.fill_alone_gbps : c.fill_gbps);
      dma_end = std::max(filled + c.submit_us, dma_end) + DmaUs(s, c, !last);
    } else {
      // Queued at once: DMA k starts once submitted (k + 1 submits) and once DMA k-1 is done.
      dma_end = std::max((k + 1) * c.submit_us, dma_end) + DmaUs(s, c, k > 0);
      drain_end = std::max(dma_end, drain_end) +
                  s / BytesPerUs(last ? c.drain_alone_gbps : c.drain_gbps);
    }
  }
  return dir == PlanDirection::kHostToDevice ? dma_end : drain_end;
}

namespace {

// `length` bytes in segments of max_segment, the last one shorter.
std::vector<uint64_t> EqualCut(uint64_t length, uint64_t max_segment) {
  std::vector<uint64_t> cut;
  for (uint64_t at = 0; at < length; at += max_segment) cut.push_back(std::min(max_segment, length - at));
  return cut;
}

// The DP over a copy of at most kWindowSegments x max_segment bytes.
std::vector<uint64_t> PlanWindow(PlanDirection dir, uint64_t length, uint64_t max_segment,
                                 const StagingCosts& c, uint64_t unit) {
  if (unit == 0) unit = std::max<uint64_t>(16 << 10, (length / 256 + 4095) / 4096 * 4096);
  unit = std::min(unit, max_segment);
  max_segment = max_segment / unit * unit;
  const uint64_t units = (length + unit - 1) / unit;
  const uint64_t max_units = max_segment / unit;
  // Segment end in bytes after u units (the last unit may be short).
  auto end_of = [&](uint64_t u) { return std::min(length, u * unit); };
  std::vector<uint64_t> prev;
  if (dir == PlanDirection::kHostToDevice) {
    // For each first segment f (filled alone): best[u], the soonest the DMAs of the first u
    // units can be done. Monotone: a later DMA end never lets a later segment finish sooner, so
    // the minimum is the state.
    double best_total = kInf;
    std::vector<double> best(units + 1);
    std::vector<uint64_t> from(units + 1);
    for (uint64_t f = 1; f <= std::min(units, max_units); ++f) {
      const double first_filled = c.start_us + end_of(f) / BytesPerUs(c.fill_alone_gbps);
      if (first_filled + c.submit_us >= best_total) break;  // later firsts only fill longer
      std::fill(best.begin(), best.end(), kInf);
      best[f] = first_filled + c.submit_us + DmaUs(end_of(f), c, f < units) + kTieBreakUs;
      from[f] = 0;
      for (uint64_t u = f + 1; u <= units; ++u) {
        const double ready =
            first_filled + (end_of(u) - end_of(f)) / BytesPerUs(c.fill_gbps) + c.submit_us;
        for (uint64_t p = std::max(f, u > max_units ? u - max_units : 0); p < u; ++p) {
          const double t = std::max(ready, best[p]) +
                           DmaUs(end_of(u) - end_of(p), c, u < units) + kTieBreakUs;
          if (t < best[u]) best[u] = t, from[u] = p;
        }
      }
      if (best[units] < best_total) {
        best_total = best[units];
        prev = from;
      }
    }
  } else {
    // best[k][u]: the soonest the first u units, cut into k segments, are drained; the DMA end
    // of that prefix is taken as its chain without waits (submit + bytes / the rate beside the
    // lanes + k per-DMA costs), or the k-th submit plus the last DMA where submits are the
    // slower. The plan's figure is then the exact model's (PredictSegmentsUs).
    const int kmax = static_cast<int>(std::min<uint64_t>(kMaxSegments, units));
    std::vector<std::vector<double>> best(kmax + 1, std::vector<double>(units + 1, kInf));
    std::vector<std::vector<uint64_t>> from(kmax + 1, std::vector<uint64_t>(units + 1, 0));
    best[0][0] = c.start_us;
    for (int k = 1; k <= kmax; ++k) {
      for (uint64_t u = k; u <= units; ++u) {
        for (uint64_t p = u > max_units ? u - max_units : 0; p < u; ++p) {
          if (best[k - 1][p] == kInf) continue;
          const uint64_t s = end_of(u) - end_of(p);
          const double dma_end =
              std::max(c.submit_us + end_of(u) / BytesPerUs(c.dma_beside_gbps) + k * c.per_dma_us,
                       k * c.submit_us + DmaUs(s, c, k > 1));
          const double t =
              std::max(dma_end, best[k - 1][p]) + s / BytesPerUs(c.drain_gbps) + kTieBreakUs;
          if (t < best[k][u]) best[k][u] = t, from[k][u] = p;
        }
      }
    }
    // The last segment drains alone: over every (k, p) before it.
    double best_total = kInf;
    int bk = 0;
    uint64_t bp = 0;
    for (int k = 0; k < kmax; ++k) {
      for (uint64_t p = units > max_units ? units - max_units : 0; p < units; ++p) {
        if (best[k][p] == kInf) continue;
        const uint64_t s = length - end_of(p);
        const double dma_end =
            std::max(c.submit_us + length / BytesPerUs(c.dma_beside_gbps) + (k + 1) * c.per_dma_us,
                     (k + 1) * c.submit_us + DmaUs(s, c, k > 0));
        const double t = std::max(dma_end, best[k][p]) + s / BytesPerUs(c.drain_alone_gbps);
        if (t < best_total) best_total = t, bk = k, bp = p;
      }
    }
    if (best_total == kInf) return EqualCut(length, max_segment);  // not for a window's lengths
    prev.assign(units + 1, 0);
    prev[units] = bp;
    for (uint64_t u = bp; bk > 0; --bk) {
      prev[u] = from[bk][u];
      u = from[bk][u];
    }
  }
  std::vector<uint64_t> segments;
  for (uint64_t u = units; u > 0; u = prev[u]) segments.push_back(end_of(u) - end_of(prev[u]));
  std::reverse(segments.begin(), segments.end());
  return segments;
}

}  // namespace

SegmentPlan PlanSegments(PlanDirection dir, uint64_t length, uint64_t max_segment,
                         const StagingCosts& c, uint64_t unit) {
  SegmentPlan plan;
  if (length == 0) return plan;
  max_segment = std::max<uint64_t>(4096, max_segment / 4096 * 4096);
  // A long copy is planned where it is exposed (host to device its start, device to host its
  // end) over a window of kWindowSegments largest segments; the rest is cut into largest
  // segments, as the plan of a long copy does anyway. This bounds the DP's work and the device-
  // to-host DP's segment count.
  const uint64_t window = kWindowSegments * max_segment;
  const uint64_t planned = std::min(length, window);
  const uint64_t rest = length - planned;
  std::vector<uint64_t> head_or_tail = PlanWindow(dir, planned, max_segment, c, unit);
  std::vector<uint64_t> whole = EqualCut(rest, max_segment);
  if (dir == PlanDirection::kHostToDevice) {
    plan.segments = std::move(head_or_tail);
    plan.segments.insert(plan.segments.end(), whole.begin(), whole.end());
  } else {
    plan.segments = std::move(whole);
    plan.segments.insert(plan.segments.end(), head_or_tail.begin(), head_or_tail.end());
  }
  plan.predicted_us = PredictSegmentsUs(dir, plan.segments, c);
  plan.pinned_us = PinnedUs(length, c);
  return plan;
}

}  // namespace resmem::transfer
