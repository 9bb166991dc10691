#!/usr/bin/env bash
# Makes GPU reference records (issue: "The GPU reference run") on a machine with an NVIDIA GPU, the CUDA
# toolkit, python3 with PyYAML and (for the framework comparison) PyTorch — nothing else of tessera's.
#
#   scripts/gpu-reference.sh OUT_ROOT configs/workloads/bert-ffn.yaml [more workloads...]
#
# builds ops/cuda's tessera_gpu_ref (build-gpu/), runs every op of each workload, and writes
# OUT_ROOT/<gpu>/<workload>/{<op>.json, run.json, torch.json}; `tessera run` reads traces/reference/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out_root=$1
shift
if [[ ! -x "$root/build-gpu/tessera_gpu_ref" ]]; then
  cmake -S "$root/ops/cuda" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
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
  mapfile -t ops < <("$python" - "$workload" <<'PY'
import sys, yaml
w = yaml.safe_load(open(sys.argv[1]))
for i, op in enumerate(w["ops"]):
    fields = {"kind": op["kind"], "name": op["name"], "index": i, "seed": w["seed"]}
    fields.update({k: v for k, v in op.items() if k not in ("kind", "name")})
    print(",".join(f"{k}={v}" for k, v in fields.items()))
PY
)
  name=$("$python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["name"])' "$workload")
  dir="$out_root/$gpu/$name"
  mkdir -p "$dir"
  args=()
  for op in "${ops[@]}"; do args+=(--op "$op"); done
  echo "gpu-reference: $name on $gpu" >&2
  "$root/build-gpu/tessera_gpu_ref" --out "$dir" "${args[@]}"
  if "$python" -c 'import torch' 2>/dev/null; then
    "$python" "$root/scripts/gpu_torch_reference.py" --out "$dir" "${args[@]}"
  fi
done
