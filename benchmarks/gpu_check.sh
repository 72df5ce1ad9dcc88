#!/usr/bin/env bash
# The GPU check of a session lent a device: ieqa's transformers scoring path on the published
# 7-8B architectures with RANDOM weights (nothing downloaded; throughput does not depend on
# the weights' values), one table per architecture from benchmarks/vlm_throughput.py
# (edits/s at batch 1/8/32, prefix sharing, and the logits checks that fail the run).
#
#   bash benchmarks/gpu_check.sh                 # all three architectures, bf16, cuda
#   ARCHS="qwen2.5-vl-7b" REPEATS=3 bash benchmarks/gpu_check.sh
#   DTYPE=float32 ARCHS="qwen2.5-vl-7b" REPEATS=1 bash benchmarks/gpu_check.sh   # strict logits
#
# PY selects the interpreter (default: .venv/bin/python if there, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PY:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this check needs a GPU')"
"$PY" -c "import torch; p = torch.cuda.get_device_properties(0); print(f'device: {p.name}, {p.total_memory / 2**30:.0f} GiB, torch {torch.__version__}')"
# Every architecture runs even when one fails its logits checks; the exit status says
# which failed. DTYPE=float32 gives the strict check (tolerance 1e-4 instead of 5e-2).
failed=()
for arch in ${ARCHS:-qwen2.5-vl-7b qwen2-vl-7b qwen3-vl-8b}; do
  echo "== $arch (${DTYPE:-bfloat16})"
  HF_HUB_OFFLINE=1 "$PY" benchmarks/vlm_throughput.py --arch "$arch" --device cuda \
    --dtype "${DTYPE:-bfloat16}" --repeats "${REPEATS:-5}" || failed+=("$arch")
done
# The strict check: one architecture in float32 (TF32 off), batch 32 against batch 1.
if [[ -z "${DTYPE:-}" && -z "${ARCHS:-}" ]]; then
  echo "== qwen2.5-vl-7b (float32, strict logits check)"
  HF_HUB_OFFLINE=1 "$PY" benchmarks/vlm_throughput.py --arch qwen2.5-vl-7b --device cuda \
    --dtype float32 --repeats 1 --batch-sizes 1,32 --shared-batch-sizes 32 || failed+=("qwen2.5-vl-7b float32")
fi
if ((${#failed[@]})); then
  echo "gpu_check: failed (logits checks or errors, see above): ${failed[*]}" >&2
  exit 1
fi
