#!/usr/bin/env python3
"""One JUnit test case as a whole XML file, for a lane script whose verdict is a single case
(ci/qemu/kmod_lane_debug.sh when the debug kernel is not cached, debug_lane_current_test.sh).

usage: junit_case.py XML SUITE CASE CLASS pass|skip MESSAGE
A skipped case carries MESSAGE as its reason (ci/test.sh lists it); every case carries it as its
output, escaped as tap_junit.py escapes a console (a character XML cannot hold as \\xNN), so the
file always parses. Exit 0, or 2 on a wrong status. Python 3 standard library only; tap_junit.py
must lie beside it.
"""
import sys

from tap_junit import esc


def main(argv):
    if len(argv) != 7 or argv[5] not in ("pass", "skip"):
        print("usage: junit_case.py XML SUITE CASE CLASS pass|skip MESSAGE", file=sys.stderr)
        return 2
    xml, suite, case, classname, status, msg = argv[1:]
    skip = status == "skip"
    with open(xml, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        f.write('<testsuites><testsuite name="%s" tests="1" failures="0" errors="0" skipped="%d">\n'
                % (esc(suite), skip))
        f.write('<testcase name="%s" classname="%s">%s<system-out>%s</system-out></testcase>\n'
                % (esc(case), esc(classname),
                   '<skipped message="%s"/>' % esc(msg) if skip else "", esc(msg)))
        f.write("</testsuite></testsuites>\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
