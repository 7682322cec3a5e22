#!/usr/bin/env python3
"""A device-to-host staged copy as the pipeline runs it (report.md, "What the timelines show").

The copy engine runs the segments' DMAs back to back, each bytes / dma_gbps + per_dma_us; the
lanes drain each segment once its DMA is done and the segment before it is drained, taking
drain_fixed_us + bytes / drain_gbps. The drain figures are fitted to the per-segment timelines of
this folder's runs 2 and 3 (staged_probe --timeline, "host not cleared"); the DMA figures are
those timelines' ("done every ..."). Prints, for 1, 4 and 16 MiB, the equal segments the engine
uses and the best cut of any segments of whole units under the same figures.
"""

K, M = 1024, 1024 * 1024


def copy_us(cut, fixed, drain_gbps, dma_gbps=52.9, per_dma_us=1.2, first_done_us=10.0):
    done, end = first_done_us, 0.0
    for n in cut:
        done += n / 1e3 / dma_gbps + per_dma_us
        end = max(done, end) + fixed + n / 1e3 / drain_gbps
    return end


def best_cut(size, unit, fixed, drain_gbps, max_segment=8 * M):
    # Pareto front of (last DMA done, last drain end) per prefix, over cuts in whole units.
    fronts = {0: [(10.0, 0.0, ())]}
    n = size // unit
    for i in range(n):
        for done, end, cut in fronts.get(i, []):
            for k in range(1, min(n - i, max_segment // unit) + 1):
                b = k * unit
                d2 = done + b / 1e3 / 52.9 + 1.2
                e2 = max(d2, end) + fixed + b / 1e3 / drain_gbps
                fronts.setdefault(i + k, []).append((d2, e2, cut + (b,)))
        for j in [j for j in fronts if j > i]:
            keep, best = [], float("inf")
            for x in sorted(fronts[j]):
                if x[1] < best - 1e-9:
                    keep.append(x)
                    best = x[1]
            fronts[j] = keep[:200]
    return min(fronts[n], key=lambda x: x[1])


if __name__ == "__main__":
    for name, fixed, gbps in (("run 2 fit", 2.7, 72.0), ("run 3 fit", 1.2, 60.0)):
        print(f"{name}: drain {fixed} us + bytes at {gbps} GB/s per segment")
        for size, seg in ((1, 256 * K), (4, 512 * K), (16, 2 * M)):
            equal = [seg] * (size * M // seg)
            d, e, cut = best_cut(size * M, 32 * K if size < 16 else 128 * K, fixed, gbps)
            print(f"  {size:2d} MiB: equal {copy_us(equal, fixed, gbps):6.1f} us, best cut {e:6.1f} us"
                  f" ({' '.join(str(c // K) for c in cut)} KiB)")
