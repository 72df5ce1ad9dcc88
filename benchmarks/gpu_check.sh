#!/usr/bin/env bash
# The GPU check of a session lent a device: ieqa's transformers scoring path on the published
# 7-8B architectures with RANDOM weights (nothing downloaded; throughput does not depend on
# the weights' values):
#   1. benchmarks/vlm_throughput.py per architecture (edits/s at batch 1/8/32, prefix sharing,
#      the vision tower's varlen SDPA against transformers' per-window loop, and the logits
#      checks that fail the run), then a strict float32 check;
#   2. benchmarks/editreward_throughput.py: the editreward scorer (two forward passes per
#      edit, 1-D positions, reward heads) on qwen2.5-vl-7b, batch 1/8 and prefix sharing;
#   3. benchmarks/editscore_throughput.py: EditScore generation through transformers on
#      qwen2.5-vl-7b (4 passes x 2 prompts, 512 new tokens), the released loop vs the seeded
#      batch, with how many answers the two share;
#   4. benchmarks/serve_load.py: ieqa serve with a forward-only scorer on qwen2.5-vl-7b
#      (served vs offline at the same batch size, batched vs --max-batch 1, latency at a
#      quarter, half and full load, overload).
# Every throughput line carries TFLOP per edit, TFLOP/s and % of the GPU's dense bf16 peak
# (ieqa.backends.flops; on the CPU the peak column reads n/a).
#
#   bash benchmarks/gpu_check.sh                 # everything, bf16, cuda
#   bash benchmarks/gpu_check.sh --smoke         # the same scripts on tiny models on the CPU
#   ARCHS="qwen2.5-vl-7b" REPEATS=3 bash benchmarks/gpu_check.sh
#   DTYPE=float32 ARCHS="qwen2.5-vl-7b" REPEATS=1 bash benchmarks/gpu_check.sh   # strict logits
#   EDITSCORE_TOKENS=512 bash benchmarks/gpu_check.sh   # EditScore's full answer length (+2.5 min)
#   EDITSCORE_STATIC=1 bash benchmarks/gpu_check.sh    # also a static KV cache (compiled decoding)
#
# The whole check is sized to one device command (10 minutes): on an H200 (2026-11-29) the
# three architectures, the float32 check and editreward took about 7 minutes, and EditScore
# at 512 new tokens about 2.5 more, so the default is 128 new tokens (about 45 s). Each
# section prints its wall time ("-- took N s").
#
# PY selects the interpreter (default: .venv/bin/python if there, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PY:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
export HF_HUB_OFFLINE=1
failed=()
SECONDS=0
section() {  # the wall time of the section before, then this one's header
  if [[ -n "${_section:-}" ]]; then echo "-- took $((SECONDS - _t0)) s: $_section"; fi
  _section="$1"; _t0=$SECONDS; [[ -z "$1" ]] || echo "== $1"
}
if [[ "${1:-}" == "--smoke" ]]; then
  # the code paths of the GPU check on tiny random models, in about a minute on 2 cores:
  # varlen vision attention over several windows per image (112x112: 4 windows), FLOP
  # columns, the seeded batch of EditScore, shared dimension prefixes and length buckets in
  # the served vlm-levels scorer (mixed image sizes)
  section "smoke"
  "$PY" benchmarks/vlm_throughput.py --tiny qwen2.5-vl --device cpu --repeats 1 \
    --batch-sizes 1,4 --shared-batch-sizes 4 --image-size 112x112 || failed+=("vlm_throughput")
  "$PY" benchmarks/editreward_throughput.py --device cpu --groups 1 --k 2 --batch 2 \
    --repeats 1 || failed+=("editreward_throughput")
  "$PY" benchmarks/editscore_throughput.py --device cpu --passes 2 --max-new-tokens 8 \
    --image-size 56 --static-cache || failed+=("editscore_throughput")
  "$PY" benchmarks/serve_load.py --tiny qwen2.5-vl --duration-s 0.3 --items 12 --clients 4 \
    --max-requests 200 --mixed-sizes || failed+=("serve_load")
else
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this check needs a GPU (--smoke runs it on the CPU)')"
  "$PY" -c "import torch; p = torch.cuda.get_device_properties(0); print(f'device: {p.name}, {p.total_memory / 2**30:.0f} GiB, torch {torch.__version__}')"
  # Every architecture runs even when one fails its logits checks; the exit status says
  # which failed. DTYPE=float32 gives the strict check (tolerance 1e-4 instead of 1e-1).
  for arch in ${ARCHS:-qwen2.5-vl-7b qwen2-vl-7b qwen3-vl-8b}; do
    section "$arch (${DTYPE:-bfloat16})"
    "$PY" benchmarks/vlm_throughput.py --arch "$arch" --device cuda \
      --dtype "${DTYPE:-bfloat16}" --repeats "${REPEATS:-3}" || failed+=("$arch")
  done
  if [[ -z "${DTYPE:-}" && -z "${ARCHS:-}" ]]; then
    # The strict check: one architecture in float32 (TF32 off), batch 32 against batch 1.
    section "qwen2.5-vl-7b (float32, strict logits check)"
    "$PY" benchmarks/vlm_throughput.py --arch qwen2.5-vl-7b --device cuda \
      --dtype float32 --repeats 1 --batch-sizes 1,32 --shared-batch-sizes 32 || failed+=("qwen2.5-vl-7b float32")
    section "editreward on qwen2.5-vl-7b (bfloat16)"
    "$PY" benchmarks/editreward_throughput.py --arch qwen2.5-vl-7b --device cuda \
      --groups 8 --k 4 --batch 8 --repeats "${REPEATS:-3}" || failed+=("editreward")
    section "editscore generation on qwen2.5-vl-7b (bfloat16, ${EDITSCORE_TOKENS:-128} new tokens)"
    "$PY" benchmarks/editscore_throughput.py --arch qwen2.5-vl-7b --device cuda \
      --edits 1 --passes 4 --max-new-tokens "${EDITSCORE_TOKENS:-128}" \
      ${EDITSCORE_STATIC:+--static-cache} || failed+=("editscore")
    section "ieqa serve under load, qwen2.5-vl-7b forward-only (bfloat16)"
    "$PY" benchmarks/serve_load.py --arch qwen2.5-vl-7b --device cuda --image-size 448 \
      --duration-s 10 || failed+=("serve_load")
  fi
fi
section ""
echo "gpu_check: ${SECONDS} s in all"
if ((${#failed[@]})); then
  echo "gpu_check: failed (logits checks or errors, see above): ${failed[*]}" >&2
  exit 1
fi
