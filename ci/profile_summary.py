#!/usr/bin/env python3
"""Where a `bazel test` lane's time went, from Bazel's JSON trace profile (--profile=FILE).

usage: ci/profile_summary.py LANE PROFILE.gz
Exit 0, or 2 when PROFILE.gz is not Bazel's profile (the reason on stderr). Tested by
//ci:profile_summary_test.

Prints one block: the command's span; per kind of action (Compiling, Linking, Testing, ...) how
many and their summed seconds (actions run side by side, so the sums exceed the span); when the
last compile ended; the longest compiles and tests. ci/test.sh prints it after each lane, and
docs/build.md "Where CI's time goes" quotes it. Python 3 standard library only.
"""
import collections
import gzip
import json
import sys


def read_events(path):
    """The profile's trace events, or None after saying on stderr why the file cannot be read."""
    try:
        with gzip.open(path) as f:
            return json.load(f)["traceEvents"]
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        print(f"profile_summary: cannot read {path} as Bazel's profile ({type(e).__name__}: {e}): give "
              "the gzipped JSON trace that `bazel test --profile=FILE.gz` wrote", file=sys.stderr)
        return None


def main(lane, path):
    events = read_events(path)
    if events is None:
        return 2
    stamps = [e["ts"] for e in events if "ts" in e]
    if not stamps:
        print(f"lane {lane}: the profile {path} holds no events")
        return 0
    t0 = min(stamps)
    end = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e)
    actions = [e for e in events if e.get("ph") == "X" and e.get("cat") == "action processing"]
    count, seconds = collections.Counter(), collections.Counter()
    for e in actions:
        kind = e["name"].split(" ")[0]
        count[kind] += 1
        seconds[kind] += e["dur"] / 1e6
    print(f"lane {lane}: where the time went (Bazel's profile {path}): span {(end - t0) / 1e6:.0f} s")
    print("  actions: " + ", ".join(f"{k} {count[k]} ({seconds[k]:.0f} s)" for k, _ in seconds.most_common(5)))
    compiles = [e for e in actions if e["name"].startswith("Compiling")]
    if compiles:
        last = max(e["ts"] + e["dur"] for e in compiles)
        print(f"  the last compile ended at {(last - t0) / 1e6:.0f} s")
    for kind in ("Compiling", "Testing"):
        longest = sorted((e for e in actions if e["name"].startswith(kind)), key=lambda e: -e["dur"])[:6]
        if longest:
            print(f"  longest {kind.lower()}: " + ", ".join(
                f"{e['name'].split(' ', 1)[1]} {e['dur'] / 1e6:.0f} s" for e in longest))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
