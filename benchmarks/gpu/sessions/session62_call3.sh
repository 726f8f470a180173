#!/usr/bin/env bash
# Session 62, third call (~4 min): a real 32K prefill once every kernel is in the disk cache.
# Session 61 measured fp16 7.16 s and turbo4 9.34 s (1.30x) in second processes, when mlxcel's
# kernels were still compiled per process: turbo4's prefill compiles its own (the chunk encoder,
# the appends) inside its prefill time. Prediction: most of turbo4's extra 2.2 s was NVRTC; with
# the images cached its prefill comes within ~10% of fp16's (the split path's dequantization of
# the prefix per chunk is ~45 GB of traffic over the 8 chunks and 32 layers: ~15 ms).
# - fp16 and turbo4 at 1024 tokens first (MLX's own kernels and ours compiled and cached);
# - then 32K real prefills (4096-token chunks), 16 decode tokens: fp16, turbo4, turbo4-asym,
#   int8, fp16, turbo4.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session62_call3.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s62c3
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
gen warm fp16 1024
for kv in turbo4 turbo4-asym int8; do gen warm "$kv" 4096; done
for kv in fp16 turbo4 turbo4-asym int8; do gen r1 "$kv" 32768; done
for kv in turbo4 fp16; do gen r2 "$kv" 32768; done
echo "done at t=${SECONDS}s"
python3 benchmarks/gpu/strip_prompt_tokens.py "$R"
