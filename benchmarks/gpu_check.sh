#!/usr/bin/env bash
# The GPU check of a session lent a device: ieqa's transformers scoring path on the published
# 7-8B architectures with RANDOM weights (nothing downloaded; throughput does not depend on
# the weights' values), one table per architecture from benchmarks/vlm_throughput.py
# (edits/s at batch 1/8/32, prefix sharing, and the logits checks that fail the run).
#
#   bash benchmarks/gpu_check.sh                 # all three architectures, bf16, cuda
#   ARCHS="qwen2.5-vl-7b" REPEATS=3 bash benchmarks/gpu_check.sh
#
# PY selects the interpreter (default: .venv/bin/python if there, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PY:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this check needs a GPU')"
"$PY" -c "import torch; p = torch.cuda.get_device_properties(0); print(f'device: {p.name}, {p.total_memory / 2**30:.0f} GiB, torch {torch.__version__}')"
for arch in ${ARCHS:-qwen2.5-vl-7b qwen2-vl-7b qwen3-vl-8b}; do
  echo "== $arch"
  HF_HUB_OFFLINE=1 "$PY" benchmarks/vlm_throughput.py --arch "$arch" --device cuda \
    --dtype bfloat16 --repeats "${REPEATS:-5}"
done
