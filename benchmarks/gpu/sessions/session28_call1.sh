#!/usr/bin/env bash
# Session 28's first device call (H200, ~6 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call1.sh
# The read-only probe of the GEMVs' grid and ring (gemv_probe.rs, cuda/qgemv4_probe.cu; NOTES
# "Next lever (after session 27)", item 1). Question: which part holds the layer GEMVs at
# ~55% of DRAM peak: the bare ring on the shipped grid (probe:8:3:1:0), x's staging (PARTS 1),
# the scale tables (2), the per-block reduction (4), the arithmetic (8), and does a CTA that
# owns several 16-row blocks (BLOCKS 2 / 4 / 16, the ring running on) or a deeper ring read
# faster? Predictions (written before the run): if the bare ring on the shipped grid reaches
# >= 3.8 TB/s on gate/up, the prologue / epilogue (parts 1-4) are the limit; if it stays at
# ~2.6-2.9, the short CTAs are (the head's 4 tiles per warp), and BLOCKS 4-16 should lift it.
# 1. bench gemv (wall time per call of 50, bit checks of the shipped schedule vs MLX);
# 2. ncu device time of the same launches (caches flushed), medians per kernel and grid.
# CPU dry run: NCU=0 BIN=target/release/mlxcel (off CUDA it times MLX's path only).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c1
BIN=${BIN:-.devcarry/bin/mlxcel}
PROBES=${PROBES:-probe:8:3:1:0,probe:8:3:1:1,probe:8:3:1:3,probe:8:3:1:7,probe:8:3:1:15,probe:8:3:2:0,probe:8:3:4:0,probe:8:3:16:0,probe:8:6:1:0,probe:4:3:1:0,probe:16:3:1:0,probe:8:3:4:7,probe:8:3:4:15}
timeout 200 "$BIN" bench gemv --schedules ring --probes "$PROBES" --iters 50 --out "$R/bench-gemv" \
  > "$R/bench-gemv.out" 2> "$R/bench-gemv.err"
echo "bench gemv rc=$? t=${SECONDS}s"; grep -E "us \(host|rror" "$R/bench-gemv.err" | head -80
if [ "${NCU:-1}" != 0 ]; then
  timeout $((540 - SECONDS)) ncu --clock-control none --kernel-name regex:qgemv4 --csv \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$BIN" bench gemv --schedules ring --probes "$PROBES" --iters 10 > "$R/ncu-bench.csv" 2> "$R/ncu-bench.err"
  echo "ncu rc=$? t=${SECONDS}s"
  python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-bench.csv" | tee "$R/ncu-bench-medians.txt"
  gzip -f "$R/ncu-bench.csv"
fi
echo "done at t=${SECONDS}s"
