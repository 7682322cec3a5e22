#!/usr/bin/env bash
# Device runs 5 and 6 (staged13), one command each on the warm machine of run 4: the staged
# stream at 16 MiB blocks flat out, three times (run 5 printed the logs' tails; run 6 kept the
# JSON, whose figures the report quotes).
P=.carry/perf; export LD_LIBRARY_PATH=$P/lib
for i in 1 2 3; do
  timeout 60 $P/resmem-gpu stream --backend cuda --block 16M --rate 0 --blocks 3000 --host file --json $OUT/stream-staged-$i.json > $OUT/stream-staged-$i.log 2>&1
  echo "rc=$?"
done
