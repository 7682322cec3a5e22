#!/usr/bin/env python3
"""Several lanes' JUnit files as one (ci/qemu/kmod_lane_pair.sh: both kernels' lanes of a part).

usage: junit_merge.py OUT NAME=RC=XML...
OUT gets one <testsuites> holding every suite of each XML, in the order given. A lane whose XML is
missing or unreadable becomes a suite named NAME with one errored case, "lane", that says so; a
lane that exited non-zero (RC) while its suites report no failure or error gets that case too, so
the file never passes what the lane failed. Exit 0, 1 when a lane was turned into an error case,
2 on wrong arguments. Python 3 standard library only.
"""
import sys
import xml.etree.ElementTree as ET


def lane_error(name, message):
    suite = ET.Element("testsuite", name=name, tests="1", failures="0", errors="1", skipped="0")
    case = ET.SubElement(suite, "testcase", name="lane", classname=name)
    ET.SubElement(case, "error", message=message)
    return suite


def suites_of(name, rc, path):
    """The lane's suites, or one error suite, and whether it was turned into an error."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        return [lane_error(name, "exited %d without a readable JUnit file (%s); its log is in the test log"
                           % (rc, e))], True
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    bad = sum(int(s.get("failures", "0")) + int(s.get("errors", "0")) for s in suites)
    if rc != 0 and bad == 0:
        suites.append(lane_error(name, "exited %d though its JUnit file reports no failure; its log is in the test log"
                                 % rc))
        return suites, True
    return suites, False


def main(argv):
    if len(argv) < 3:
        print("usage: junit_merge.py OUT NAME=RC=XML...", file=sys.stderr)
        return 2
    out, status = ET.Element("testsuites"), 0
    for arg in argv[2:]:
        parts = arg.split("=", 2)
        if len(parts) != 3 or not parts[1].lstrip("-").isdigit():
            print("junit_merge.py: '%s' is not NAME=RC=XML (e.g. kmod_lane_6_1_engine=0=/tmp/x/test.xml)"
                  % arg, file=sys.stderr)
            return 2
        suites, turned = suites_of(parts[0], int(parts[1]), parts[2])
        out.extend(suites)
        status |= turned
    for k in ("tests", "failures", "errors", "skipped"):
        out.set(k, str(sum(int(s.get(k, "0")) for s in out)))
    with open(argv[1], "wb") as f:
        f.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
        f.write(ET.tostring(out))
        f.write(b"\n")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
