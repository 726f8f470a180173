#!/usr/bin/env bash
# Session 28's third device call (H200, ~7 min; timeout_s 570), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call3.sh
# Calls 1-2 (the probe): the bare ring streams at 3.8-4.4 TB/s on the shipped grid, so the
# grid, the ring and the copies are not the limit; the arithmetic and the prologue are. A
# model of the shipped kernel: each warp keeps S - 1 tiles in flight and spends C per tile on
# its arithmetic, so an SM moves 32 warps x (S - 1) KiB per (L + C) (L the loaded DRAM
# latency). At S = 3 with C ~ 1 us (215 instructions x 9.7 warp cycles each, session 26's
# ncu) that caps gate/up near its measured 2.6 TB/s; fewer instructions alone (POST, session
# 27) lengthened C's dependent chains and did not help, a deeper ring alone (sessions 9-21)
# left the issue slots full. Prediction: POST with a deeper ring (ring:8:4 / 8:5, or 4 warps
# x 6 stages) beats both: gate/up 26 -> <= 22 us, the head 100 -> <= 85 us.
# 1. ncu device times of bench gemv with MLXCEL_QMV_POST=0 and =1, schedules ring:8:3,
#    ring:8:4, ring:8:5, ring:4:6 (registers, issue-slot and warp occupancy beside the time);
# 2. in situ (ncu, turbo4 at 32K): default; POST with ring:8:4; POST with ring:8:5.
# CPU dry run: NCU=0 BIN=target/release/mlxcel BENCH=0.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c3
BIN=${BIN:-.devcarry/bin/mlxcel}
SCHEDS=ring:8:3,ring:8:4,ring:8:5,ring:4:6
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
if [ "${NCU:-1}" != 0 ]; then
  for post in 0 1; do
    MLXCEL_QMV_POST=$post timeout 150 ncu --clock-control none --kernel-name regex:qgemv4 --csv --metrics "$METRICS" \
      "$BIN" bench gemv --schedules "$SCHEDS" --iters 10 > "$R/ncu-post$post.csv" 2> "$R/ncu-post$post.err"
    echo "ncu post=$post rc=$? t=${SECONDS}s"
    grep -E "us \(host|rror" "$R/ncu-post$post.err" | grep -v mlx-qmm | awk '{print $1, $2, $NF}'
    python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-post$post.csv" \
      | sed -e 's/dram__throughput.avg.pct_of_peak_sustained_elapsed/dram%/' -e 's/launch__registers_per_thread/regs/' \
        -e 's/smsp__issue_active.avg.pct_of_peak_sustained_active/issue%/' -e 's/sm__warps_active.avg.pct_of_peak_sustained_active/warps%/' \
        -e 's/custom_kernel_mlxcel_//' | tee "$R/ncu-post$post-medians.txt"
    gzip -f "$R/ncu-post$post.csv"
  done
fi
e2e_setup 540 60
insitu_env base MLXCEL_QMV_POST=0
insitu_env post-8-4 MLXCEL_QMV_POST=1 MLXCEL_QMV_SCHEDULE=ring:8:4
insitu_env post-8-5 MLXCEL_QMV_POST=1 MLXCEL_QMV_SCHEDULE=ring:8:5
c=() ; for t in base post-8-4 post-8-5; do c+=("$R/insitu-$t/ncu-e2e/ncu-e2e-turbo4-32768.csv"); done
python3 benchmarks/gpu/insitu_medians.py "${c[@]}" 2>&1 | head -16 | cut -c1-160
echo "done at t=${SECONDS}s"
