#!/usr/bin/env bash
# Device run 1 (staged11): dyn3 (dyn3.cu.txt; nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler
# -mavx2,-mclwb,-mclflushopt,-pthread -cudart static, outside Bazel): the fill frontier
# stand-alone (CLDEMOTE and non-temporal fills) with the source and the pinned ring on 4 KiB,
# transparent 2 MiB or hugetlb 2 MiB pages. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag) shmem $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled)"
echo 400 > /proc/sys/vm/nr_hugepages; echo "nr_hugepages $(cat /proc/sys/vm/nr_hugepages)"
for round in 1 2; do
  for pair in memfd:hostalloc heap:hostalloc nothp:hostalloc hugetlb:hostalloc memfd:hugetlb heap:thp hugetlb:hugetlb nothp:nothp; do
    echo "== round $round, source ${pair%%:*}, ring ${pair##*:}"
    timeout 100 $B/dyn3 15 11 0,3 ${pair%%:*} asleft ${pair##*:}
  done
done
date -u
