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

# Output files (engine/cli/output_files.h): checked before anything is read, run or measured
# (exit 2, naming the option, the reason and the way out), never one of the inputs or another
# output, written whole at the end: a run that fails leaves an existing file as it was.
unchanged() {  # unchanged NAME FILE TEXT: FILE still holds TEXT
  if [[ "$(cat "$2" 2>/dev/null)" == "$3" ]]; then echo "ok   $1"
  else echo "FAIL $1: $2 holds: $(head -c 200 "$2" 2>&1)"; fails=$((fails + 1)); fi
}
nothing_ran() {  # nothing_ran NAME WORD: the last check's output lacks WORD (refused before running)
  if grep -aq -- "$2" <<<"$out"; then echo "FAIL $1: it ran: $out" | head -5; fails=$((fails + 1)); else echo "ok   $1"; fi
}
absent() {  # absent NAME FILE
  if [[ ! -e "$2" ]]; then echo "ok   $1"; else echo "FAIL $1: $2 was written"; fails=$((fails + 1)); fi
}
O=$T/out; mkdir -p "$O"
cat >"$O/a.toml" <<'TOML'
[scenario]
name = "a"
kind = "check"
[machine]
preset = "qemu-q35-2g"
cmdline = "memmap=64M$0x40000000"
[[step]]
do = "open"
TOML
A=$(cat "$O/a.toml")
cat >"$O/paste.txt" <<'PASTE'
Linux version 6.1.0-test (gcc) #1 SMP
Command line: memmap=64M$0x40000000
BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable
BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable
PASTE
P=$(cat "$O/paste.txt")
echo previous >"$O/prev.xml"
check run_junit_kept_on_bad_input 2 "neither a scenario file" -- run --junit "$O/prev.xml" "$O/nope.toml"
unchanged run_junit_not_truncated "$O/prev.xml" previous
check run_junit_is_the_scenario 2 "--junit $O/a.toml is the same file as the input PATH $O/a.toml: writing it would overwrite that input; give --junit another file" -- run --junit "$O/a.toml" "$O/a.toml"
unchanged run_junit_scenario_kept "$O/a.toml" "$A"
check run_json_is_the_scenario 2 "--json $O/a.toml is the same file as the input PATH" -- run --json "$O/a.toml" "$O"
unchanged run_json_scenario_kept "$O/a.toml" "$A"
check run_json_and_junit_one_file 2 "--json $O/r.xml and --junit $O/r.xml are the same file" -- run --json "$O/r.xml" --junit "$O/r.xml" "$O/a.toml"
check run_json_unwritable_up_front 2 "resmem run: cannot write the JSON report --json $O/no/r.json: No such file or directory; give a file in a folder that exists and that you may write \(e.g. mkdir -p out, then --json out/r.json\)" -- run --junit "$O/prev.xml" --json "$O/no/r.json" "$O/a.toml"
nothing_ran run_json_unwritable_runs_nothing "PASSED"
unchanged run_json_unwritable_junit_kept "$O/prev.xml" previous
check run_json_a_folder 2 "cannot write the JSON report --json $O: Is a directory" -- run --json "$O" "$O/a.toml"
check run_reports_written 0 "1 checks passed" -- run --junit "$O/prev.xml" --json "$O/r.json" "$O/a.toml"
grep -q '<testsuites' "$O/prev.xml" && grep -q '"tool": "resmem"' "$O/r.json" && ! ls -a "$O" | grep -q resmem- &&
  echo "ok   run_reports_whole_no_temporary_left" || { echo "FAIL run_reports_whole_no_temporary_left: $(ls -a "$O")"; fails=$((fails + 1)); }
