#!/usr/bin/env bash
# The resmem command line as a user meets it: exit codes and the words of its errors.
set -u
R=$1
fails=0
check() {  # check NAME WANT_RC GREP_PATTERN -- ARGS...   (WANT_RC may be 0|3; PATTERN may span lines)
  local name=$1 want=$2 pat=$3; shift 4
  out=$("$R" "$@" 2>&1); rc=$?
  if ! [[ $rc =~ ^($want)$ ]] || ! grep -qzE -- "$pat" <<<"$out"; then
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
check version             0 "^resmem [0-9]+\.[0-9]+"  -- --version
check no_args             2 "Usage: resmem"            --
check unknown_command     2 "unknown command 'fly'"    -- fly
check run_help            0 "--backend NAME=sim"       -- run --help
check doctor_help         0 "--machine PRESET"         -- doctor --help
# Every command's help comes from its definition: a usage line and its options.
for c in bench calibrate doctor fuse import plan run stream; do
  check "help_$c"         0 "Usage: resmem $c "        -- "$c" --help
done
# Bad input names the option and points at the command's --help, exit 2.
check unknown_option      2 "not expected: --fast.*resmem run --help" -- run --fast x
check missing_value       2 "--backend: 1 required NAME missing" -- run "$T/bad.toml" --backend
check unknown_backend     2 "unknown backend 'warp'"   -- run --backend warp "$T/bad.toml"
check bad_choice          2 "--mode: x not in \{pages,pfnmap\}" -- plan 4G --mode x
check out_of_range        2 "--dma-bits: Value 12 not in range 32 to 64" -- plan 4G --dma-bits 12
check bad_size            2 "SIZE: '12Q' is no size"   -- plan 12Q
check malformed_scenario  2 "bad.toml:8: key 'step.length'" -- run "$T/bad.toml"
check missing_file        2 "neither a scenario file"  -- run "$T/nope"
check no_paths            2 "PATH is required"         -- run
check bad_seed            2 "--seed: '-1' is not a whole number" -- run --seed -1 "$T/bad.toml"
check bad_backend_option  2 "--option: takes KEY=VALUE" -- run --option nokey "$T/bad.toml"
check doctor_sim          0 "reservation-not-write-back" -- doctor --machine seed000-workstation
check doctor_bad_preset   2 "unknown|no machine|preset" -- doctor --machine nope
check doctor_cmdline_only 2 "--cmdline requires --machine" -- doctor --cmdline mem=4G
check doctor_extra        2 "not expected: extra"      -- doctor extra
# --module: a file's signature (a fixture signed as dkms signs), and what it refuses.
check doctor_module       "0|1" "module: .*signed_issuer.ko: signed by 'DKMS module signing key' \(sha256\)" -- doctor --module "$2"
check doctor_module_none  2 "--module /nonexistent.ko: no such file" -- doctor --module /nonexistent.ko
check doctor_module_sim   2 "excludes --module" -- doctor --module "$2" --machine seed000-workstation
# Options after the paths (the replay line's order), and options before a `--` (plan's SIZE after).
check options_after_paths 2 "bad.toml:8"               -- run "$T/bad.toml" --backend sim --seed 7
check plan_after_dashes   0 "memmap=64G\\\$4G"      -- plan --machine seed000-workstation --replace --at 4G -- 64G
# Where no GPU is, the real-GPU backends say so by name, case by case, and exit 3 (on a GPU host
# the case passes, exit 0).
check cuda_here           "0|3" "UNAVAILABLE +gpu 'cuda': no GPU|PASSED" -- run --backend cuda "$T/gpu.toml"
check kmod_cuda_here      "0|3" "UNAVAILABLE +region 'kmod': no /dev/resmem|UNAVAILABLE +gpu 'cuda'|PASSED" -- run --backend kmod+cuda "$T/gpu.toml"
echo "cli: $fails failed"
exit $((fails > 0))
