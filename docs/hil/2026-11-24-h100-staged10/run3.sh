#!/usr/bin/env bash
# Device run 3 (staged10): where bench's staged spread comes from. run2 saw staged H2D 256 MiB
# read 38-96% of pinned from one config to the next while pinned stayed at 54.5-55.0 GB/s.
# The guest's steal time (/proc/stat, per vCPU) around each bench run, and bench with 16, 12
# and 8 lanes (--warm-cells --frontier), three rounds alternated.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
steal() { awk '/^cpu /{print $9}' /proc/stat; }  # USER_HZ ticks (1/100 s) stolen, all vCPUs
for round in 1 2 3; do
  for lanes in 16 12 8; do
    s0=$(steal); t0=$(date +%s.%N)
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M,256M --passes 9 --overlap-blocks 0 --warm-cells --frontier --lanes $lanes > /tmp/bench.log 2>&1
    rc=$?; s1=$(steal); t1=$(date +%s.%N)
    echo "== round $round lanes $lanes rc=$rc: $(awk -v a=$s0 -v b=$s1 -v t=$t0 -v u=$t1 'BEGIN{printf "%.2f s stolen of %.1f s x 16 vCPUs", (b-a)/100, u-t}')"
    awk '($1=="staged") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/' /tmp/bench.log | head -12
  done
done
echo "== steal per vCPU since boot (ticks), uptime $(cut -d' ' -f1 /proc/uptime) s"
awk '/^cpu[0-9]/{printf "%s:%s ", $1, $9} END{print ""}' /proc/stat
date -u
