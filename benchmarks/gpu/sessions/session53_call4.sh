#!/usr/bin/env bash
# Session 53's code for 2- and 3-bit turbo sides on CUDA (MLXCEL_LOWBIT_CUDA), second call (H200,
# ~9 min), after session53_call3.sh passed: the symmetric modes' parity, then speed.
# - The parity suite for turbo3 and turbo2 (3- and 2-bit keys too: q's dims in the kernel's
#   pair order).
# - `bench attention` at 32K and 128K (Llama-3-8B layer) for turbo3-asym, turbo3, turbo2-asym,
#   turbo2 and turbo4-asym with the flag off (CUDA-core v3) and on. Prediction (bytes at SDPA's
#   4.1 TB/s plus turbo4's ~6 us fixed): turbo3-asym ~84 us at 128K (v3 measured 327.6), turbo3
#   ~35-50 us (its decode is ~2.9 instructions per element against turbo4's pair table ~1.2, so
#   likely issue-bound; the target is <= 32 us), turbo2 less.
# - End to end (synthetic Llama-3-8B 4-bit, random-kv, 64 tokens, device clock) at 128K and 32K:
#   fp16, turbo4-asym, turbo3-asym and turbo2-asym with the flag on, turbo3-asym off (the op-by-op
#   encoder and v3: the before). Prediction: turbo3-asym a little faster than turbo4-asym (its V
#   bytes are 3/4), i.e. ~1.35x fp16 at 128K instead of well below fp16 without the flag.
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session53_call4.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s53c4
e2e_setup "${BUDGET:-540}" 90
(export MLXCEL_LOWBIT_CUDA=1 MLXCEL_PARITY_MODES=turbo3,turbo2; budget_test gpu_fused_decode 240 "fused decode|worst|panicked" fused_decode_matches)
BENCH_MODES=turbo3-asym,turbo3,turbo2-asym,turbo2,turbo4-asym CTXS=32768,131072 bench_ab MLXCEL_LOWBIT_CUDA lowbit
timed 40 r1 fp16 131072
timed 40 r1 turbo3-asym 131072 MLXCEL_LOWBIT_CUDA=1
timed 40 r1 turbo4-asym 131072
timed 40 r1 turbo2-asym 131072 MLXCEL_LOWBIT_CUDA=1
TOKENS=128 timed 30 r1 turbo3-asym 32768 MLXCEL_LOWBIT_CUDA=1
TOKENS=128 timed 30 r1 fp16 32768
TOKENS=128 timed 30 r1 turbo4-asym 32768
TOKENS=128 timed 40 off1 turbo3-asym 32768 MLXCEL_LOWBIT_CUDA=0
finish_call
