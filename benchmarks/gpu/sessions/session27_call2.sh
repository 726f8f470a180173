#!/usr/bin/env bash
# Session 27's second device call (H200, ~6 min; timeout_s 540), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv,
# .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session27_call2.sh
# (This replaces the plan written after session 26, ncu and rounds of MLXCEL_QMV_POST: call 1
# measured POST at the default's speed in situ, gate/up 27.1 -> 27.5 us, so the GEMVs are not
# issue-bound and POST's rounds would only confirm it.)
# The weights' layout (MLXCEL_QMV_TILED's kernels; `tile_rows16` in quantized_gemv.rs): each
# 16-row x 128-value tile contiguous, so a warp's copy instruction reads 512 contiguous bytes
# and a CTA's ring stage 8 KiB, instead of 8 rows' 64-byte pieces K / 2 bytes apart. Bytes and
# instructions unchanged (the same SASS but for the address arithmetic); only DRAM locality
# changes. Question: does the access pattern hold the GEMVs at ~2.6 TB/s (lm_head, 8016 CTAs,
# also ~2.7)?
# 1. gpu_quantized_gemv's tiled test (bit identity with MLX's layout, 3 ring schedules);
# 2. bench gemv --tiled: wall time per call of each layer GEMV and the head, ring:8:3 on both
#    layouts (its own bit-identity check per GEMV);
# 3. ncu device time (cache flushed between launches) of the same launches, medians per kernel
#    and grid;
# 4. if time is left: the hoisted / pipelined attention test (session 26: 149 checks identical
#    before its 120 s limit).
# CPU dry run: TESTS=0 NCU=0 BIN=target/release/mlxcel (bench gemv refuses --tiled off CUDA:
# it times MLX's path only, slowly at these shapes).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s27c2
BIN=${BIN:-.devcarry/bin/mlxcel}
if [ "${TESTS:-1}" != 0 ]; then
  gpu_test gpu_quantized_gemv 150 "tiled:" tiled_weights
fi
timeout 150 "$BIN" bench gemv --schedules ring --tiled --iters 50 --out "$R/bench-gemv" \
  > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$?"; grep -E "us \(host|rror|identical" "$R/bench-gemv.err" | head -30
if [ "${NCU:-1}" != 0 ]; then
  timeout 200 ncu --clock-control none --kernel-name regex:qgemv4 --csv \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$BIN" bench gemv --schedules ring --tiled --iters 20 > "$R/ncu-bench.csv" 2> "$R/ncu-bench.err"
  echo "ncu rc=$?"
  python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-bench.csv" | tee "$R/ncu-bench-medians.txt"
fi
if [ "${TESTS:-1}" != 0 ] && ((SECONDS < 330)); then
  gpu_test gpu_fused_decode $((520 - SECONDS)) "hoisted" hoisted_and_pipelined_loops
fi
echo "done at t=${SECONDS}s"
