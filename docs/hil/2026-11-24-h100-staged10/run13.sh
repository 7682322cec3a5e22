#!/usr/bin/env bash
# Device run 13 (staged10): the fill frontier's fill unit by unit (StagedTrace's new unit times,
# staged_probe --dump's "its fill" line): when the frontier reaches 256 KiB, 1 MiB, a quarter,
# half and all of a copy, and how long a unit takes; issuing at once and with a 24 us lead, three
# times. Then staged_cuda_test's frontier variants, which now check the unit times against the
# DMAs' issue times.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u
for i in 1 2 3; do
  for cfg in "--frontier" "--frontier --frontier-lead-us 24"; do
    echo "== $i staged_probe --timeline --dump [$cfg]"
    timeout 100 $B/staged_probe --timeline --dump --sizes 4M,16M,64M --copies 9 $cfg 2>&1 |
      awk '/^== [0-9]/{print; p=0} /^  pinned  /{print substr($0,1,60)} /^  staged H2D/{print substr($0,1,60); p=1; next} p>=1 && /phases|last copy, its fill/{print; p++} p>2{p=0}'
  done
done
timeout 200 $B/staged_cuda_test --gtest_filter='*frontier*:*Frontier*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |error|Failure" | head -40
date -u
