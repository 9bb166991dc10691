#!/usr/bin/env bash
# Makes GPU reference records (issues "The GPU reference run", "The GPU reference measures kernels, not
# launches") on a machine with an NVIDIA GPU, the CUDA toolkit, python3 with PyYAML and (for the framework
# comparison) PyTorch — nothing else of tessera's.
#
#   scripts/gpu-reference.sh OUT_ROOT configs/workloads/bert-ffn.yaml [more workloads...]
#
# builds gpu/'s tessera_gpu_ref and libtessera_gpu_ref.so (build-gpu/), and per workload writes
# OUT_ROOT/<gpu>/<workload>/{<op>.json, run.json, torch.json}; `tessera run` reads traces/reference/.
# With PyTorch, scripts/gpu_torch_reference.py measures both sides in one process (the runner loaded as a
# library; same inputs; every variant checked; A/B rounds for every op, TESSERA_AB_ROUNDS, default 7); without
# it, the runner alone. Where Nsight Compute (ncu) is on the PATH, scripts/gpu_profile.py then adds the
# profile of every reported and compared path (TESSERA_PROFILE=0 leaves it out).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out_root=$1
shift
if [[ ! -x "$root/build-gpu/tessera_gpu_ref" || ! -f "$root/build-gpu/libtessera_gpu_ref.so" ]]; then
  cmake -S "$root/gpu" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build-gpu" >/dev/null
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr 'A-Z ' 'a-z-')
python=$(command -v python3)
# cuDNN is not part of the CUDA toolkit; the runner opens libcudnn.so.9 where the machine has it, e.g. the copy
# that comes with PyTorch's wheels.
cudnn_dir=$("$python" -c 'import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], "lib"))' \
  2>/dev/null || true)
if [[ -n "$cudnn_dir" && -d "$cudnn_dir" ]]; then export LD_LIBRARY_PATH="$cudnn_dir:${LD_LIBRARY_PATH:-}"; fi
for workload in "$@"; do
  # The runner's --op arguments: each op of the workload with its index (which fixes its input tensor ids).
  mapfile -t ops < <("$python" "$root/scripts/workload_ops.py" "$workload")
  name=$("$python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$workload")
  dir="$out_root/$gpu/$name"
  mkdir -p "$dir"
  args=()
  for op in "${ops[@]}"; do args+=(--op "$op"); done
  echo "gpu-reference: $name on $gpu" >&2
  if "$python" -c 'import torch' 2>/dev/null; then
    "$python" "$root/scripts/gpu_torch_reference.py" --lib "$root/build-gpu/libtessera_gpu_ref.so" --out "$dir" \
      --rounds "${TESSERA_AB_ROUNDS:-7}" "${args[@]}"
  else
    "$root/build-gpu/tessera_gpu_ref" --out "$dir" "${args[@]}"
  fi
  why=""
  if [[ "${TESSERA_PROFILE:-1}" == 0 ]]; then
    why="not profiled: recorded with TESSERA_PROFILE=0"
  elif ! command -v ncu >/dev/null; then
    why="not profiled: no ncu (Nsight Compute) on this machine"
  elif ! "$python" "$root/scripts/gpu_profile.py" --runner "$root/build-gpu/tessera_gpu_ref" --records "$dir" \
      "${args[@]}"; then
    why="not profiled: gpu_profile.py failed"
  fi
  if [[ -n "$why" ]]; then
    # run.json says why its records have no profiles (the records themselves are as measured).
    echo "gpu-reference: $name: $why" >&2
    "$python" -c 'import json, sys; p = sys.argv[1]; r = json.load(open(p)); r["profile"] = sys.argv[2]; json.dump(r, open(p, "w"), indent=1)' \
      "$dir/run.json" "$why"
  fi
done
