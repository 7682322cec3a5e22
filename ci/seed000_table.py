#!/usr/bin/env python3
"""Prints seed 000's table next to the simulated one (docs/seed000-table.md).
usage: ci/seed000_table.py REPORT.json   (from: resmem run scenarios/seed000/bandwidth_table.toml --json FILE)
The seed's figures are copied from ../shared/seeds/000_bd71b0f62b937591.txt (MB/s, MB = 1e6)."""
import json
import sys

SEED = {  # row -> per reservation size, run 1 and run 2
    "A": ([1809.06, 1458.51, 1480.39, 1798.97, 78.43, 81.25], [3942.94, 3948.51, 3941.09, 3903.49, 80.55, 83.62]),
    "B": ([3733.25, 3721.65, 3565.07, 3717.53, 150.25, 149.48], [3839.18, 3803.5, 3765.08, 3820.82, 150.38, 149.67]),
    "C": ([5720.16, 5689.12, 5694.91, 5685.27, 5590.54, 5551.69], [5712.37, 5689.12, 5689.12, 5679.49, 5637.51, 5620.51]),
}
SIZES = ["1G", "4G", "16G", "64G", "128G", "188G"]

report = json.load(open(sys.argv[1]))
sim = {}
for s in report["scenarios"]:
    if s["name"] != "seed000-bandwidth-table":
        continue
    size = s["case"].split("=")[1]
    rates = [st["numbers"]["mbps"] for st in s["steps"] if "mbps" in st.get("numbers", {})]
    # steps with mbps, in order: memcpy run 1, memcpy run 2, copy (B), copy (C)
    sim[size] = {"A1": rates[0], "A2": rates[1], "B": rates[2], "C": rates[3], "verdict": s["verdict"]}

def row(label, seed_vals, key):
    cells = []
    worst = 0.0
    for i, size in enumerate(SIZES):
        got = sim[size][key]
        dev = (got - seed_vals[i]) / seed_vals[i] * 100
        worst = max(worst, abs(dev))
        cells.append(f"{seed_vals[i]:.0f} / **{got:.0f}** ({dev:+.0f}%)")
    return f"| {label} | " + " | ".join(cells) + f" | {worst:.1f}% |"

print("| MB/s: seed / **simulated** (deviation) | " + " | ".join(SIZES) + " | worst |")
print("|---|" + "---|" * (len(SIZES) + 1))
print(row("A, memcpy mmap -> new'ed, run 1", SEED["A"][0], "A1"))
print(row("A, memcpy mmap -> new'ed, run 2", SEED["A"][1], "A2"))
print(row("B, cudaMemcpy mmap -> device, run 1", SEED["B"][0], "B"))
print(row("B, cudaMemcpy mmap -> device, run 2", SEED["B"][1], "B"))
print(row("C, cudaMemcpy pinned -> device, run 1", SEED["C"][0], "C"))
print(row("C, cudaMemcpy pinned -> device, run 2", SEED["C"][1], "C"))
print()
print("verdicts: " + ", ".join(f"{k} {v['verdict']}" for k, v in sim.items()))
