#!/usr/bin/env python3
"""The kernel lane's verdict (ci/qemu/kmod_lane.sh, step 6): the guest's TAP on the console as
JUnit XML, one testcase per case, plus the cases the lane derives from the console.

usage: tap_junit.py CONSOLE XML QEMU_RC PARITY_GOLDEN WORK ONLY OUTDIR BOOTS HOST_CASES LANE KVER
  CONSOLE        the boots' consoles, one after the other (guest_init.sh prints TAP on it)
  XML            the JUnit file written (Bazel's XML_OUTPUT_FILE)
  QEMU_RC        the first boot's exit status (named when a boot printed no plan)
  PARITY_GOLDEN  mock/parity/golden/kmod.txt: each live parity transcript must equal it
  WORK, OUTDIR   where the live transcripts are kept (OUTDIR: Bazel's undeclared outputs; may be '')
  ONLY           RESMEM_ONLY ('' for every case)
  BOOTS          how many boots ran: each must have printed its plan ("1..N")
  HOST_CASES     the host's own cases (the feature probes), tab-separated: ok|not ok, name, detail
  LANE, KVER     the JUnit suite's name and the kernel's version
Rules read from the console, each in one place below:
  "ok N - NAME", "not ok N - NAME", "... # SKIP REASON"   a case (a skip passes, with its reason)
  "# TEXT" before a case line                            that case's diagnostics; "# time S s" its time
  "1..N"                                                 one boot's plan
  "# parity-MODE| LINE"                                  the parity transcript of device MODE
  "EDU: clamping DMA"                                    QEMU's edu wrote to a clamped address
Exit 0 when every case passed and every boot printed a plan that its cases match; else 1.
Tested by //ci/qemu:tap_junit_test. Python 3 standard library only.
"""
import difflib
import html
import os
import re
import sys

# Transcript name -> the mode and cache its device was loaded with (guest_init.sh).
PARITY_DEVICES = {"pfnmap": ("pfnmap", "wb"), "pages": ("pages", "wb"), "wc": ("pfnmap", "wc"),
                  "uc": ("pfnmap", "uc")}


class Console:
    """What the console says, read once: the cases in order (name, passed, diagnostics), the
    skipped cases' reasons, each boot's plan, each parity device's transcript and QEMU's edu
    clamping lines."""

    def __init__(self, path):
        self.cases, self.plans, self.skipped, self.clamped = [], [], {}, []
        self.parity = {k: [] for k in PARITY_DEVICES}
        diag = []
        for line in open(path, errors="replace"):
            line = line.rstrip("\n")
            if "EDU: clamping" in line:
                self.clamped.append(line)
            m = re.match(r"^# parity-(pfnmap|pages|wc|uc)\| (.*)$", line)
            if m:
                self.parity[m.group(1)].append(m.group(2))
            m = re.match(r"^(not )?ok (\d+) - (\S+)(?: # SKIP (.*))?", line)
            if m:
                if m.group(4):
                    self.skipped[m.group(3)] = m.group(4)
                self.cases.append((m.group(3), m.group(1) is None, diag))
                diag = []
            elif re.match(r"^1\.\.(\d+)$", line):
                self.plans.append(int(line[3:]))  # one plan per boot
            elif line.startswith("# "):
                diag.append(line[2:])


def as_golden_device(line, mode, cache):
    """A live transcript line as the golden device's (pfnmap, wb): every mode and cache answers
    alike, and only ioctl_info names them; it must name the device's own."""
    if not line.startswith("ioctl_info: "):
        return line
    own = "mode=%s cache=%s " % (mode, cache)
    return line.replace(own, "mode=pfnmap cache=wb ") if own in line else line + "  <- expected " + own.strip()


def parity_cases(console, golden_path, only, dirs):
    """The device-parity transcripts (mock/parity, docs/parity.md): the live module's must equal
    the golden file that //mock/parity:parity_test diffs the FUSE device and the sim driver
    against. Each transcript is kept in `dirs`."""
    golden = [l.rstrip("\n") for l in open(golden_path) if l.strip() and not l.startswith("#")]
    cases = []
    for mode in PARITY_DEVICES:
        if only and only != "parity_probe_" + mode:
            continue
        raw = console.parity[mode]
        live = [as_golden_device(l, *PARITY_DEVICES[mode]) for l in raw]
        for d in dirs:
            with open(os.path.join(d, "kmod_parity_%s.txt" % mode), "w") as f:
                f.write("".join(l + "\n" for l in raw))
        diff = list(difflib.unified_diff(golden, live, "mock/parity/golden/kmod.txt",
                                         "live module /dev/resmem (%s)" % mode, lineterm="", n=0))
        print("kmod-lane: parity transcript %s: %d lines, diff against the golden file: %d lines"
              % (mode, len(live), len(diff)))
        for d in diff:
            print("kmod-lane:   " + d)
        detail = ["%d lines; diff against mock/parity/golden/kmod.txt:" % len(live)] + diff
        if not live:
            detail.append("no transcript on the console (the probe did not run)")
        cases.append(("parity_transcript_%s_matches_golden" % mode, bool(live) and not diff, detail))
    if console.parity["pfnmap"]:
        print("kmod-lane: to accept the live transcript as the new golden file: cp %s mock/parity/golden/kmod.txt"
              % os.path.join(dirs[-1], "kmod_parity_pfnmap.txt"))
    return cases


