#!/usr/bin/env bash
# Session 16's third device call (H200; timeout_s 600), same staging as call 2:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session16_call3.sh
# 1. Parity on the GPU of the new default boundary caches (fp16 keys, int8 / int8r values) on the
#    fused kernel against the f32 split reference, with turbo4 / turbo4-asym / int8 again (the
#    hoisted copy loop became the default in session 15 and the kernel's ring-slot arithmetic was
#    refactored in f1a43a6: SASS-equivalent on the CPU's NVRTC, never run); in-place appends
#    including fp16+int8; the folded qkv append (not run since its b246a5e restructure); int8r.
# 2. More 32K rounds of fp16 / turbo4 / turbo4-asym (call 2: turbo4 1.29x by tok/s, 1.34x by
#    device time; the issue asks 1.3x).
# (Session 16 ran an earlier copy that wrote the parity log to test-gpu_fused_decode.txt, which the
# hoisted test's log then replaced: only the console lines of the parity run were kept.)
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 BIN=target/release/mlxcel (tests skipped
# unless .devcarry/bin/tests exists).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s16c3
export BUDGET=${BUDGET:-540}
MLXCEL_PARITY_MODES=fp16+int8,fp16+int8r,turbo4,turbo4-asym,int8 timeout 240 \
  .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches in_place_decode \
  > "$R/test-parity.txt" 2>&1
echo "gpu_fused_decode rc=$? $(grep -E "test result|panicked|fused decode:|in-place appends" "$R/test-parity.txt" | tr '\n' ' ')"
grep -E "^fp16\+int8" "$R/test-parity.txt" | sort -t" " -k9 -g | tail -3
gpu_test gpu_qkv_encode 120 'qkv encode:'
gpu_test gpu_int8r 60 'int8r:'
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export FILL=random-kv TOKENS=64
RUN_TIMEOUT=60
config_rounds "${CTX:-32768}" 22 "3 4 5" fp16 turbo4 turbo4-asym
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
if ((SECONDS + 110 < BUDGET)); then gpu_test gpu_fused_decode 110 'bit-identical|pipelined' hoisted; fi
echo "done at t=${SECONDS}s"
