#!/usr/bin/env bash
# The resmem command line as a user meets it: exit codes and the words of its errors.
set -u
R=$1
fails=0
check() {  # check NAME WANT_RC GREP_PATTERN -- ARGS...   (WANT_RC may be 0|3)
  local name=$1 want=$2 pat=$3; shift 4
  out=$("$R" "$@" 2>&1); rc=$?
  if ! [[ $rc =~ ^($want)$ ]] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL $name: rc $rc (want $want), output:"; echo "$out" | head -20; fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
T=${TEST_TMPDIR:-$(mktemp -d)}
cat >"$T/bad.toml" <<'TOML'
[scenario]
name = "bad"
[machine]
preset = "seed000-workstation"
[[step]]
do = "mmap"
as = "r"
length = "12Q"
TOML
cat >"$T/gpu.toml" <<'TOML'
[scenario]
name = "gpu"
[machine]
preset = "h100-host"
cmdline = "memmap=1G$0x1000000000"
[driver]
mode = "pages"
[[step]]
do = "open"
[[step]]
do = "mmap"
as = "m"
length = "4M"
[[step]]
do = "register"
span = "m"
TOML
check help                0 "run .*scenario"          -- --help
check no_args             2 "usage: resmem"            --
check unknown_command     2 "unknown command 'fly'"    -- fly
check run_help            0 "--backend NAME"           -- run --help
check doctor_help         0 "--machine PRESET"         -- doctor --help
check unknown_option      2 "unknown option '--fast'"  -- run --fast x
check unknown_backend     2 "unknown backend 'warp'"   -- run --backend warp "$T/bad.toml"
check malformed_scenario  2 "bad.toml:8: key 'step.length'" -- run "$T/bad.toml"
check missing_file        2 "neither a scenario file"  -- run "$T/nope"
check bad_seed            2 "non-negative integer"     -- run --seed -1 "$T/bad.toml"
check doctor_sim          0 "reservation-not-write-back" -- doctor --machine seed000-workstation
check doctor_bad_preset   2 "unknown|no machine|preset" -- doctor --machine nope
check doctor_cmdline_only 2 "needs --machine"          -- doctor --cmdline mem=4G
# Where no GPU is, the real-GPU backends say so by name, case by case, and exit 3 (on a GPU host
# the case passes, exit 0).
check cuda_here           "0|3" "UNAVAILABLE +gpu 'cuda': no GPU|PASSED" -- run --backend cuda "$T/gpu.toml"
check kmod_cuda_here      "0|3" "UNAVAILABLE +region 'kmod': no /dev/resmem|UNAVAILABLE +gpu 'cuda'|PASSED" -- run --backend kmod+cuda "$T/gpu.toml"
echo "cli: $fails failed"
exit $((fails > 0))
