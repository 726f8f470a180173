#!/usr/bin/env bash
# Next session's second device call (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session7_call2.sh   (~5 min)
# 1. What holds the one-token GEMV kernels at 1.1-1.9 TB/s (2.65 of the 3.4 ms device step
#    at 4K; the weights' limit is 0.94 ms): one ncu "full" section set on the first qkv,
#    o_proj, gate/up+SiLU and down launches of decode step 8 (memory throughput, stall
#    reasons, occupancy, waves). Session 6's attempt failed on the tickets-stub bug.
# 2. The host spread that decides the 4K/32K ratios: fp16 and turbo4 at 4K, twice unpinned
#    and twice pinned to four cores (taskset), interleaved.
set -uo pipefail
R=/tmp/s7c2; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s7c2.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
MLXCEL_CUDA_PROFILE_STEPS=8,1 timeout 300 ncu --profile-from-start off --set full --kernel-name regex:qgemv4 \
  --launch-count 4 .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 4096 \
  --max-tokens 12 --ignore-eos --prefill-chunk 4096 --kv turbo4 > "$R/ncu-qmv-full.txt" 2>&1
grep -E "qgemv4|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Waves Per SM|Duration|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps" \
  "$R/ncu-qmv-full.txt" | head -80
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
cores="0-$(( $(nproc) > 4 ? 3 : $(nproc) - 1 ))"
for i in 1 2; do
  for kv in fp16 turbo4; do
    run "free$i" "$kv" 4096
    if command -v taskset > /dev/null; then
      taskset -c "$cores" bash -c ". benchmarks/gpu/e2e_run.sh; R=$R; run pinned$i $kv 4096"
    fi
  done
done
