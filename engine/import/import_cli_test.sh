#!/usr/bin/env bash
# resmem import and resmem doctor --record as a user meets them: what they write loads and runs,
# bad input gets a named line and exit 2, never a scenario that does not load.
set -u
R=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$2      # mock/machine/corpus: real boot logs
CAPTURES=$3  # mock/machine/captures: real QEMU machines, one folder of sources each
source ci/checks.sh
T=${TEST_TMPDIR:-$(mktemp -d)}
fail() { bad "$1"; shift; printf '%s\n' "$@" | head -30; }
# expect NAME WANT_RC PATTERN -- CMD...: runs CMD, checks rc and that its output matches.
expect() {
  local name=$1 want=$2 pat=$3; shift 4
  out=$("$@" 2>&1); rc=$?
  # WANT_RC is a pattern ("[01]": the scenario loaded, whatever it found); PATTERN may span lines.
  if [[ ! $rc =~ ^$want$ ]] || ! grep -qzE -- "$pat" <<<"$out"; then fail "$name (rc $rc, want $want)" "$out"
  else ok "$name"; fi
}

# 1. A real log (QEMU q35, 5.10, mem=512M): the written scenario loads and passes on the sim.
expect real_log_import 0 "wrote $T/q35.toml" -- "$R" import "$DATA/07-qemu-q35-512m-5.10-mem512M.log" -o "$T/q35.toml"
expect real_log_runs   0 "1 checks passed"  -- "$R" run "$T/q35.toml"
grep -q 'expect.user_map' "$T/q35.toml" && ok real_log_expects_user_map || fail real_log_expects_user_map "$(cat "$T/q35.toml")"

