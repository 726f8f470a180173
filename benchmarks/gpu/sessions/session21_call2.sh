#!/usr/bin/env bash
# A second call for session 21 (H200, ~6 min; timeout_s 600), after session21_call1.sh on the
# same staging (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session21_call2.sh
# The GEMV ring's depth (MLXCEL_QMV_SCHEDULE; the default ring:8:4 keeps 3 of a warp's 1-KiB
# tiles in flight). At K = 4096 (qkv, o_proj) a warp has 4 tiles in all, so its 4th leaves only
# after its 1st arrives: a second DRAM round trip per launch that ring:8:5 removes, at 8 KiB
# more shared memory per CTA (gate/up: 4 -> 3 CTAs per SM by shared memory, more waves).
# Schedules give bit-identical outputs (same tiles, same per-lane order; gpu_quantized_gemv).
# Prediction: qkv and o_proj -0.5 to -1.5 us per launch, gate/up maybe slower; per step -0.03
# to -0.08 ms if only the small GEMVs gain.
# 1. bench gemv: ring:8:4, ring:8:5, ring:8:6 (standalone per-kernel times);
# 2. in situ at 32K (turbo4, 2 steps): the three schedules;
# 3. end to end, one interleaved round of turbo4 and fp16 at 32K per schedule.
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json CTX=512 BIN=target/release/mlxcel (bench gemv
# times out on the CPU: MLX's 4-bit matmul at the 8B shapes)
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s21c2
BIN=${BIN:-.devcarry/bin/mlxcel}
timeout 120 "$BIN" bench gemv --schedules ring:8:4,ring:8:5,ring:8:6 --iters 20 --out "$R/bench-gemv" \
  > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$?"; grep -E "us \(host|error" "$R/bench-gemv.err" | head -30
for s in 4 5 6; do insitu_env "s$s" MLXCEL_QMV_SCHEDULE="ring:8:$s"; done
e2e_setup 540 80
for kv in turbo4 fp16; do
  for s in 4 5 6; do timed 22 "s$s" "$kv" "${CTX:-32768}" MLXCEL_QMV_SCHEDULE="ring:8:$s"; done
done
finish_call
