#!/usr/bin/env bash
# Next session's second device call (H200, ~7 min; timeout_s 560), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_rope):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session25_call2.sh
# Why (NOTES, "Next lever (after session 24)", item 1): at 128K, 2x fp16 needs turbo4's
# attention near fp16 SDPA's bandwidth. turbo4's call streams 142.6 MB in ~46.9 us (~3.0
# TB/s); fp16's SDPA (cuDNN's decode kernels at these lengths, session 24) streams ~4.4 TB/s.
# What sets the difference: ncu's SpeedOfLight, MemoryWorkloadAnalysis, Occupancy,
# WarpStateStats, SchedulerStats and LaunchStats of one turbo4 decode-attention launch and of
# one fp16 SDPA launch (cuDNN's flash fprop and its reduction) at 128K, same layer shape
# (`bench attention`, Llama-3-8B: 32 q heads, 8 KV heads, D 128). Details pages in
# $R/<tag>/details.txt; key lines printed.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s25c2
# Session 24's review mend touched the fp16 / fp16+int8 in-place append's Rust side
# (Fp16Side::append_key_pair_in_place); its GPU test has not run since.
[ "${TESTS:-1}" = 0 ] || gpu_test gpu_fused_rope 170 "^fp16 hq|^fp16\+int8 hq|fused rope:"
export BUDGET=480
SECTIONS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats
  --section SchedulerStats --section LaunchStats)
# `attn_ncu TAG MODE KERNEL_REGEX COUNT`: COUNT launches matching KERNEL_REGEX (after 4 warm-up
# ones) of `bench attention` for MODE at $ATTN_CTX (default 128K).
attn_ncu() {
  local tag=$1 mode=$2 kern=$3 count=$4
  if ((SECONDS + 60 > BUDGET)); then echo "skipped $tag (t=${SECONDS}s)"; return; fi
  mkdir -p "$R/$tag"
  timeout 150 ncu --clock-control none "${SECTIONS[@]}" --kernel-name "regex:$kern" --launch-skip 4 --launch-count "$count" \
    -f -o "$R/$tag/rep" "${BIN:-.devcarry/bin/mlxcel}" bench attention --contexts "${ATTN_CTX:-131072}" --modes "$mode" \
    --shapes 32:8:128 --split-modes none --iters 2 > "$R/$tag/run.out" 2>&1
  echo "$tag: ncu rc=$?"
  ncu --import "$R/$tag/rep.ncu-rep" --page details > "$R/$tag/details.txt" 2>&1
  rm -f "$R/$tag/rep.ncu-rep"
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Registers Per|Grid Size|Block Size|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued" \
    "$R/$tag/details.txt" | sed -E 's/ +/ /g' | head -40
}
attn_ncu turbo4 turbo4 "mlxcel_decode" 1
attn_ncu fp16 fp16 "sdpa|flash|lean_reduction|sdpa_vector" 2
grep -E " us \(host" "$R"/*/run.out | head -8
echo "done at t=${SECONDS}s"
