#!/usr/bin/env bash
# The kernel lane's two parts per kernel (ci/qemu/BUILD, kmod_lane.sh --part driver|engine):
#  1. the driver part's inputs hold nothing of engine/ or scenarios/ (Bazel's own dependency graph
#     of :kmod_lane_driver_files, a genquery), so a change to the engine or to a scenario file
#     leaves that part's result cached;
#  2. ENGINE_CASES (kmod_lane.sh) names exactly the guest cases that run the engine: every case of
#     guest_init.sh whose command runs the static resmem (directly, or through seed003,
#     card_scenario, doctor_iommu*, sig_doctor) or card_guest (card_guest_run) matches it, and no
#     other case does; a case left out would fail in the driver part for want of /resmem, or run
#     in neither part.
# Usage: kmod_lane_parts_test.sh DRIVER_DEPS KMOD_LANE_SH GUEST_INIT_SH
set -u
deps=$1 lane=$2 init=$3
source ci/checks.sh

if grep -q '^//kmod:' "$deps" && grep -q '^//ci/qemu:resmem_guest$' "$deps"; then
	ok "the driver part's dependency graph was read ($(wc -l <"$deps") targets)"
else
	bad "the genquery output $deps does not list //kmod and //ci/qemu:resmem_guest: not the driver part's graph"
fi
for pkg in engine scenarios; do
	if grep "^//$pkg[/:]" "$deps" >/dev/null; then
		bad "the driver part depends on //$pkg: $(grep "^//$pkg[/:]" "$deps" | head -3 | tr '\n' ' ')"
	else
		ok "nothing of //$pkg in the driver part's inputs"
	fi
done

patterns=$(sed -n "s/^ENGINE_CASES='\(.*\)'$/\1/p" "$lane")
[[ -n $patterns ]] || { bad "no ENGINE_CASES='...' line in $lane"; echo "$fails failed"; exit 1; }
python3 - "$init" "$patterns" <<'PY' || fails=$((fails + 1))
import fnmatch, re, sys
init, patterns = sys.argv[1], sys.argv[2].split(",")
# The engine's programs, and the guest_init functions that run them.
engine_cmd = re.compile(r"^(/resmem|seed003|card_scenario|card_guest_run|doctor_iommu\w*|sig_doctor)$")
case = re.compile(r"(?:^|&& |; |\s)t \"?([A-Za-z0-9_${}%.]+)\"? +(\S+)")
bad, n = 0, 0
for lineno, line in enumerate(open(init), 1):
    if line.lstrip().startswith("#"):
        continue
    for name, cmd in case.findall(line):
        n += 1
        name = re.sub(r"\$\{[^}]*\}", "x", name)  # "scenario_kmod_${s%.toml}" -> scenario_kmod_x
        engine = bool(engine_cmd.match(cmd))
        named = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        if engine != named:
            bad += 1
            print("FAIL guest_init.sh:%d: case %s runs %s, %s" % (lineno, name, cmd,
                  "an engine program, but ENGINE_CASES does not name it" if engine
                  else "no engine program, but ENGINE_CASES names it"))
# More than 100 cases read (125 on 2026-11-29): the pattern above still parses guest_init.sh.
print("%s %d guest cases read, each in the part its command belongs to (ENGINE_CASES %s)"
      % ("ok  " if bad == 0 and n > 100 else "FAIL", n, ",".join(patterns)))
sys.exit(1 if bad or n <= 100 else 0)
PY
finish "kmod_lane_parts_test"
