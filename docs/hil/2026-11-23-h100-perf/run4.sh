#!/usr/bin/env bash
# Device run 4 (issue 11): registration in pieces, and hugetlb 2 MiB / 1 GiB pages.
B=$(dirname "$0")
exec > >(tee "$OUT/run4.log") 2>&1
date -u
R="$B/resmem-gpu bench --registration --backend cuda"
t0=$(date +%s); $R --reg-backings anon --reg-state untouched,touched --reg-sizes 64G --reg-pieces 0,1G,4G,16G --json $OUT/reg-pieces.json; echo "rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s); echo 33000 > /proc/sys/vm/nr_hugepages; echo "2 MiB pages reserved: $(cat /proc/sys/vm/nr_hugepages) in $(( $(date +%s) - t0 )) s"
t0=$(date +%s); $R --reg-backings hugetlb-2m --reg-sizes 1G,16G,64G --json $OUT/reg-hugetlb-2m.json; echo "rc=$? $(( $(date +%s) - t0 )) s"
echo 0 > /proc/sys/vm/nr_hugepages
g=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
t0=$(date +%s); echo 66 > $g; echo "1 GiB pages reserved: $(cat $g) in $(( $(date +%s) - t0 )) s"
t0=$(date +%s); $R --reg-backings hugetlb-1g --reg-sizes 1G,16G,64G --json $OUT/reg-hugetlb-1g.json; echo "rc=$? $(( $(date +%s) - t0 )) s"
echo 0 > $g
