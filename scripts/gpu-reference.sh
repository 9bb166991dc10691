#!/usr/bin/env bash
# Makes GPU reference records (issue: "The GPU reference run") on a machine with an NVIDIA GPU, the CUDA
# toolkit, python3 with PyYAML and (for the framework comparison) PyTorch — nothing else of tessera's.
#
#   scripts/gpu-reference.sh OUT_ROOT configs/workloads/bert-ffn.yaml [more workloads...]
#
# builds ops/cuda's tessera_gpu_ref (build-gpu/), runs every op of each workload, and writes
# OUT_ROOT/<gpu>/<workload>/{<op>.json, run.json, torch.json}; `tessera run` reads traces/reference/.
#
# A/B rounds for ops near the line: TESSERA_AB_OPS="conv1 ..." (op names) times each of those ops again,
# alone, TESSERA_AB_ROUNDS times (default 5), the runner (without ceilings) and PyTorch taking turns and
# taking turns at going first; ab.json in the workload's folder keeps every round's like-for-like rows and,
# per runner output class, the median, lowest and highest runner/PyTorch ratio over the rounds.
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
    ab_done=()
    for op in "${ops[@]}"; do
      op_name=$(tr ',' '\n' <<<"$op" | sed -n 's/^name=//p')
      [[ " ${TESSERA_AB_OPS:-} " == *" $op_name "* ]] || continue
      for ((round = 1; round <= ${TESSERA_AB_ROUNDS:-5}; ++round)); do
        round_dir="$dir/ab/$op_name/$round"
        mkdir -p "$round_dir"
        runner=("$root/build-gpu/tessera_gpu_ref" --skip-ceilings --out "$round_dir" --op "$op")
        framework=("$python" "$root/scripts/gpu_torch_reference.py" --out "$round_dir" --op "$op")
        if ((round % 2)); then
          "${runner[@]}" && "${framework[@]}"
        else
          "${framework[@]}" && "${runner[@]}" &&
            "$python" "$root/scripts/gpu_torch_reference.py" --compare-only "$round_dir"
        fi
      done
      ab_done+=("$op_name")
    done
    if ((${#ab_done[@]})); then
      "$python" "$root/scripts/gpu_torch_reference.py" --ab-summary "$dir" "${ab_done[@]}"
      rm -rf "$dir/ab"
    fi
  fi
done
