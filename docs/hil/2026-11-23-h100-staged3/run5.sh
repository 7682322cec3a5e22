#!/usr/bin/env bash
# Device run 5 (issue 11, 2026-11-23 night): nvbandwidth beside the interleaved bench; the staged
# curve 64 KiB .. 256 MiB both ways; D2H segment count and stream signals, alternated.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for b in 256 16; do
  $B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b $b -i 7 -j > $OUT/nvbw-$b.json 2>&1
  python3 -c "import json; d=json.load(open('$OUT/nvbw-$b.json'))['nvbandwidth']; print('nvbandwidth -b $b:', [(t['name'], t.get('sum')) for t in d['testcases']])" || tail -5 $OUT/nvbw-$b.json
done
S=64K,256K,1M,4M,16M,64M,256M
t0=$(date +%s)
$B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes $S --passes 15 --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench-default.json > $OUT/bench-default.log 2>&1
echo "bench default rc=$? $(( $(date +%s) - t0 )) s"; cat $OUT/bench-default.log
i=0
for cfg in "--min-segments-d2h 4" "--signals" "" "--min-segments-d2h 4" "--signals --min-segments-d2h 4" "" "--min-segments-d2h 2" "--min-segments-d2h 4"; do
  i=$((i+1))
  out=$(timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg --json $OUT/bench-v$i.json 2>&1)
  echo "== v$i staged $cfg"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
done
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/nvbw-256-after.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/nvbw-256-after.json'))['nvbandwidth']; print('nvbandwidth after -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
