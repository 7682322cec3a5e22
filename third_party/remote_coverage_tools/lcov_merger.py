#!/usr/bin/env python3
"""Bazel's LcovMerger, offline: gcov's own report of one test run -> one lcov tracefile.

Bazel 4.2.3 runs this at the end of every test under `bazel coverage` (tools/test/
collect_coverage.sh: `$LCOV_MERGER --coverage_dir=D --output_file=F --filter_sources=RE...
--source_file_manifest=M`). Before that, collect_cc_coverage.sh has run gcov on each .gcda the
test wrote; gcov 9 and later write `<object>.gcda.gcov.json.gz` (gcov's JSON intermediate format)
into D. This program reads those files (and any lcov `.dat` a tool put there), sums the counts of
a source seen by several objects (a header included by many .cc files), keeps only the sources
listed in the manifest and not matching a filter, and writes the lcov tracefile F (SF/FN/FNDA/
FNF/FNH/DA/LF/LH records, the format `lcov` and `genhtml` read). It stands in for the Java
merger Bazel would download (docs/build.md).
"""
import glob
import gzip
import json
import os
import re
import sys


def parse_args(argv):
    args = {"filter_sources": []}
    for a in argv:
        if not a.startswith("--") or "=" not in a:
            continue
        key, value = a[2:].split("=", 1)
        if key == "filter_sources":
            args["filter_sources"].append(value)
        else:
            args[key] = value
    for need in ("coverage_dir", "output_file"):
        if need not in args:
            sys.exit(f"lcov_merger: --{need}= is missing (called as: {' '.join(argv)})")
    return args


def normalize(path):
    path = os.path.normpath(path)
    # gcov names sources as the compiler saw them: relative to the execution root, or absolute
    # under a sandbox's execroot; keep the workspace-relative part.
    m = re.search(r"/execroot/[^/]+/(.*)$", path)
    if m:
        path = m.group(1)
    return path[2:] if path.startswith("./") else path


def main(argv):
    args = parse_args(argv)
    manifest = None
    if args.get("source_file_manifest") and os.path.exists(args["source_file_manifest"]):
        with open(args["source_file_manifest"]) as f:
            manifest = {normalize(l.strip()) for l in f if l.strip()}
    filters = [re.compile(r) for r in args["filter_sources"]]

    lines = {}      # source -> {line: count}
    functions = {}  # source -> {name: [start_line, count]}
    for path in sorted(glob.glob(os.path.join(args["coverage_dir"], "**", "*.gcov.json.gz"),
                              recursive=True)):
        with gzip.open(path, "rt") as f:
            report = json.load(f)
        for entry in report.get("files", []):
            source = normalize(entry["file"])
            per_line = lines.setdefault(source, {})
            for line in entry.get("lines", []):
                n = line["line_number"]
                per_line[n] = per_line.get(n, 0) + line["count"]
            per_fn = functions.setdefault(source, {})
            for fn in entry.get("functions", []):
                name = fn["name"]  # mangled, as geninfo writes it: no commas for lcov to split on
                record = per_fn.setdefault(name, [fn["start_line"], 0])
                record[1] += fn["execution_count"]

    def keep(source):
        if any(r.match(source) for r in filters):
            return False
        return manifest is None or source in manifest

    with open(args["output_file"], "w") as out:
        for source in sorted(lines):
            if not keep(source):
                continue
            out.write("TN:\nSF:%s\n" % source)
            fns = functions.get(source, {})
            for name, (start, _) in sorted(fns.items(), key=lambda kv: kv[1][0]):
                out.write("FN:%d,%s\n" % (start, name))
            for name, (_, count) in sorted(fns.items(), key=lambda kv: kv[1][0]):
                out.write("FNDA:%d,%s\n" % (count, name))
            out.write("FNF:%d\nFNH:%d\n" % (len(fns), sum(1 for v in fns.values() if v[1] > 0)))
            per_line = lines[source]
            for n in sorted(per_line):
                out.write("DA:%d,%d\n" % (n, per_line[n]))
            out.write("LF:%d\nLH:%d\nend_of_record\n" % (
                len(per_line), sum(1 for c in per_line.values() if c > 0)))
        # Tracefiles another tool left (lcov's .dat) go in unchanged.
        for path in sorted(glob.glob(os.path.join(args["coverage_dir"], "**", "*.dat"),
                                  recursive=True)):
            if os.path.abspath(path) != os.path.abspath(args["output_file"]):
                with open(path) as f:
                    out.write(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
