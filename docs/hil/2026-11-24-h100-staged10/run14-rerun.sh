#!/usr/bin/env bash
# After run 14 (staged10): its three failed zero-copy checks, three times more on that machine
# (first command, with the GPU's clocks and link after it), then on the machine the next call got,
# this tree's resmem against 1b9b758's (built on the build machine, before the trace change),
# twice each (second command). run14-rerun.log holds what the two calls printed.
export LD_LIBRARY_PATH=.carry/perf/lib
F="scenarios/seed001/mapped_driver_context_maphost.toml scenarios/seed001/mapped_runtime_r580.toml scenarios/seed001/zero_copy_registered_mapped.toml"
# call 1
for i in 1 2 3; do .carry/perf/resmem run --backend cuda $F 2>&1 | grep -E "cases|FAILED" | cut -c1-200; done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current,temperature.gpu,power.draw --format=csv
# call 2
for i in 1 2; do for b in resmem-1b9b758 resmem; do echo "== $b"; .carry/perf/$b run --backend cuda $F 2>&1 | grep -E "cases|zero_copy" | grep -oE "^seed001-[a-z0-9-]+|[A-Z]+ +zero_copy: [0-9.]+ MB/s|mbps [0-9.e+]+|[0-9]+ failed" | paste -sd' '; done; done