cp "$O/paste.txt" "$O/p1.txt"
check import_o_is_the_paste 2 "-o $O/p1.txt is the same file as the input FILE $O/p1.txt" -- import "$O/p1.txt" -o "$O/p1.txt"
unchanged import_o_paste_kept "$O/p1.txt" "$P"
check import_report_is_the_paste 2 "--report $O/p1.txt is the same file as the input FILE" -- import "$O/p1.txt" --report "$O/p1.txt" -o "$O/p1.toml"
unchanged import_report_paste_kept "$O/p1.txt" "$P"
check import_machine_file_is_o 2 "-o $O/x.toml and --machine-file $O/x.toml are the same file" -- import "$O/paste.txt" -o "$O/x.toml" --machine-file "$O/x.toml"
absent import_machine_file_is_o_writes_nothing "$O/x.toml"
check import_o_folder_missing 2 "cannot write the scenario -o $O/no/x.toml: No such file or directory" -- import "$O/paste.txt" -o "$O/no/x.toml" --machine-file "$O/mf.toml"
absent import_o_folder_missing_no_machine_file "$O/mf.toml"
check import_name_not_utf8 2 "--name: byte 4 \(0xff\) is not UTF-8.*resmem import --help" -- import "$O/paste.txt" --name $'bad\xffname'
check import_cmdline_control 2 "--cmdline: byte 7 \(0x01\) is a control character" -- import "$O/paste.txt" --cmdline $'mem=1G\x01'
check import_ok_with_machine_file 0 "wrote $O/s.toml and $O/mf.toml" -- import "$O/paste.txt" -o "$O/s.toml" --machine-file "$O/mf.toml"
printf 'BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\nBIOS-e820: [mem 0x0000000000200000-0x0000000000100000] usable\n' >"$O/bad.txt"
check import_errors_refused 2 "bad.txt:2: error: .*the end is not after the start.*no scenario written: 1 error in the import \($O/bad.txt:2; the report says why\)" -- import "$O/bad.txt" -o "$O/bad.toml"
absent import_errors_write_no_scenario "$O/bad.toml"
"$R" doctor --machine qemu-q35-2g --record "$O/rec" >/dev/null 2>&1
cp "$O/rec/machine.toml" "$O/box.toml"; B=$(cat "$O/box.toml")
check plan_json_is_the_machine 2 "--json $O/box.toml is the same file as the input --machine $O/box.toml" -- plan --machine "$O/box.toml" --json "$O/box.toml" 64M
unchanged plan_json_machine_kept "$O/box.toml" "$B"
check plan_json_unwritable 2 "resmem plan: cannot write the plan --json $O/no/p.json: No such file or directory" -- plan --machine qemu-q35-2g --json "$O/no/p.json" 64M
check plan_json_written 0 "memmap=64M" -- plan --machine qemu-q35-2g --json "$O/p.json" 64M
grep -q '"boot"' "$O/p.json" && echo "ok   plan_json_written_whole" || { echo "FAIL plan_json_written_whole"; fails=$((fails + 1)); }
check plan_empty_machine 2 "--machine: '' names no machine; give a preset" -- plan --machine "" --cmdline mem=1G 64M
check doctor_empty_machine 2 "--machine: '' names no machine; give a preset" -- doctor --machine "" --cmdline mem=1G
check doctor_json_unwritable 2 "resmem doctor: cannot write the doctor's report --json $O/no/d.json: No such file or directory" -- doctor --machine seed000-workstation --json "$O/no/d.json"
check doctor_unknown_region 2 "no region part 'bogus'" -- doctor --machine seed000-workstation --region bogus
check stream_json_unwritable 2 "cannot write the results --json $O/no/s.json: No such file or directory" -- stream --backend sim --blocks 5 --quiet --json "$O/no/s.json"
check bench_json_unwritable_up_front 2 "resmem bench: .*cannot write the results --json $O/no/b.json: No such file or directory" -- bench --backend sim --sizes 64K --passes 1 --paths pinned --overlap-blocks 0 --json "$O/no/b.json"
nothing_ran bench_json_unwritable_measures_nothing "pinned"
"$R" bench --backend sim --sizes 64K --passes 1 --paths pinned --overlap-blocks 0 --json "$O/b.json" >/dev/null 2>&1
BJ=$(cat "$O/b.json")
check bench_plot_is_the_replot 2 "--plot $O/b.json is the same file as the input --replot $O/b.json" -- bench --replot "$O/b.json" --plot "$O/b.json"
unchanged bench_replot_kept "$O/b.json" "$BJ"
check calibrate_out_unwritable_up_front 2 "cannot write the profile --out $O/no/p.json: No such file or directory" -- calibrate --backend sim --out "$O/no/p.json"
check calibrate_report_unwritable 2 "cannot write the fidelity report --report $O/no/r.md: No such file or directory" -- calibrate --compare "$3" --report "$O/no/r.md"
check calibrate_json_unwritable 2 "cannot write the fidelity report --json $O/no/r.json: No such file or directory" -- calibrate --compare "$3" --json "$O/no/r.json"
# A review's bad input: each used to pass (exit 0, nothing done or the wrong thing done), fail as
# "internal" (exit 4), or hide its problem behind another message. Exit 2, naming the option.
check plan_align_no_power_of_two 2 "resmem plan: --align 3 B is not a power of two of 4 KiB or more; give e.g. 2M or 1G" -- plan --machine seed000-workstation --align 3 --replace 1G
check plan_at_past_2_64 2 "--at 0xfffffffffffff000 for 1 GiB: the range would end at or past 2\^64" -- plan --machine seed000-workstation --at 0xfffffffffffff000 1G
for s in 0x -1M 0 16Q; do
  check "plan_size_after_dashes_$s" 2 "resmem plan: SIZE: '$s' is" -- plan --machine seed000-workstation -- "$s"
