#!/usr/bin/env bash
# Session 28's fourth device call (H200, ~5 min; timeout_s 500), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session28_call4.sh
# Call 3: in bench gemv (no folded norm) MLXCEL_QMV_POST made gate/up 25.90 -> 21.95 us at
# ring:8:3, and ring:4:6 made the head 102.1 -> 95.8 (92.4 with POST); in situ, where qkv,
# gate/up and the head fold the RMSNorm, POST was slower (gate/up 27.04 -> 29.41 at ring:8:5;
# session 27: 27.10 -> 27.60 at ring:8:3). Question: is the folded norm what turns POST's gain
# around? `bench gemv --norm` folds it into the same three GEMVs as in situ.
# Prediction: if the norm is the cause, bench --norm shows POST's gate/up at >= 26 us; if bench
# --norm still shows ~22 us, the difference lies in situ (inputs, caches), not in the kernel.
# 1. ncu device times of bench gemv --norm, POST 0 and 1, schedules ring:8:3, ring:8:5, ring:4:6;
# 2. in situ (ncu, turbo4 at 32K): default; ring:4:6 (bit-identical); POST at ring:8:3.
# CPU dry run: NCU=0 BIN=target/release/mlxcel.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s28c4
BIN=${BIN:-.devcarry/bin/mlxcel}
SCHEDS=ring:8:3,ring:8:5,ring:4:6
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
if [ "${NCU:-1}" != 0 ]; then
  for post in 0 1; do
    MLXCEL_QMV_POST=$post timeout 120 ncu --clock-control none --kernel-name regex:qgemv4 --csv --metrics "$METRICS" \
      "$BIN" bench gemv --norm --schedules "$SCHEDS" --iters 10 > "$R/ncu-norm-post$post.csv" 2> "$R/ncu-norm-post$post.err"
    echo "ncu --norm post=$post rc=$? t=${SECONDS}s"
    grep -E "us \(host|rror" "$R/ncu-norm-post$post.err" | grep -v mlx-qmm | awk '{print $1, $2, $NF}' | tr '\n' ';'; echo
    python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-norm-post$post.csv" \
      | sed -e 's/dram__throughput.avg.pct_of_peak_sustained_elapsed/dram%/' -e 's/launch__registers_per_thread/regs/' \
        -e 's/smsp__issue_active.avg.pct_of_peak_sustained_active/issue%/' -e 's/sm__warps_active.avg.pct_of_peak_sustained_active/warps%/' \
        -e 's/custom_kernel_mlxcel_//' | tee "$R/ncu-norm-post$post-medians.txt"
    gzip -f "$R/ncu-norm-post$post.csv"
  done
fi
e2e_setup 480 60
insitu_env base MLXCEL_QMV_POST=0
insitu_env ring-4-6 MLXCEL_QMV_SCHEDULE=ring:4:6
insitu_env post-8-3 MLXCEL_QMV_POST=1
c=(); for t in base ring-4-6 post-8-3; do c+=("$R/insitu-$t/ncu-e2e/ncu-e2e-turbo4-32768.csv"); done
python3 benchmarks/gpu/insitu_medians.py "${c[@]}" 2>&1 | grep qgemv4 | sed 's/custom_kernel_mlxcel_//' | cut -c1-200
echo "done at t=${SECONDS}s"
