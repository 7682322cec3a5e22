#!/usr/bin/env bash
# A one-machine Slurm cluster for CI and for trying ci/slurm/submit.sh without a lab: munged,
# slurmctld and two slurmd on this host, one node advertising a GPU (Feature=gpu,h100), the other
# not (Feature=cpu). Everything lives in a private state folder (its own munge key and socket, its
# own ports, spool, logs and pid files), so it collides neither with a system Slurm nor with a
# second copy of itself. The recipe is FACTS.md's (2026-11-22: slurm-wlm 22.05 + munge on the
# build machine); the settings are Slurm's own (slurm.conf(5)).
#
#   ci/slurm/local-cluster.sh up DIR     start the daemons; prints `export SLURM_CONF=DIR/slurm.conf`
#   ci/slurm/local-cluster.sh down DIR   cancel its jobs, stop exactly the daemons `up` started
#                                        (DIR/pids) and any job step process holding files in DIR;
#                                        exit 1 if one survives
#   ci/slurm/local-cluster.sh procs DIR  list the processes that still belong to it (pid, command)
#   ci/slurm/local-cluster.sh alive PID  exit 0 when PID runs (a zombie does not)
# Needs root and Debian's slurm-wlm and munge (ci/setup.sh installs them).
# Exit: 0 done, 1 a daemon did not start or did not stop (its log is printed), 2 bad usage.
set -u
usage() { sed -n '9,16p' "$0" >&2; exit 2; }
[ $# = 2 ] || usage
CMD=$1
DIR=$(realpath -m "$2")

# The processes that belong to this cluster: the recorded daemons, and anything (slurmstepd, a
# job's process) whose command line or open files are under DIR (a shell that merely sits in DIR
# is not one of them).
procs() {
  python3 - "$DIR" $$ <<'PY'
import os, sys
root, me = sys.argv[1] + "/", {sys.argv[2], str(os.getpid()), str(os.getppid())}
for pid in filter(str.isdigit, os.listdir("/proc")):
    if pid in me:
        continue
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        paths = []
        fd_dir = f"/proc/{pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                paths.append(os.readlink(f"{fd_dir}/{fd}"))
            except OSError:
                pass
    except OSError:
        continue
    if root in cmd or any(p.startswith(root) for p in paths):
        print(pid, cmd[:100])
PY
}

# alive PID: the process exists and is not a zombie (a daemon that exited but whose parent,
# init here, has not reaped it yet has nothing left to stop).
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }

