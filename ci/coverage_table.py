#!/usr/bin/env python3
"""Line coverage per folder and the least-covered files, from one lcov tracefile.

usage: coverage_table.py TRACEFILE [--write-doc docs/coverage.md [STAMP]]
STAMP: when, at which commit and with what result the tracefile was measured (ci/coverage.sh
gives it); the page prints it under its first paragraph.

Test sources (*_test.cc, testdata/) are left out: the figures are of the code under test.
"""
import os
import sys
from collections import defaultdict


def read_tracefile(path):
    files = {}  # source -> {line: hit count}
    source = None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("SF:"):
                source = line[3:]
                files.setdefault(source, {})
            elif line.startswith("DA:") and source is not None:
                number, count = line[3:].split(",")[:2]
                lines = files[source]
                lines[int(number)] = lines.get(int(number), 0) + int(count)
            elif line == "end_of_record":
                source = None
    return files


def is_code_under_test(source):
    return not (source.endswith("_test.cc") or "/testdata/" in source
                or source.startswith("external/"))


def percent(hit, total):
    return 100.0 * hit / total if total else 0.0


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    files = {s: l for s, l in read_tracefile(argv[0]).items() if is_code_under_test(s)}
    if not files:
        sys.exit(f"coverage_table.py: {argv[0]} holds no source of the project")
    per_file = {s: (sum(1 for c in l.values() if c > 0), len(l)) for s, l in files.items()}
    per_folder = defaultdict(lambda: [0, 0, []])
    for source, (hit, total) in per_file.items():
        folder = per_folder[os.path.dirname(source)]
        folder[0] += hit
        folder[1] += total
        folder[2].append(source)
    all_hit = sum(h for h, _ in per_file.values())
    all_total = sum(t for _, t in per_file.values())

    out = []
    out.append(f"Total: {all_hit} of {all_total} lines, {percent(all_hit, all_total):.1f}% "
               f"({len(per_file)} files)\n")
    out.append("| Folder | Lines hit | Lines | Coverage | Least-covered file |")
    out.append("|---|---:|---:|---:|---|")
    for name in sorted(per_folder):
        hit, total, sources = per_folder[name]
        worst = min(sources, key=lambda s: (percent(*per_file[s]), -per_file[s][1]))
        wh, wt = per_file[worst]
        out.append(f"| {name} | {hit} | {total} | {percent(hit, total):.1f}% | "
                   f"{os.path.basename(worst)} ({percent(wh, wt):.1f}% of {wt}) |")
    out.append("")
    out.append("Least-covered files (20 lines or more), lowest first:\n")
    out.append("| File | Lines hit | Lines | Coverage |")
    out.append("|---|---:|---:|---:|")
    ranked = sorted((s for s in per_file if per_file[s][1] >= 20),
                    key=lambda s: (percent(*per_file[s]), -per_file[s][1]))
    for source in ranked[:15]:
        hit, total = per_file[source]
        out.append(f"| {source} | {hit} | {total} | {percent(hit, total):.1f}% |")
    table = "\n".join(out) + "\n"
    print(table)

    if len(argv) >= 3 and argv[1] == "--write-doc":
        doc = argv[2]
        stamp = f"Measured {argv[3]}.\n\n" if len(argv) >= 4 and argv[3] else ""
        with open(doc, "w") as f:
            f.write(DOC_HEAD + stamp + table + DOC_TAIL)
        print(f"coverage_table.py: wrote {doc}")
    return 0


DOC_HEAD = """# Coverage

Line coverage of the project's C++ under `bazel test //...`, measured with `ci/coverage.sh
--write-doc` (which writes this page): `bazel coverage` with gcov (GCC 12) through the offline
lcov merger (third_party/remote_coverage_tools), the per-test tracefiles merged with Debian's
lcov 1.16 (docs/build.md). Test sources (`*_test.cc`, `testdata/`) are left out. A line counts as
covered when any test ran it; code that only runs on a GPU host (backends/cuda with a real GPU)
or in the QEMU guest (the guest's programs write no coverage back) shows as not covered here.

"""

DOC_TAIL = """
Reading the figures: gcov writes a process's counts when it exits normally. A process that ends
with `_exit` or a signal writes none, so the forked FUSE daemon (mock/fuse/fuse_daemon.cc, which
ends with `_exit`) shows 0% although every FUSE test runs it through a mount. Commands that only
run in the QEMU guest (`resmem plan` in ci/qemu/kmod_lane.sh, the card's guest side
engine/backend/kmod_card.cc) or on a GPU host (`bench`, `stream`, `backends/cuda`, and
engine/transfer's segment pipelines, which run only on CUDA in real time: `staged_cuda_test` on
the GPU machine, docs/hil/) show what the tests here run of them.

Regenerate: `ci/coverage.sh --write-doc` (about 25 minutes on two cores: everything is rebuilt
with instrumentation, then every test runs; 1,462 s on 2026-11-29).
"""

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
