#!/usr/bin/env bash
# Session 28's second device call (H200, ~6 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call1.sh
# Session 28 call 1 found the bare ring streaming at 3.8-4.4 TB/s on the shipped grid (gate/up
# 17.6 us against the kernel's 26.0; head 67.7 against 103.2), x's staging cheap, and the scale
# tables (+2.7 us on gate/up, +10.7 on the head) and the arithmetic the costs, with occupancy
# mixed in (the probes' registers 35-72). This call: (a) the same parts at a fixed 4 CTAs per
# SM (PARTS bit 64 pads shared memory), so occupancy and prologue separate; (b) the scales
# copied into each tile's ring slot (bit 16: no table staging, 48 registers with the
# arithmetic instead of 64-72) with and without the arithmetic, at 2-6 stages and 4 warps.
# Prediction: probe:8:3:1:29 (x, reduction, arithmetic, scales in the ring) beats
# probe:8:3:1:15 (the same with tables) by >= 3 us on gate/up and ~10 us on the head; if so the
# shipped kernel gets the same change (bit-identical: same scales, same arithmetic).
# 1. bench gemv (wall time per call of 50, bit checks of the shipped schedule vs MLX);
# 2. ncu device time of the same launches (caches flushed), medians per kernel and grid.
# CPU dry run: NCU=0 BIN=target/release/mlxcel (off CUDA it times MLX's path only).
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c2
BIN=${BIN:-.devcarry/bin/mlxcel}
PROBES=${PROBES:-probe:8:3:1:0,probe:8:3:1:64,probe:8:3:1:65,probe:8:3:1:71,probe:8:3:1:15,probe:8:3:1:21,probe:8:3:1:29,probe:8:3:1:93,probe:8:4:1:29,probe:8:2:1:29,probe:4:4:1:29,probe:8:6:1:29}
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
