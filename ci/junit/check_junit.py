#!/usr/bin/env python3
"""Checks JUnit XML files as GitLab and Jenkins read them.

usage: ci/junit/check_junit.py [--xsd FILE] JUNIT.xml...

1. Schema: xmllint --schema FILE (ci/junit/junit.xsd beside this script by default), the shape
   Jenkins' junit-10.xsd describes. xmllint comes with Debian's libxml2-utils (ci/setup.sh);
   without it the check fails and says so (no silent skip).
2. Counts: what the schema cannot say. Every testsuite's tests / failures / errors / skipped equal
   its testcases, its <failure>, <error> and <skipped> elements; the testsuites element's
   counts are the sums; a testcase carries at most one of skipped, failure, error.
Prints "ok FILE" or "FAIL FILE: why" per file. Exit 0 when all hold, 1 otherwise, 2 bad usage.
Python 3 standard library and xmllint only.
"""
import argparse
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("failures", "errors", "skipped")
TAG = {"failures": "failure", "errors": "error", "skipped": "skipped"}


def schema_problem(xsd, path):
    """None when xmllint finds `path` valid against `xsd`, else its complaint."""
    if shutil.which("xmllint") is None:
        return "no xmllint here: apt-get install libxml2-utils (ci/setup.sh installs it)"
    run = subprocess.run(["xmllint", "--noout", "--schema", xsd, path],
                         capture_output=True, text=True)
    return None if run.returncode == 0 else run.stderr.strip() or f"xmllint exit {run.returncode}"


def count_problems(path):
    """The count attributes that do not match the elements, as sentences."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    problems, totals = [], {"tests": 0, **{k: 0 for k in KINDS}}
    for s in suites:
        cases = s.findall("testcase")
        have = {"tests": len(cases), **{k: sum(len(c.findall(TAG[k])) for c in cases) for k in KINDS}}
        for k, n in have.items():
            totals[k] += n
            if s.get(k, "0" if k != "tests" else None) != str(n):
                problems.append(f"testsuite {s.get('name')!r}: {k}={s.get(k)!r}, has {n}")
        for c in cases:
            outcomes = [t for t in TAG.values() if c.find(t) is not None]
            if len(outcomes) > 1:
                problems.append(f"testcase {c.get('name')!r} is both {' and '.join(outcomes)}")
    if root.tag == "testsuites":
        for k, n in totals.items():
            if root.get(k) is not None and root.get(k) != str(n):
                problems.append(f"testsuites: {k}={root.get(k)!r}, suites sum to {n}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xsd", default=os.path.join(HERE, "junit.xsd"))
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    bad = 0
    for f in a.files:
        why = schema_problem(a.xsd, f)
        problems = [why] if why else count_problems(f)
        if problems:
            bad += 1
            print(f"FAIL {f}: " + "; ".join(problems))
        else:
            print(f"ok   {f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
