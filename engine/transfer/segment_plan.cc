#include "engine/transfer/segment_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace resmem::transfer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxSegments = 64;  // device to host: the DP's second dimension
// Added per segment to what the DP minimises (not to the prediction): of cuts the model finds
// equal, which happens wherever the lanes, not the copy engine, set the pace, the one with
// fewer DMAs wins (each DMA costs the driving lane a submit and the engine per_dma_us).
constexpr double kTieBreakUs = 0.1;

double BytesPerUs(double gbps) { return gbps * 1e3; }

// One DMA of n bytes in the copy engine.
double DmaUs(uint64_t n, const StagingCosts& c) { return n / BytesPerUs(c.dma_gbps) + c.per_dma_us; }

double PinnedUs(uint64_t length, const StagingCosts& c) { return c.submit_us + DmaUs(length, c); }

}  // namespace

std::string StagingCosts::Describe() const {
  char b[256];
  std::snprintf(b, sizeof b,
                "start %.1f us, fill %.1f GB/s, drain %.1f GB/s, submit %.1f us, DMA %.1f GB/s + "
                "%.1f us each = --costs %g,%g,%g,%g,%g,%g",
                start_us, fill_gbps, drain_gbps, submit_us, dma_gbps, per_dma_us, start_us,
                fill_gbps, drain_gbps, submit_us, dma_gbps, per_dma_us);
  return b;
}

Result<StagingCosts> ParseStagingCosts(const std::string& text) {
  static const char* const kNames[] = {"start_us", "fill_gbps", "drain_gbps",
                                       "submit_us", "dma_gbps", "per_dma_us"};
  double v[6];
  size_t at = 0;
  for (int i = 0; i < 6; ++i) {
    const size_t comma = text.find(',', at);
    const std::string field = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    v[i] = std::strtod(field.c_str(), &end);
    const bool rate = i == 1 || i == 2 || i == 4;
    if (field.empty() || end != field.c_str() + field.size() || !(rate ? v[i] > 0 : v[i] >= 0))
      return Status::InvalidArgument(
          "staging costs '" + text + "': " + kNames[i] + " is '" + field + "', not a number " +
          (rate ? "> 0" : ">= 0") +
          "; give six numbers: start_us,fill_gbps,drain_gbps,submit_us,dma_gbps,per_dma_us");
    if (i < 5 && comma == std::string::npos)
      return Status::InvalidArgument("staging costs '" + text + "': " + std::to_string(i + 1) +
                                     " numbers, want 6: start_us,fill_gbps,drain_gbps,submit_us,"
                                     "dma_gbps,per_dma_us");
    if (i == 5 && comma != std::string::npos)
      return Status::InvalidArgument("staging costs '" + text + "': more than 6 numbers, want "
                                     "start_us,fill_gbps,drain_gbps,submit_us,dma_gbps,per_dma_us");
    at = comma + 1;
  }
  StagingCosts c;
  c.start_us = v[0], c.fill_gbps = v[1], c.drain_gbps = v[2];
  c.submit_us = v[3], c.dma_gbps = v[4], c.per_dma_us = v[5];
  return c;
}

double PredictSegmentsUs(PlanDirection dir, const std::vector<uint64_t>& segments,
                         const StagingCosts& c) {
  double filled = c.start_us, dma_end = 0, drain_end = c.start_us;
  uint64_t bytes = 0;
  int k = 0;
  for (uint64_t s : segments) {
    bytes += s;
    ++k;
    if (dir == PlanDirection::kHostToDevice) {
      filled += s / BytesPerUs(c.fill_gbps);
      dma_end = std::max(filled + c.submit_us, dma_end) + DmaUs(s, c);
    } else {
      // Queued at once: DMA k starts once submitted (k submits) and once DMA k-1 is done.
      dma_end = std::max(k * c.submit_us, dma_end) + DmaUs(s, c);
      drain_end = std::max(dma_end, drain_end) + s / BytesPerUs(c.drain_gbps);
    }
  }
  return dir == PlanDirection::kHostToDevice ? dma_end : drain_end;
}

SegmentPlan PlanSegments(PlanDirection dir, uint64_t length, uint64_t max_segment,
                         const StagingCosts& c, uint64_t unit) {
  SegmentPlan plan;
  if (length == 0) return plan;
  if (unit == 0) unit = std::max<uint64_t>(16 << 10, (length / 256 + 4095) / 4096 * 4096);
  max_segment = std::max(unit, max_segment / unit * unit);
  const uint64_t units = (length + unit - 1) / unit;
  const uint64_t max_units = max_segment / unit;
  // Segment end in bytes after u units (the last unit may be short).
  auto end_of = [&](uint64_t u) { return std::min(length, u * unit); };
  std::vector<uint64_t> prev;
  if (dir == PlanDirection::kHostToDevice) {
    // best[u]: the soonest the DMAs of the first u units can be done. Monotone: a later DMA
    // end never lets a later segment finish sooner, so the minimum is the state.
    std::vector<double> best(units + 1, kInf);
    prev.assign(units + 1, 0);
    best[0] = -kInf;
    for (uint64_t u = 1; u <= units; ++u) {
      const double ready = c.start_us + end_of(u) / BytesPerUs(c.fill_gbps) + c.submit_us;
      for (uint64_t p = u > max_units ? u - max_units : 0; p < u; ++p) {
        const double t = std::max(ready, best[p]) + DmaUs(end_of(u) - end_of(p), c) + kTieBreakUs;
        if (t < best[u]) best[u] = t, prev[u] = p;
      }
    }
  } else {
    // best[k][u]: the soonest the first u units, cut into k segments, are drained; the DMA end
    // of that prefix is taken as its chain without waits (submit + bytes / rate + k per-DMA
    // costs), or the k-th submit plus the last DMA where submits are the slower.
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
              std::max(c.submit_us + end_of(u) / BytesPerUs(c.dma_gbps) + k * c.per_dma_us,
                       k * c.submit_us + DmaUs(s, c));
          const double t =
              std::max(dma_end, best[k - 1][p]) + s / BytesPerUs(c.drain_gbps) + kTieBreakUs;
          if (t < best[k][u]) best[k][u] = t, from[k][u] = p;
        }
      }
    }
    int bk = 1;
    for (int k = 1; k <= kmax; ++k)
      if (best[k][units] < best[bk][units]) bk = k;
    prev.assign(units + 1, 0);
    for (uint64_t u = units; bk > 0; --bk) {
      prev[u] = from[bk][u];
      u = from[bk][u];
    }
  }
  for (uint64_t u = units; u > 0; u = prev[u]) plan.segments.push_back(end_of(u) - end_of(prev[u]));
  std::reverse(plan.segments.begin(), plan.segments.end());
  plan.predicted_us = PredictSegmentsUs(dir, plan.segments, c);
  plan.pinned_us = PinnedUs(length, c);
  return plan;
}

}  // namespace resmem::transfer