done
cp "$O/a.toml" "$O/b.toml"
check run_paths_after_dashes 0 "2 scenario cases" -- run "$O/a.toml" -- "$O/b.toml"
check unexpected_in_order 2 "not expected: x.xml --junk" -- doctor --machine qemu-q35-2g x.xml --junk
check run_json_empty 2 "resmem run: --json: '' names no file or folder; give a path, or leave the option out" -- run --json "" "$O/a.toml"
check run_json_equals_nothing 2 "resmem run: --json: '--json=' has nothing after the '=', so the next argument \($O/a.toml\) would be taken as its value" -- run --json= "$O/a.toml"
check run_junit_equals_nothing 2 "resmem run: --junit: '--junit=' has nothing after the '='" -- run "$O/a.toml" --junit=
check run_option_unknown_key 2 "--option: no part of a backend reads 'typo'; the keys are card_devices, .*gpudirect" -- run --option typo=1 "$O/a.toml"
check run_option_no_key 2 "--option: '=bar' names no key" -- run --option =bar "$O/a.toml"
check run_backend_part_twice 2 "backend part 'gpu' is given twice \(gpu=sim, then gpu=cuda\)" -- run --backend platform=sim,region=sim,gpu=sim,gpu=cuda "$O/a.toml"
check bench_size_past_the_gpu 2 "resmem bench: the largest of --sizes is 1 TiB, more than (the GPU's [0-9.]+ GiB of memory|this machine's [0-9.]+ [GT]iB of RAM)" -- bench --backend sim --sizes 1T --passes 1
check stream_ring_past_ram 2 "resmem stream: the ring, --block 1G x --slots 1048576, is 1 PiB, more than this machine's [0-9.]+ [GTP]iB of RAM \(MemTotal\); give fewer --slots" -- stream --backend sim --block 1G --slots 1048576 --quiet
check stream_blocks_past_ram 2 "resmem stream: the ring, --block 4K x --slots 8 and 40 B kept a block for --blocks 10000000000000, is 363.80 TiB, more than this machine's [0-9.]+ [GTP]iB of RAM \(MemTotal\); give fewer --blocks" -- stream --backend sim --block 4K --slots 8 --blocks 10000000000000 --quiet
check stream_card_faults_no_card 2 "--card-faults is the card's fault script, .*add --producer card" -- stream --backend sim --card-faults 'stall 50ms at 1s' --blocks 2 --quiet
check stream_no_blocks 2 "--blocks: '0' is less than 1" -- stream --backend sim --blocks 0 --quiet
check stream_rate_negative 2 "--rate: '-5' is not a number of 0 or more" -- stream --backend sim --rate -5
nothing_ran stream_rate_no_dbl_max "179769313486231"
check calibrate_no_status_code 2 "^resmem calibrate: cannot read profile '$O/nope.json': No such file or directory; check the path" -- calibrate --compare "$O/nope.json"
check bench_replot_a_folder 2 "^resmem bench: cannot read --replot '$O': Is a directory; give a file, not a folder" -- bench --backend sim --replot "$O" --plot "$O/n.png"
check bench_no_status_code 2 "^resmem bench: cannot read --replot '$O/nope.json': No such file or directory; check the path" -- bench --backend sim --replot "$O/nope.json" --plot "$O/n.png"
check fuse_mount_a_file 2 "--mount: $O/a.toml is a file, not a directory" -- fuse --machine seed000-workstation --mount "$O/a.toml"
mkdir -p "$O/rec2"; { echo "# the user's own"; cat "$O/box.toml"; } >"$O/rec2/machine.toml"; M=$(cat "$O/rec2/machine.toml")
check doctor_record_over_machine 2 "--record $O/rec2/machine.toml is the same file as the input --machine $O/rec2/machine.toml" -- doctor --machine "$O/rec2/machine.toml" --record "$O/rec2"
unchanged doctor_record_machine_kept "$O/rec2/machine.toml" "$M"
check doctor_record_and_json 2 "--json $O/rec2/scenario.toml and --record $O/rec2/scenario.toml are the same file" -- doctor --machine qemu-q35-2g --json "$O/rec2/scenario.toml" --record "$O/rec2"
absent doctor_record_and_json_write_nothing "$O/rec2/scenario.toml"
check doctor_record_a_file 2 "--record $O/a.toml is a file, not a folder" -- doctor --machine qemu-q35-2g --record "$O/a.toml"
# --record under a file: refused before the diagnosis (it was found only once all was read).
check doctor_record_under_a_file 2 "^resmem doctor: --record $O/a.toml/sub/rec cannot be made: $O/a.toml is a file, not a folder" -- doctor --machine qemu-q35-2g --record "$O/a.toml/sub/rec"
nothing_ran doctor_record_under_a_file_reads_nothing "MemTotal"
# A machine that names no kernel: its missing /proc/version is noted as that, not as a file the
# simulator lacks (the note listed /proc/version among those it serves).
check doctor_record_no_version 0 "record note: /proc/version not recorded: /proc/version: the simulated machine names no kernel version \(machine key kernel = " -- doctor --machine qemu-q35-2g --record "$O/rec3/deeper"
# The recording reads /proc/cmdline: no note that "the paste" has no command line.
nothing_ran doctor_record_has_its_cmdline "no command line"
# --plot: the data, the script and the picture, whatever the name (a quote in it once broke the
# script); a gnuplot that fails is exit 4 and leaves the earlier picture, and no file of its own.
P="$O/it's a plot"
if command -v gnuplot >/dev/null; then
  check bench_replot_draws 0 "plot $P.png" -- bench --replot "$O/b.json" --plot "$P.png"
  if [[ "$(head -c 4 "$P.png" | tail -c 3)" == PNG ]] && grep -q "^# H2D pinned" "$P.dat" &&
    grep -qF "'$O/it''s a plot.dat' index 0" "$P.gp"; then echo "ok   bench_replot_files"
  else echo "FAIL bench_replot_files: $(ls -l "$O")"; fails=$((fails + 1)); fi
