#!/usr/bin/env bash
# Device run 8 (staged10): run 7's dumps showed the lanes' fill beside DMAs that chase it at about
# the link's rate (16 MiB filled by 326-338 us), and at 65-71 GB/s with the late issue (DMAs read
# older lines). Larger leads (24, 48 us), the late issue without the driving lane's fill, and the
# 4 MiB copies cached instead of non-temporal. staged_probe --timeline, 15 copies, three rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u
for round in 1 2 3; do
  for cfg in "--frontier" "--frontier --frontier-lead-us 12" "--frontier --frontier-lead-us 24" "--frontier --frontier-lead-us 48" "--frontier --frontier-lead-us 12 --no-driver-fill" "--frontier --frontier-lead-us 12 --nt-fill-below 0"; do
    echo "== round $round [$cfg]"
    timeout 100 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 15 $cfg 2>&1 |
      awk '/^== [0-9]/{s=$2} /^  pinned  /{p=$3} /^  staged H2D/{t=$5; q=1; next}
           q==1 && /phases/{for (i=3; i<=NF; i++) { if ($i=="DMAs,") n=$(i-1); if ($i=="filled" && $(i-1)=="0") z=$(i+1); if ($i=="filled" && $(i-1)=="segment" && $(i-2)=="last") f=$(i+1) }
             printf "  %s MiB: %.1f%% of pinned (%s us, pinned %s; %s DMAs, first issued %s last %s)\n", s, 100*p/t, t, p, n, z, f; q=0}
           /MISMATCH/'
  done
done
date -u