down() {
  [ -f "$DIR/slurm.conf" ] || { echo "local-cluster: no cluster in $DIR (no slurm.conf)" >&2; return 1; }
  export SLURM_CONF="$DIR/slurm.conf"
  # Cancel the jobs first so slurmd can end their steps cleanly (KillWait is 2 s here).
  if [ -f "$DIR/pids" ] && grep -q '^slurmctld ' "$DIR/pids"; then
    local ids
    mapfile -t ids < <(timeout 10 squeue -h -o %A 2>/dev/null)
    ((${#ids[@]})) && timeout 10 scancel --quiet --full "${ids[@]}" 2>/dev/null
    for _ in $(seq 20); do
      [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  local name pid left=()
  # Daemons in reverse order of start: slurmd, slurmctld, munged last (the others need it).
  if [ -f "$DIR/pids" ]; then
    while read -r name pid; do
      if alive "$pid"; then kill -TERM "$pid" && echo "local-cluster: stopping $name (pid $pid)"; fi
    done < <(tac "$DIR/pids")
    for _ in $(seq 50); do
      left=()
      while read -r name pid; do alive "$pid" && left+=("$name:$pid"); done < "$DIR/pids"
      ((${#left[@]} == 0)) && break
      sleep 0.2
    done
    for x in "${left[@]}"; do
      echo "local-cluster: ${x%%:*} (pid ${x##*:}) ignored SIGTERM for 10 s: SIGKILL" >&2
      kill -KILL "${x##*:}" 2>/dev/null
    done
  fi
  # Job steps of this cluster that outlived their slurmd (slurmstepd is not slurmd's child).
  local stray
  stray=$(procs | awk '{print $1}')
  for pid in $stray; do
    echo "local-cluster: stopping a leftover process of this cluster: $(procs | grep "^$pid ")" >&2
    kill -KILL "$pid" 2>/dev/null
  done
  sleep 0.2
  if [ -n "$(procs)" ]; then
    echo "local-cluster: still running after down:" >&2; procs >&2
    return 1
  fi
  echo "local-cluster: every daemon it started is gone ($(wc -l < "$DIR/pids" 2>/dev/null || echo 0) recorded)"
  return 0
}

free_ports() {  # free_ports N: N TCP ports nobody listens on now
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

show_log() { echo "--- $1 (last lines)" >&2; tail -n 15 "$1" >&2 2>/dev/null; }

up() {
  for b in munged slurmctld slurmd sbatch sinfo; do
    command -v $b > /dev/null || { echo "local-cluster: $b not found: apt-get install slurm-wlm munge (ci/setup.sh does)" >&2; return 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "local-cluster: needs root (slurmd runs jobs as their user; SlurmUser=root here)" >&2; return 1; }
  if [ -f "$DIR/pids" ] && [ -n "$(procs)" ]; then
    echo "local-cluster: $DIR already has a running cluster: run 'down $DIR' first" >&2; return 1
  fi
  mkdir -p "$DIR"/{munge,ctld,spool,log,run}
  chmod 700 "$DIR" "$DIR/munge"
  : > "$DIR/pids"
  # munge: a fresh key and a private socket; Slurm finds the socket through AuthInfo.
  head -c 1024 /dev/urandom > "$DIR/munge/munge.key"
  chmod 400 "$DIR/munge/munge.key"
  munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" < /dev/null > "$DIR/log/munged.out" 2>&1 ||
    { show_log "$DIR/log/munged.out"; show_log "$DIR/log/munged.log"; return 1; }
  for _ in $(seq 50); do [ -s "$DIR/munge/munged.pid" ] && break; sleep 0.1; done
  echo "munged $(cat "$DIR/munge/munged.pid")" >> "$DIR/pids"

  local host ctld_port cpu_port gpu_port
  host=$(hostname -s)
  read -r ctld_port cpu_port gpu_port < <(free_ports 3)
  # slurm.conf(5). Two NodeName lines on one host, told apart by their own Port (slurmd -N NAME).
  # cpu1 advertises Feature=cpu, gpu1 Feature=gpu,h100: `--constraint=gpu` can only land on gpu1.
  # proctrack/linuxproc and task/none need no cgroup set-up; jobcomp/filetxt keeps a line per
  # finished job (state, node, exit code) next to the logs.
  cat > "$DIR/slurm.conf" <<CONF
ClusterName=resmemci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Backfill every second, batch jobs scheduled at once: with Slurm's defaults (bf_interval=30,
# batch_sched_delay=3) the matrix's shards waited behind the HIL steps queued before them, which
# gpu1 takes one by one 3 s apart, and run 1 took 24.6 s; with these, 9.3 s (2026-11-29). A lab's
# cluster schedules as it is set up; what the test checks (placement, kills, the report) does not
# depend on the cadence.
SchedulerParameters=bf_interval=1,batch_sched_delay=0
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=600
GresTypes=gpu
SlurmdTimeout=60
InactiveLimit=0
# A job asking for more than the partition allows is refused at sbatch, not left pending.
EnforcePartLimits=ALL
NodeName=cpu1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$cpu_port CPUs=2 Feature=cpu State=UNKNOWN
NodeName=gpu1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$gpu_port CPUs=2 Feature=gpu,h100 Gres=gpu:h100:1 State=UNKNOWN
PartitionName=ci Nodes=cpu1,gpu1 Default=YES MaxTime=120 State=UP
CONF
  # Slurm's cgroup plugins read cgroup.conf even when unused; an empty one beside slurm.conf.
  : > "$DIR/cgroup.conf"
  # gpu1's one GPU as a GRES (gres.conf(5)), so that `--gres gpu:1` works too. This host has no
  # /dev/nvidia0: /dev/null stands in for the device file (slurmd 22.05 drains a gpu GRES with
  # Count and no File: "gres/gpu count reported lower than configured (0 < 1)"). Slurm then sets
  # CUDA_VISIBLE_DEVICES=0 in a job that asks for it, as it would on a lab's GPU host.
  echo "NodeName=gpu1 Name=gpu Type=h100 File=/dev/null" > "$DIR/gres.conf"
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -c -f "$SLURM_CONF" < /dev/null > "$DIR/log/slurmctld.out" 2>&1 ||
    { show_log "$DIR/log/slurmctld.out"; show_log "$DIR/log/slurmctld.log"; return 1; }
  for _ in $(seq 50); do [ -s "$DIR/run/slurmctld.pid" ] && break; sleep 0.1; done
  [ -s "$DIR/run/slurmctld.pid" ] || { show_log "$DIR/log/slurmctld.log"; return 1; }
  echo "slurmctld $(cat "$DIR/run/slurmctld.pid")" >> "$DIR/pids"
  local n
  for n in cpu1 gpu1; do
    slurmd -N "$n" -f "$SLURM_CONF" < /dev/null > "$DIR/log/slurmd-$n.out" 2>&1 ||
      { show_log "$DIR/log/slurmd-$n.out"; show_log "$DIR/log/slurmd-$n.log"; return 1; }
    for _ in $(seq 50); do [ -s "$DIR/run/slurmd-$n.pid" ] && break; sleep 0.1; done
    [ -s "$DIR/run/slurmd-$n.pid" ] || { show_log "$DIR/log/slurmd-$n.log"; return 1; }
    echo "slurmd-$n $(cat "$DIR/run/slurmd-$n.pid")" >> "$DIR/pids"
  done
  # Both nodes idle before anyone submits.
  local state=""
  for _ in $(seq 60); do
    state=$(sinfo -h -N -o '%N=%t' 2>/dev/null | sort | tr '\n' ' ')
    [ "$state" = "cpu1=idle gpu1=idle " ] && break
    sleep 0.5
  done
  if [ "$state" != "cpu1=idle gpu1=idle " ]; then
    echo "local-cluster: nodes not idle after 30 s: ${state:-no answer from slurmctld}" >&2
    show_log "$DIR/log/slurmctld.log"; return 1
  fi
  echo "local-cluster: up in $DIR: slurmctld port $ctld_port, cpu1 port $cpu_port (cpu), gpu1 port $gpu_port (gpu,h100; gres gpu:h100:1)"
  sed 's/^/local-cluster:   pid /' "$DIR/pids"
  echo "export SLURM_CONF=$SLURM_CONF"
}

case "$CMD" in
  up) up || { echo "local-cluster: up failed; stopping what it started" >&2; down >&2; exit 1; } ;;
  down) down ;;
  procs) procs ;;
  alive) alive "$2" ;;
  *) usage ;;
esac
