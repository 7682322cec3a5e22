#!/bin/bash
# `resmem doctor --record` on this very machine (the build machine or CI), then the recording
# replayed on the simulator: the same findings and the same usable RAM. A machine whose sources
# cannot be read says so and fails (no silent pass).
set -u
R=$1
T=${TEST_TMPDIR:-$(mktemp -d)}
out=$("$R" doctor --record "$T/rec" 2>&1); rc=$?
echo "$out" | tail -5
if [[ ! -f "$T/rec/scenario.toml" ]]; then
  echo "FAIL: no recording written (doctor exit $rc); this test needs /proc/iomem as root and /sys/firmware/memmap"
  exit 1
fi
echo "recorded: $(ls "$T/rec" | tr '\n' ' ')"
grep -E '^(kernel|phys_addr_bits) = ' "$T/rec/machine.toml"
"$R" run --verbose "$T/rec/scenario.toml"; rc=$?
if [[ $rc != 0 ]]; then echo "FAIL: the recording of this machine does not replay (exit $rc)"; exit 1; fi
echo "ok: this machine's recording replays on the simulator with the same findings"
