#!/usr/bin/env bash
# Device run 3 (issue 11): cudaHostRegister time per GiB, 4 KiB / THP / shmem, touched or not,
# up to the largest range this 128 GiB host allows.
B=$(dirname "$0")
exec > >(tee "$OUT/run3.log") 2>&1
date -u; grep -E "MemTotal|MemFree|Hugepagesize" /proc/meminfo; cat /sys/kernel/mm/transparent_hugepage/enabled
R="$B/resmem-gpu bench --registration --backend cuda"
t0=$(date +%s); $R --reg-backings anon,anon-thp,memfd --reg-sizes 1G,16G,64G --json $OUT/reg-main.json; echo "rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s); $R --reg-backings anon --reg-sizes 100G --json $OUT/reg-largest.json; echo "rc=$? $(( $(date +%s) - t0 )) s"
