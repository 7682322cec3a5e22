#!/usr/bin/env bash
# Device run 5 (staged11): dyn3 (dyn3.cu.txt) with waiting threads spinning on PAUSE (as the
# engine does) or on plain reloads, the source before each copy left as it was, behind 512 MiB
# of other memory, or after the caller slept 5 ms while the lanes spun. CLDEMOTE and
# non-temporal fills. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -H . /sys/module/kvm*/parameters/ple* 2>/dev/null | head; dmesg 2>/dev/null | grep -i -m3 "hypervisor\|kvm"
for round in 1 2; do
  for before in asleft idle evict; do
    for spin in pause nopause; do
      echo "== round $round, source $before, spin $spin"
      timeout 100 $B/dyn3 15 11 0,3 heap $before hostalloc $spin | grep -v smaps
    done
  done
done
date -u