else
  echo "FAIL bench_replot_draws: gnuplot is not on PATH here (ci/setup.sh installs gnuplot-nox)"; fails=$((fails + 1))
fi
mkdir -p "$O/fakebin" "$O/pl"
printf '#!/bin/sh\ncat >/dev/null\necho "fake gnuplot: no"\nexit 3\n' >"$O/fakebin/gnuplot"; chmod +x "$O/fakebin/gnuplot"
echo "the earlier plot" >"$O/pl/p.png"
PATH="$O/fakebin:$PATH" check bench_plot_gnuplot_fails 4 "resmem bench: drawing $O/pl/p.png from $O/pl/p.gp: gnuplot failed \(exit 3\)" -- bench --replot "$O/b.json" --plot "$O/pl/p.png"
unchanged bench_plot_gnuplot_fails_keeps_png "$O/pl/p.png" "the earlier plot"
if [[ "$(ls "$O/pl")" == "$(printf 'p.dat\np.gp\np.png')" ]]; then echo "ok   bench_plot_gnuplot_fails_leaves_no_file"
else echo "FAIL bench_plot_gnuplot_fails_leaves_no_file: $(ls "$O/pl")"; fails=$((fails + 1)); fi
# Files and folders this user may not read or write (root may do both: as root the commands run
# as nobody, through setpriv, from a copy of the binary in a folder nobody can reach).
skipped=0
if [[ $(id -u) != 0 ]] || command -v setpriv >/dev/null; then
  P=$(mktemp -d /tmp/resmem-cli-perm.XXXXXX); chmod 755 "$P"; trap 'chmod -R u+rwx "$P"; rm -rf "$P"' EXIT
  cp "$R" "$P/resmem"; chmod 755 "$P/resmem"
  AS=(); [[ $(id -u) != 0 ]] || AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  mkdir -p "$P/locked" "$P/w" "$P/shut" "$P/tree/sub"; chmod 555 "$P/locked"; chmod 777 "$P/w"
  # Mode 000: no reader but root, whoever owns them (the folders' owner could chmod them back).
  cp "$O/a.toml" "$P/secret.toml"; chmod 000 "$P/secret.toml"
  cp "$O/a.toml" "$P/shut/a.toml"; chmod 000 "$P/shut"
  cp "$O/a.toml" "$P/tree/a.toml"; cp "$O/a.toml" "$P/tree/sub/b.toml"; chmod 000 "$P/tree/sub"
  chmod 755 "$P/tree"; chmod 644 "$P/tree/a.toml"; cp "$O/a.toml" "$P/ok.toml"; chmod 644 "$P/ok.toml"
  RU=("${AS[@]}" "$P/resmem")
  perm() {  # perm NAME WANT_RC PATTERN -- ARGS...: check, as the user who may not
    local name=$1 want=$2 pat=$3; shift 4
    out=$("${RU[@]}" "$@" 2>&1); rc=$?
    if ! [[ $rc =~ ^($want)$ ]] || ! grep -qzE -- "$pat" <<<"$out"; then
      echo "FAIL $name: rc $rc (want $want), output:"; echo "$out" | head -20; fails=$((fails + 1))
    else echo "ok   $name"; fi
  }
  perm perm_scenario_unreadable 2 "cannot read scenario file '$P/secret.toml': Permission denied; make it readable" -- run "$P/secret.toml"
  perm perm_folder_unlistable 2 "cannot list the scenario folder '$P/shut' \(under '$P/shut'\): Permission denied; make it readable" -- run "$P/shut"
  perm perm_subfolder_unlistable 2 "cannot list the scenario folder '$P/tree/sub' \(under '$P/tree'\): Permission denied" -- run "$P/tree"
  perm perm_machine_unreadable 2 "cannot read machine file '$P/secret.toml': Permission denied" -- doctor --machine "$P/secret.toml"
  perm perm_paste_unreadable 2 "cannot read '$P/secret.toml': Permission denied" -- import "$P/secret.toml" -o "$P/w/out.toml"
  perm perm_json_folder_unwritable 2 "cannot write the JSON report --json $P/locked/r.json: Permission denied" -- run --json "$P/locked/r.json" "$P/ok.toml"
  perm perm_record_cannot_be_made 2 "--record $P/locked/new/rec cannot be made in $P/locked: Permission denied; give a folder you may write" -- doctor --machine qemu-q35-2g --record "$P/locked/new/rec"
  nothing_ran perm_record_reads_nothing "MemTotal"
else
  echo "SKIP perm_*: the permission cases need a user who may not read: this runs as root and setpriv is missing (util-linux)"
  skipped=7
fi
echo "cli: $fails failed, $skipped skipped"
exit $((fails > 0))