def edu_clamp_case(console):
    """QEMU's edu prints "EDU: clamping DMA A to B!" on its stdout (this console) when an address
    exceeds its dma_mask and it writes to A & mask instead (hw/misc/edu.c edu_clamp_addr): the
    silent misdirected write that the driver's mask check exists to prevent. None may appear."""
    if not any(c[0].startswith("edu_") for c in console.cases):
        return []
    return [("edu_device_never_clamped_an_address", not console.clamped,
             console.clamped or ["no 'EDU: clamping DMA' line from QEMU on the console"])]


def plan_problems(console, boots, qrc):
    """The lane's own errors: a boot without its plan, or plans that the cases do not match."""
    if len(console.plans) != boots:
        return ["%d of %d guest boots printed their TAP plan (the others crashed, hung or timed out; qemu exit %d)"
                % (len(console.plans), boots, qrc)]
    if sum(console.plans) != len(console.cases):
        return ["plan says %d cases, console shows %d" % (sum(console.plans), len(console.cases))]
    return []


def host_cases(path):
    """The host's own cases (the feature probes), after the guest's."""
    cases = []
    for line in open(path):
        status, name, what = line.rstrip("\n").split("\t", 2)
        cases.append((name, status == "ok", [what]))
    return cases


def case_time(d):
    """A case's time in the guest, from its `# time N s` line (guest_init.sh tap()), or None."""
    times = [float(t.group(1)) for t in (re.match(r"^time (\d+\.\d+) s$", l) for l in d) if t]
    return times[-1] if times else None


# Characters XML 1.0 does not allow, even escaped: the C0 controls but tab, newline and carriage
# return. A console carries them (a firmware's ESC sequences, a garbled line), and one of them in
# a case's diagnostics would leave the whole file unreadable.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def esc(text):
    """text escaped for XML, each character XML cannot hold written as \\xNN."""
    return html.escape(NOT_XML.sub(lambda m: "\\x%02x" % ord(m.group()), text))


def write_junit(xml, lane, kver, cases, skipped, problems):
    failed = [c for c in cases if not c[1]]
    with open(xml, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        f.write('<testsuites><testsuite name="%s" tests="%d" failures="%d" errors="%d" skipped="%d">\n'
                % (lane, len(cases), len(failed), len(problems), len(skipped)))
        f.write('<properties><property name="kernel" value="%s"/></properties>\n' % esc(kver))
        for name, ok, d in cases:
            t = case_time(d)
            f.write('<testcase name="%s" classname="%s"%s>' % (esc(name), lane,
                    ' time="%.2f"' % t if t is not None else ""))
            if not ok:
                f.write('<failure message="%s">%s</failure>' % (esc(name), esc("\n".join(d))))
            elif name in skipped:
                f.write('<skipped message="%s"/>' % esc(skipped[name]))
            f.write('<system-out>%s</system-out></testcase>\n' % esc("\n".join(d)))
        for p in problems:
            f.write('<testcase name="lane" classname="%s"><error message="%s"/></testcase>\n' % (lane, esc(p)))
        f.write("</testsuite></testsuites>\n")


def print_summary(lane, kver, cases, skipped, problems):
    failed = [c for c in cases if not c[1]]
    print("kmod-lane: %s (kernel %s): %d cases, %d failed, %d skipped as not applicable%s"
          % (lane, kver, len(cases), len(failed), len(skipped), "; " + "; ".join(problems) if problems else ""))
    timed = [(name, t) for name, t in ((name, case_time(d)) for name, _, d in cases) if t is not None]
    slowest = sorted(timed, key=lambda nt: -nt[1])[:8]
    print("kmod-lane: guest cases took %.0f s in all; the slowest: %s"
          % (sum(t for _, t in timed), ", ".join("%s %.1f s" % nt for nt in slowest)))
    for name, ok, _ in cases:
        print("kmod-lane:   %s %s%s" % ("PASS" if ok and name not in skipped else "SKIP" if ok else "FAIL", name,
                                       ": " + skipped[name] if ok and name in skipped else ""))


def main(argv):
    if len(argv) != 11:
        sys.exit(__doc__)
    console_path, xml, qrc, golden, work, only, outdir, boots, host_path, lane, kver = argv
    console = Console(console_path)
    problems = plan_problems(console, int(boots), int(qrc))
    cases = list(console.cases)
    cases += parity_cases(console, golden, only, [work] + ([outdir] if outdir else []))
    cases += edu_clamp_case(console)
    cases += host_cases(host_path)
    write_junit(xml, lane, kver, cases, console.skipped, problems)
    print_summary(lane, kver, cases, console.skipped, problems)
    return 1 if problems or any(not c[1] for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