# 2. Every log of the corpus: import writes a scenario, with no error in its report, that loads
#    (how it runs is the boot model's business: the corpus tests judge that).
n=0
for log in "$DATA"/*.log; do
  b=$(basename "$log" .log)
  n=$((n + 1))
  out=$("$R" import "$log" -o "$T/$b.toml" --report "$T/$b.report" 2>&1); rc=$?
  if [[ $rc != 0 ]] || grep -q ': error: ' "$T/$b.report"; then fail "import_$b (rc $rc)" "$out" "$(grep error "$T/$b.report")"; continue; fi
  out=$("$R" run "$T/$b.toml" 2>&1); rc=$?
  if [[ $rc -gt 1 ]] && ! grep -q "booting machine" <<<"$out"; then fail "loads_$b (rc $rc)" "$out"; fi
done
(( n >= 20 )) && ok "corpus: $n logs imported" || fail "corpus: only $n logs found in $DATA"
grep -q 'early_edits' "$T/25-lenovo-t14g1-6.1-efi-setup-data-memmap.toml" && ok efi_early_edits \
  || fail efi_early_edits "$(cat "$T/25-lenovo-t14g1-6.1-efi-setup-data-memmap.toml")"
grep -q 'old form (end exclusive)' "$T/01-ibm-nf6000r-2.6.9-mem512M.report" && ok old_form_report \
  || fail old_form_report "$(cat "$T/01-ibm-nf6000r-2.6.9-mem512M.report")"

# 2a. What the paste lacks, given on the command line: a log without a command line (06) boots
#     with --cmdline; a bad --arch or --kernel is refused with exit 2, naming the option.
expect given_cmdline 0 "wrote" -- "$R" import "$DATA/06-qemu-2g-3.x-mem1G.log" --cmdline "mem=1G" -o "$T/given.toml"
grep -q '^cmdline = "mem=1G"' "$T/given.toml" && ok given_cmdline_written || fail given_cmdline_written "$(cat "$T/given.toml")"
expect given_cmdline_runs 0 "1 checks passed" -- "$R" run "$T/given.toml"
expect without_cmdline_fails 1 "user map differs" -- "$R" run "$T/06-qemu-2g-3.x-mem1G.toml"
expect given_arch 0 "wrote" -- "$R" import "$DATA/03-ibm-numaq-2.5.64-mem48G.log" --arch i386 --kernel 2.5.64 -o "$T/given-arch.toml"
grep -q '^arch = "i386"' "$T/given-arch.toml" && ok given_arch_written || fail given_arch_written "$(cat "$T/given-arch.toml")"
expect bad_arch 2 "--arch: sparc not in \\{x86_64,i386\\}.*resmem import --help" -- "$R" import "$DATA/03-ibm-numaq-2.5.64-mem48G.log" --arch sparc
expect bad_kernel 2 "--kernel: .*'latest' is not a Linux version" -- "$R" import "$DATA/03-ibm-numaq-2.5.64-mem48G.log" --kernel latest

# 2b. The QEMU captures (every source of a real 6.1 boot, pasted together): the scenario runs and
#     the simulator prints the captured user map line for line.
for m in qemu-q35-2g qemu-q35-5g qemu-pc-2g qemu-pc-5g; do
  expect "capture_import_$m" 0 "wrote" -- "$R" import "$CAPTURES/$m"/*.txt -o "$T/cap-$m.toml" --report "$T/cap-$m.report"
  grep -q 'firmware map from dmesg' "$T/cap-$m.report" && ok "capture_map_$m" || fail "capture_map_$m" "$(tail -3 "$T/cap-$m.report")"
  expect "capture_runs_$m" 0 "1 checks passed" -- "$R" run "$T/cap-$m.toml"
done

# A folder of sources is read file by file, the same as naming each file; a scenario can name it.
expect capture_folder 0 "wrote" -- "$R" import "$CAPTURES/qemu-q35-2g" -o "$T/cap-folder.toml"
expect capture_folder_runs 0 "1 checks passed" -- "$R" run "$T/cap-folder.toml"
mkdir -p "$T/from"
cp "$CAPTURES/qemu-q35-5g"/*.txt "$T/from/"
mkdir -p "$T/from-scn"
cat >"$T/from-scn/s.toml" <<TOML
[scenario]
name = "from-a-folder"
[machine]
from = "../from"
[[step]]
do = "boot"
expect = { reservations = 2 }
TOML
expect from_folder_runs 0 "1 checks passed" -- "$R" run "$T/from-scn/s.toml"

# 3. Standard input, a machine file beside the scenario: both paths from where the command runs.
expect stdin_and_machine_file 0 "wrote $T/s.toml and $T/box.toml" -- \
  bash -c "\"$R\" import - -o \"$T/s.toml\" --machine-file \"$T/box.toml\" < \"$DATA/07-qemu-q35-512m-5.10-mem512M.log\""
grep -q '^from = "box.toml"' "$T/s.toml" && ok scenario_names_machine_file || fail scenario_names_machine_file "$(cat "$T/s.toml")"
expect machine_file_runs 0 "1 checks passed" -- "$R" run "$T/s.toml"
# Relative paths are the user's: `-o plan/s.toml --machine-file plan/box.toml` writes plan/box.toml
# (not plan/plan/box.toml), and the scenario names it relative to itself; elsewhere, ../ it.
mkdir -p "$T/rel/plan" "$T/rel/machines"
LOG07=$(readlink -f "$DATA/07-qemu-q35-512m-5.10-mem512M.log")
expect relative_machine_file 0 "wrote plan/s.toml and plan/box.toml" -- \
  bash -c "cd \"$T/rel\" && \"$R\" import - -o plan/s.toml --machine-file plan/box.toml < \"$LOG07\""
[[ -f "$T/rel/plan/box.toml" && ! -e "$T/rel/plan/plan" ]] && grep -q '^from = "box.toml"' "$T/rel/plan/s.toml" &&
  ok relative_machine_file_lands_where_named || fail relative_machine_file_lands_where_named "$(ls -R "$T/rel")"
expect relative_machine_file_elsewhere 0 "wrote plan/t.toml and machines/box.toml" -- \
  bash -c "cd \"$T/rel\" && \"$R\" import - -o plan/t.toml --machine-file machines/box.toml < \"$LOG07\""
grep -q '^from = "../machines/box.toml"' "$T/rel/plan/t.toml" && ok machine_file_named_from_the_scenario ||
  fail machine_file_named_from_the_scenario "$(grep from "$T/rel/plan/t.toml")"
expect relative_machine_file_runs 0 "1 checks passed" -- "$R" run "$T/rel/plan/t.toml"

# 4. A /sys/firmware/memmap folder, as the kernel lays it out.
mkdir -p "$T/memmap/0" "$T/memmap/1"
printf '0x0\n' >"$T/memmap/0/start"; printf '0x9fbff\n' >"$T/memmap/0/end"; printf 'System RAM\n' >"$T/memmap/0/type"
printf '0x100000\n' >"$T/memmap/1/start"; printf '0x7fffffff\n' >"$T/memmap/1/end"; printf 'System RAM\n' >"$T/memmap/1/type"
expect memmap_folder 0 "firmware map from /sys/firmware/memmap \(2 entries\)" -- "$R" import "$T/memmap" -o "$T/memmap.toml"
expect memmap_folder_runs 0 "1 checks passed" -- "$R" run "$T/memmap.toml"

# 5. Bad input: named lines, exit 2, no scenario written.
printf 'hello\nworld\n' >"$T/garbage.txt"
expect garbage 2 "garbage.txt:1: not used: .*no firmware memory map found" -- "$R" import "$T/garbage.txt" -o "$T/garbage.toml"
[[ ! -e "$T/garbage.toml" ]] && ok garbage_writes_nothing || fail garbage_writes_nothing
: >"$T/empty.txt"
expect empty 2 "empty.txt: warning: empty input" -- "$R" import "$T/empty.txt"
printf 'BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\nBIOS-e820: [mem 0x0000000000100000-0xffffffffffffffff] reserved\nBIOS-e820: [mem 0x0000000000100000-0x00000\n' >"$T/cut.txt"
expect bad_lines_named 2 "cut.txt:2: error: .*2\^64.*cut.txt:3: error: .*truncated.*no scenario written: 2 errors in the import \(.*cut.txt:2, .*cut.txt:3;" -- "$R" import "$T/cut.txt" -o "$T/cut.toml"
[[ ! -e "$T/cut.toml" ]] && ok bad_lines_write_nothing || fail bad_lines_write_nothing "$(cat "$T/cut.toml")"
long=$(head -c 4082 /dev/zero | tr '\0' 'x')
printf 'Command line: %s\nBIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n' "$long" >"$T/long.txt"
expect long_cmdline 0 "long.txt:1: warning: .*COMMAND_LINE_SIZE" -- "$R" import "$T/long.txt" -o "$T/long.toml"
expect long_cmdline_loads "[01]" "scenario cases" -- "$R" run "$T/long.toml"
expect no_files 2 "FILE is required" -- "$R" import
expect machine_file_needs_o 2 "--machine-file requires --output" -- "$R" import --machine-file m.toml "$T/cut.txt"
expect missing_file 2 "cannot read '$T/nope'" -- "$R" import "$T/nope"

# 6. doctor --record on simulated machines: the recording replays with the same findings.
for preset in seed000-workstation seed002-workstation qemu-q35-5g h100-host; do
  expect "record_$preset" "[01]" "recorded into $T/rec-$preset" -- "$R" doctor --machine "$preset" --record "$T/rec-$preset"
  expect "replay_$preset" 0 "1 checks passed" -- "$R" run "$T/rec-$preset/scenario.toml"
done
# ... and the recorded raw files are themselves an import input.
expect import_a_recording 0 "wrote" -- bash -c "cd \"$T/rec-seed000-workstation\" && \"$R\" import *.txt -o \"$T/reimport.toml\""
expect reimport_loads "[01]" "scenario cases" -- "$R" run "$T/reimport.toml"

# 7. doctor --machine takes a machine file or a paste as well as a preset.
expect doctor_machine_file 0 "platform sim:imported-stdin" -- "$R" doctor --machine "$T/box.toml"
expect doctor_paste "[01]" "platform sim:07-qemu" -- "$R" doctor --machine "$DATA/07-qemu-q35-512m-5.10-mem512M.log"
expect doctor_bad_paste 2 "garbage.txt:0: no firmware memory map" -- "$R" doctor --machine "$T/garbage.txt"

finish "import cli"
