#!/usr/bin/env python3
"""Medians (ranges) of the staged rows per binary or option over the bench rounds of a run log:
ranges.py run1.log -> the table the report quotes. Rows are `staged DIR SIZE GB/s PCT%` lines
after a `== ROUND LABEL rc=...` header."""
import re, statistics, sys
from collections import defaultdict
cells = defaultdict(list)
label = None
for line in open(sys.argv[1]):
    m = re.match(r"== \d+ (.*?) rc=", line)
    if m:
        label = m.group(1)
        continue
    m = re.match(r"\s+staged (H2D|D2H) (\S+) \S+ ([\d.]+)%", line)
    if m and label:
        cells[(label, m.group(1), m.group(2))].append(float(m.group(3)))
labels = sorted({k[0] for k in cells})
sizes = []
for k in cells:
    if k[2] not in sizes:
        sizes.append(k[2])
for d in ("H2D", "D2H"):
    for lab in labels:
        row = []
        for s in sizes:
            v = cells.get((lab, d, s))
            row.append(f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" if v else "")
        print(f"| {d} {lab} | " + " | ".join(row) + " |")
print("sizes:", " ".join(sizes))
