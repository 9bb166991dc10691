#!/usr/bin/env bash
# The cluster path of `tessera sweep` on a real Slurm (issue 16), not a mock: installs Debian's slurm-wlm and
# munge when missing, writes a one-node Slurm for this machine under a temporary folder (its own munge key and
# socket, loopback ports nobody listens on, no cgroups), starts munged, slurmctld and slurmd, submits
# configs/sweeps/tiny-gemm.yaml in 3 shards with scripts/slurm-sweep.sh (sbatch --array, then the merge as a
# dependent job), waits for both, and compares the merged results.csv byte for byte with a single-machine
# `tessera sweep` of the same file. The daemons are stopped on every exit. Exit 0 identical, 1 not (or a job
# failed), 2 the set-up failed. Run as root (or with sudo for the install). Needs build/tessera (scripts/build.sh).
#
# usage: scripts/slurm-test.sh [SWEEP.yaml [SHARDS]]   (environment: TESSERA the binary, SLURM_TEST_TIMEOUT s)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sweep=$(realpath "${1:-$root/configs/sweeps/tiny-gemm.yaml}")
shards=${2:-3}
binary=$(realpath "${TESSERA:-$root/build/tessera}")
timeout_s=${SLURM_TEST_TIMEOUT:-300}
started=$SECONDS

say() { echo "slurm-test: $*" >&2; }
fail() {
  say "$*"
  exit 2
}
[[ -x $binary ]] || fail "$binary: no tessera binary (scripts/build.sh builds it)"

# --- Debian's packages, when missing ---------------------------------------------------------------------
packages=(slurm-wlm munge)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  # Packages' scripts must not start the system's own daemons (there may be no init system): policy-rc.d says no.
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
    "${sudo_cmd[@]}" chmod 755 "$policy"
    made_policy=1
  fi
  if ! apt-cache show slurm-wlm >/dev/null 2>&1; then "${sudo_cmd[@]}" apt-get update -qq; fi
  installed=0
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || installed=$?
  if ((made_policy)); then "${sudo_cmd[@]}" rm -f "$policy"; fi
  ((installed == 0)) || fail "apt-get install ${missing[*]} failed"
fi
[[ $(id -u) -eq 0 ]] || fail "run as root: slurmd launches the jobs as their user and needs root for it"

# --- a one-node cluster under a temporary folder ----------------------------------------------------------
work=$(mktemp -d /tmp/tessera-slurm.XXXXXX)
chmod 700 "$work"
pids=()
array= merge=
stop() {
  local status=$?
  if [[ -n $array && -n $(squeue -h -j "$array,$merge" -o %i 2>/dev/null) ]]; then
    # Jobs still queued or running are cancelled first (their slurmstepd would outlive slurmd).
    scancel "$array" "$merge" 2>/dev/null || true
    for _ in $(seq 100); do [[ -z $(squeue -h -j "$array,$merge" -o %i 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    # A daemon that ignores SIGTERM for 10 s is killed.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if ((status != 0)); then
    for log in "$work"/log/*.log; do
      [[ -f $log ]] && { say "--- $log (last lines)"; tail -n 15 "$log" >&2; }
    done
  fi
  rm -rf "$work"
  say "daemons stopped, $((SECONDS - started)) s in all"
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT TERM

mkdir -p "$work"/{munge,state,spool,log,run}
host=$(hostname -s)
cpus=$(nproc)
memory_mib=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
real_memory=$((memory_mib * 3 / 4)) # below the machine's: slurmd drains a node that claims more than it has
read -r ctld_port slurmd_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))')

# munge: a key of our own, a socket in the folder; runs as root, hence --force.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
socket=$work/munge/munge.socket
munged --foreground --force --key-file="$work/munge/munge.key" --socket="$socket" \
  --pid-file="$work/run/munged.pid" --seed-file="$work/munge/seed" --log-file="$work/log/munged.log" \
  >"$work/log/munged.out" 2>&1 &
pids+=($!)

export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=tessera-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_memory State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

for _ in $(seq 50); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || fail "munged did not start"
# In the foreground (-D) so that their pids are ours to stop; what they also print goes beside their logs.
slurmctld -D -i -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)

# The node idle: the daemons talk.
deadline=$((SECONDS + 60))
state=
until [[ $state == idle* ]]; do
  ((SECONDS < deadline)) || fail "node $host not idle after 60 s (state '${state:-none}')"
  sleep 1
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
done
say "slurm up: node $host idle ($cpus CPUs, RealMemory=$real_memory MiB), $((SECONDS - started)) s"

# --- the sweep on Slurm, and on this machine --------------------------------------------------------------
out=$work/slurm-out
submitted=$(cd "$work" && TESSERA=$binary "$root/scripts/slurm-sweep.sh" submit "$sweep" "$out" \
  --shards "$shards" --cpus-per-task=1)
say "$submitted"
read -r array merge < <(sed -E 's/^array job ([0-9]+) .*merge job ([0-9]+).*/\1 \2/' <<<"$submitted")

say "the same sweep on this machine"
"$binary" sweep "$sweep" --out "$work/local" --jobs "$cpus" --quiet || fail "local tessera sweep exited $?"

deadline=$((SECONDS + timeout_s))
while [[ -n $(squeue -h -j "$array,$merge" -o %i 2>/dev/null) ]]; do
  ((SECONDS < deadline)) || {
    squeue >&2 || true
    say "the jobs did not end within $timeout_s s"
    exit 1
  }
  sleep 1
done

# Each task's and the merge's end, as slurmctld recorded it (kept MinJobAge seconds).
result=0
while read -r line; do
  id=$(grep -o 'JobId=[0-9]*' <<<"$line" | head -1)
  task=$(grep -o 'ArrayTaskId=[0-9]*' <<<"$line" || echo "merge")
  job_state=$(grep -o 'JobState=[A-Z_]*' <<<"$line")
  exit_code=$(grep -o ' ExitCode=[0-9:]*' <<<"$line")
  say "$id $task $job_state$exit_code"
  [[ $job_state == JobState=COMPLETED ]] || result=1
done < <(scontrol -o show job "$array"; scontrol -o show job "$merge")
for log in "$out"/logs/slurm-*.out; do
  say "--- $(basename "$log")"
  sed 's/^/    /' "$log" >&2
done
((result == 0)) || { say "a Slurm job did not complete"; exit 1; }

if cmp "$work/local/results.csv" "$out/merged/results.csv"; then
  rows=$(($(wc -l <"$out/merged/results.csv") - 1))
  say "PASS: merged results.csv of $shards Slurm array tasks == the single-machine run's ($rows rows)"
else
  diff "$work/local/results.csv" "$out/merged/results.csv" | head -20 >&2 || true
  say "FAIL: merged results.csv differs from the single-machine run's"
  exit 1
fi
