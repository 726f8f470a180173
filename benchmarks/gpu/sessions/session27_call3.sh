#!/usr/bin/env bash
# Session 27's third device call (H200, ~8 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_quantized_gemv):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session27_call3.sh
# Bulk copies for the GEMVs (the bulk:W:S schedules, never run before): on the tiled layout
# (call 2: by itself level with MLX's), each 1-KiB tile arrives by one cp.async.bulk issued by
# lane 0 and completing on a per-slot mbarrier (SASS: UBLKCP + SYNCS), instead of 64 16-byte
# cp.async by the lanes. The two numbers: bytes unchanged; copy instructions per tile 2 per
# lane -> 3 on lane 0 (arrive.expect_tx, the copy, the wait loop on every lane). Question:
# does the SM's per-lane load path (request tracking) cap the GEMVs at ~2.6-2.9 TB/s?
# Prediction: if so, gate/up 26 -> 18-21 us and the head 102 -> 75-85 us (bench gemv's ncu
# medians); if not, level.
# 1. ncu device times of bench gemv (cache flushed between launches): ring on MLX's layout and
#    tiled, bulk:8:3, bulk:8:4, bulk:8:2; medians per kernel and grid;
# 2. bench gemv wall times of the same, with its bit-identity check per GEMV (bulk against
#    the per-lane ring of the same warps and stages);
# 3. in situ (ncu, turbo4 at 32K): default against MLXCEL_QMV_TILED=1 with bulk:8:3 (the
#    weights tiled at load);
# 4. greedy turbo4 tokens: default, tiled at load (prefill through `untiled`), tiled + bulk:
#    all three must match (bit-identical kernels, the same words for MLX's matmuls);
# 5. gpu_quantized_gemv's tiled test (per-lane and bulk copies, 3 schedules each) with what
#    is left.
# CPU dry run: TESTS=0 NCU=0 MODEL=synthetic:/tmp/tiny.json BIN=target/release/mlxcel (bench
# gemv refuses bulk schedules off CUDA: skip it with BENCH=0).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s27c3
BIN=${BIN:-.devcarry/bin/mlxcel}
SCHEDS=ring,bulk:8:3,bulk:8:4,bulk:8:2
if [ "${NCU:-1}" != 0 ]; then
  timeout 150 ncu --clock-control none --kernel-name regex:qgemv4 --csv \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$BIN" bench gemv --schedules "$SCHEDS" --tiled --iters 20 > "$R/ncu-bench.csv" 2> "$R/ncu-bench.err"
  echo "ncu rc=$?"
  python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-bench.csv" | sed 's/dram__throughput.avg.pct_of_peak_sustained_elapsed/dram%/' \
    | tee "$R/ncu-bench-medians.txt"
fi
if [ "${BENCH:-1}" != 0 ]; then
  timeout 120 "$BIN" bench gemv --schedules "$SCHEDS" --tiled --iters 30 --out "$R/bench-gemv" \
    > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
  echo "bench gemv rc=$?"; grep -E "us \(host|rror|identical" "$R/bench-gemv.err" | head -40
fi
e2e_setup 520 60
insitu_env base MLXCEL_QMV_TILED=0
insitu_env bulk MLXCEL_QMV_TILED=1 MLXCEL_QMV_SCHEDULE=bulk:8:3
TOKENS=32 timed 60 tok0 turbo4 1024
TOKENS=32 timed 60 tokt turbo4 1024 MLXCEL_QMV_TILED=1
TOKENS=32 timed 60 tokb turbo4 1024 MLXCEL_QMV_TILED=1 MLXCEL_QMV_SCHEDULE=bulk:8:3
python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))["tokens"]
for f in sys.argv[2:]:
    b = json.load(open(f))["tokens"]
    d = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    print(f, "against the default:", "match" if not d and len(a) == len(b) else f"first difference at {d[:1]}", len(a), len(b))' \
  "$R/tok0-turbo4-1024.json" "$R/tokt-turbo4-1024.json" "$R/tokb-turbo4-1024.json" 2>&1 | tail -2
if [ "${TESTS:-1}" != 0 ] && ((SECONDS < 470)); then
  gpu_test gpu_quantized_gemv $((540 - SECONDS)) "tiled:" tiled_weights
fi
echo "done at t=${SECONDS}s"
