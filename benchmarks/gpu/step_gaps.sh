#!/usr/bin/env bash
# Where a decode step's non-kernel time goes (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/step_gaps.sh   (~8 min; the sections run in order of importance)
# 1. gpu_device_clock (the probe passes tokens through and orders its clocks on CUDA);
# 2. end to end at 4K with MLXCEL_DEVICE_CLOCK=1: device time from each step's first node to
#    its last, and idle between steps, next to the host's build/submit/wait split; compare
#    with the kernel time per step from benchmarks/gpu/ncu_e2e.sh (turbo4 4K: 3.34 ms,
#    session 5);
# 3. the same with the step's cuDNN SDPA removed (turbo4 without fp16 boundary layers; fp16
#    on the fused fp16 kernel): MLX re-instantiates a CUDA graph that holds a child graph it
#    cannot update (mlx/backend/cuda/device.cpp, subgraph_to_key), and cuDNN's SDPA comes
#    as a child graph; the device clock shows whether that costs device time;
# 4. MLXCEL_POLL_WAIT=1 against the blocking wait, alternating;
# 5. the CUDA graphs MLX builds for a short generation (MLX_SAVE_CUDA_GRAPHS_DOT_FILE): how
#    many per decode step, and their node types;
# 6. the GEMV kernels: parity with MLXCEL_QMV_PREFETCH=1 (gpu_quantized_gemv), ncu kernel
#    time per step with it off and on, and one ncu "full" section set on the qkv and
#    gate/up kernels (memory throughput, stall reasons, occupancy) to see what holds them
#    at 1.1-1.9 TB/s.
# Written in session 5 after its last device call: not yet run on the GPU. MODEL and CTX
# override the model and context (a dry run of the flow on the CPU machine:
# MODEL=synthetic:<small config.json> CTX=64 OUT=/tmp/x bash benchmarks/gpu/step_gaps.sh).
set -uo pipefail
R=/tmp/step-gaps; rm -rf "$R"; mkdir -p "$R"
# The archive is written however the script ends (also when the device call's limit stops it).
trap 'tar czf "${OUT:-/tmp}/step_gaps.tgz" -C "$R" .' EXIT
.devcarry/bin/tests/gpu_device_clock --nocapture > "$R/test-clock.txt" 2>&1
grep -E "device clock|test result|panicked" "$R/test-clock.txt"
run() {  # tag kv [env...]
  local tag=$1 kv=$2; shift 2
  ${WRAP:-} env "$@" .devcarry/bin/mlxcel generate --model "${MODEL:-synthetic:llama3-8b-4bit}" --prompt-tokens "${CTX:-4096}" --max-tokens 128 \
    --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$tag-$kv.json" 2> "$R/$tag-$kv.err"
  echo "$kv $tag: $(grep -E 'decode \(2nd|host per|of which|step time|device clock' "$R/$tag-$kv.err" | tr -s ' ' | tr '\n' ' ')"
}
run clock-nobound turbo4 MLXCEL_DEVICE_CLOCK=1 MLXCEL_KV_BOUNDARY_LAYERS=0
run clock-fusedfp16 fp16 MLXCEL_DEVICE_CLOCK=1 MLXCEL_FUSED_FP16=1
run clock fp16 MLXCEL_DEVICE_CLOCK=1
run clock turbo4 MLXCEL_DEVICE_CLOCK=1
run poll1 turbo4 MLXCEL_POLL_WAIT=1
run poll0 turbo4 MLXCEL_POLL_WAIT=0
run poll1b turbo4 MLXCEL_POLL_WAIT=1
run poll0b turbo4 MLXCEL_POLL_WAIT=0
mkdir -p "$R/dots"
MLX_SAVE_CUDA_GRAPHS_DOT_FILE="$R/dots/g" .devcarry/bin/mlxcel generate --model "${MODEL:-synthetic:llama3-8b-4bit}" \
  --prompt-tokens 64 --max-tokens 4 --ignore-eos --kv turbo4 > /dev/null 2>&1
echo "CUDA graphs for 64 prompt + 4 generated tokens (turbo4): $(ls "$R/dots" | wc -l)"
for f in $(ls "$R/dots" | sort -t_ -k2 -n | tail -4); do
  echo "  $f: $(grep -c 'label' "$R/dots/$f") labelled nodes, $(grep -ci 'kernel' "$R/dots/$f") kernel mentions, $(grep -ciE 'memset|memcpy|host|graph' "$R/dots/$f") other"
done
echo "== GEMV"
MLXCEL_QMV_PREFETCH=1 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-qmv-prefetch.txt" 2>&1
grep -E "worst|test result|panicked" "$R/test-qmv-prefetch.txt"
for pf in 0 1; do
  echo "-- MLXCEL_QMV_PREFETCH=$pf"
  MLXCEL_QMV_PREFETCH=$pf NCU_OUT="$R/ncu-pf$pf" bash benchmarks/gpu/ncu_e2e.sh turbo4 4096 8,2 2>&1 | grep -E "kernels|qgemv"
done
MLXCEL_CUDA_PROFILE_STEPS=8,1 timeout 240 ncu --profile-from-start off --set full --kernel-name regex:qgemv4 --launch-count 3 \
  .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 4096 --max-tokens 12 --ignore-eos \
  --prefill-chunk 4096 --kv turbo4 > "$R/ncu-qmv-full.txt" 2>&1
grep -E "qgemv4|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per SM|Duration|Stall|Warp Cycles Per Issued" "$R/ncu-qmv-full.txt" | head -60
cores="0-$(( $(nproc) > 4 ? 3 : $(nproc) - 1 ))"
echo "== run-to-run spread: 2 runs unpinned, 2 pinned to cores $cores (taskset), turbo4"
for i in 1 2; do run spread-$i turbo4; done
if command -v taskset > /dev/null; then
  for i in 1 2; do WRAP="taskset -c $cores" run pinned-$i turbo4; done
fi

