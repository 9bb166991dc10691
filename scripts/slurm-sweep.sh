#!/usr/bin/env bash
# A tessera sweep on a Slurm cluster: one job-array task per shard, then a merge (issue 16).
#
# Submit (from the tessera checkout, on a login node; OUT must be on a file system every node sees):
#   scripts/slurm-sweep.sh submit SWEEP.yaml OUT --shards N [sbatch options, e.g. --cpus-per-task=8 -p batch]
# It runs, and prints the two job ids:
#   sbatch --array=0-(N-1) [options] scripts/slurm-sweep.sh shard SWEEP.yaml OUT
#   sbatch --dependency=afterany:<array job> [options] scripts/slurm-sweep.sh merge OUT
# Array task i runs `tessera sweep SWEEP.yaml --out OUT/shard-i --shard i/N --jobs <the task's CPUs>` (N is the
# array's task count, SLURM_ARRAY_TASK_COUNT; the CPUs SLURM_CPUS_PER_TASK, else the CPUs Slurm gave the job on
# the node); the merge job runs `tessera sweep-merge OUT/shard-* --out OUT/merged` (OUT/merged/results.csv, byte
# for byte a single machine's; sweep-merge writes into a new folder). Slurm's logs go to OUT/logs. The merge
# waits for every task whatever its outcome (afterany) and refuses shards that did not finish: then re-submit
# the same command, each shard resumes where it stopped.
#
# Either step can be run by hand instead, as sbatch would (e.g. without the dependent job):
#   sbatch --array=0-3 --cpus-per-task=8 scripts/slurm-sweep.sh shard configs/sweeps/pe-vs-sram.yaml /scratch/pe
#   build/tessera sweep-merge /scratch/pe/shard-* --out /scratch/pe/merged
#
# The binary: $TESSERA, else build/tessera of the checkout this script is in (`submit` exports the absolute path
# to the jobs: sbatch runs a copy of this script from its spool folder). A task's exit status is tessera
# sweep's: 0 every job ran and passed, 1 some jobs failed or a numerics check failed (results.csv says which),
# 2 a bad sweep file or option.
#SBATCH --job-name=tessera-sweep
#SBATCH --output=slurm-%x-%A_%a.out
set -euo pipefail

usage() {
  sed -n '2,/^#SBATCH/p' "$0" | grep -v '^#SBATCH' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "slurm-sweep: $*" >&2
  exit 2
}

# The checkout's binary when run from it; inside a job only $TESSERA is known for sure.
tessera_binary() {
  if [[ -n ${TESSERA:-} ]]; then
    echo "$TESSERA"
  else
    echo "$(cd "$(dirname "$0")/.." && pwd)/build/tessera"
  fi
}

absolute() { # a path as seen from here, made absolute (the jobs may start elsewhere)
  case $1 in
  /*) echo "$1" ;;
  *) echo "$PWD/$1" ;;
  esac
}

mode=${1:-}
[[ -n $mode ]] || usage
shift

case $mode in
submit)
  (($# >= 4)) || usage
  sweep=$(absolute "$1")
  out=$(absolute "$2")
  shift 2
  [[ $1 == --shards ]] || usage
  shards=$2
  shift 2
  [[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards: expected a positive count, got '$shards'"
  [[ -f $sweep ]] || die "$sweep: no such sweep file"
  binary=$(absolute "$(tessera_binary)")
  [[ -x $binary ]] || die "$binary: no tessera binary (build it, or set TESSERA)"
  mkdir -p "$out/logs"
  script=$(absolute "$0")
  array=$(sbatch --parsable --array="0-$((shards - 1))" --export="ALL,TESSERA=$binary" \
    --output="$out/logs/slurm-%A_%a.out" "$@" "$script" shard "$sweep" "$out")
  array=${array%%;*}
  merge=$(sbatch --parsable --dependency="afterany:$array" --job-name=tessera-sweep-merge \
    --export="ALL,TESSERA=$binary" --output="$out/logs/slurm-%j-merge.out" "$@" "$script" merge "$out")
  merge=${merge%%;*}
  echo "array job $array ($shards shards), merge job $merge: $out/merged/results.csv when it ends"
  ;;
shard)
  (($# == 2)) || usage
  sweep=$1
  out=$2
  [[ -n ${SLURM_ARRAY_TASK_ID:-} ]] || die "shard: not a Slurm array task (submit with sbatch --array=0-N-1)"
  count=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX + 1))}
  if ((${SLURM_ARRAY_TASK_MIN:-0} != 0 || ${SLURM_ARRAY_TASK_MAX:-0} != count - 1)); then
    die "shard: the array must be 0-(N-1), got ${SLURM_ARRAY_TASK_MIN:-?}-${SLURM_ARRAY_TASK_MAX:-?}"
  fi
  jobs=${SLURM_CPUS_PER_TASK:-${SLURM_JOB_CPUS_PER_NODE%%[(,]*}}
  jobs=${jobs:-$(nproc)}
  binary=$(tessera_binary)
  echo "slurm-sweep: task $SLURM_ARRAY_TASK_ID of $count on $(hostname -s), $jobs jobs at a time" >&2
  exec "$binary" sweep "$sweep" --out "$out/shard-$SLURM_ARRAY_TASK_ID" --shard "$SLURM_ARRAY_TASK_ID/$count" \
    --jobs "$jobs"
  ;;
merge)
  (($# == 1)) || usage
  out=$1
  shopt -s nullglob
  shard_dirs=("$out"/shard-*)
  ((${#shard_dirs[@]} > 0)) || die "merge: no $out/shard-* folder"
  exec "$(tessera_binary)" sweep-merge "${shard_dirs[@]}" --out "$out/merged"
  ;;
*)
  usage
  ;;
esac
