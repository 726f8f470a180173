#!/usr/bin/env bash
# Session 22's second device call (H200, ~9 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session22_call2.sh
# MLXCEL_MMA_ONE_WAVE (new, off): turbo4-asym's tensor-core kernel fits 3 CTAs per SM (396
# on an H200), and its 4-warp split count rounds 396 / 8 KV heads up to 50 splits: 400 CTAs,
# a second wave of 4. With the flag the count rounds down (49 splits, 392 CTAs, one wave).
# Prediction: the second wave's 4 CTAs each stream a whole split (~210 KB at 32K) after the
# first 4 CTAs finish, a tail of a few us per call at 32K (asym's call ~8 us above its
# bytes at copy speed), less in share at 128K; no other shipped kernel changes (their CTAs per
# SM are even). This call:
# 1. parity of the turbo4-asym kernel with the flag on (split partition changed, tolerance
#    1e-3 of the output norm);
# 2. `bench attention` turbo4-asym at 4K / 32K / 128K with the flag off / on;
# 3. in situ at 32K (turbo4-asym, two decode steps, every launch) off / on;
# 4. end to end, interleaved, device clock: turbo4-asym and fp16 at 32K (one round), turbo4-asym
#    at 128K (two rounds);
# 5. while time is left: ring:8:3 (session 21's GEMV default) against ring:8:4 at 128K, turbo4,
#    one round (call 1 measured 32K: device 2.603 vs 2.668 ms per step).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s22c2
PARITY_MODES=turbo4-asym flag_parity onewave 120 MLXCEL_MMA_ONE_WAVE=1
BENCH_MODES=turbo4-asym bench_ab MLXCEL_MMA_ONE_WAVE onewave
INSITU_KV=turbo4-asym insitu_flags MLXCEL_MMA_ONE_WAVE
e2e_setup 560 80
FLAG_MODES="turbo4-asym fp16" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_ONE_WAVE 22 "${CTX:-32768}"
FLAG_MODES=turbo4-asym FLAG_ROUNDS=2 flag_rounds MLXCEL_MMA_ONE_WAVE 34 "${LONG:-131072}"
mkdir -p "$R/ring" && R0=$R && R=$R/ring
FLAG_MODES=turbo4 FLAG_ROUNDS=1 env_rounds 34 "MLXCEL_QMV_SCHEDULE=ring:8:3" "MLXCEL_QMV_SCHEDULE=ring:8:4" "${LONG:-131072}"
python3 benchmarks/repeats_summary.py "$R" > "$R/summary.md" 2>&1; cat "$R/summary.md"; R=$R0
finish_call
