#!/usr/bin/env bash
# Device run 4 (staged10): fillx (fillx.cc.txt, built on the build machine with
# g++ -O2 -mavx2 -pthread), the lanes' fill alone by copy method, 15 and 8 threads, warm and with
# 512 MiB dirtied before each copy. No GPU used.
B=$(dirname "$0")
exec > >(tee "$OUT/run4.log") 2>&1
date -u; grep -m1 "model name" /proc/cpuinfo; grep -m1 -o -w "cldemote\|avx512f\|movdir64b\|fsrm\|erms" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E -x "cldemote|avx512f|fsrm|erms|movdir64b" | tr '\n' ' '; echo
lscpu | grep -E "L1d|L2|L3|NUMA node\(s\)|Thread|Core|Socket"
for t in 15 8; do
  for ev in 0 512; do
    timeout 200 $B/fillx $t $ev 15
  done
done
date -u
