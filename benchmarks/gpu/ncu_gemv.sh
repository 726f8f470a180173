#!/usr/bin/env bash
# Why the one-token 4-bit GEMVs run at ~1.4 TB/s (session 8: ~3.2 ms of every decode step
# for 4.52 GB of weights; the copy roofline is ~4.3 TB/s): Nsight Compute's full set on the
# first decode-step launches of each GEMV kernel (qkv, o_proj, gate/up + SiLU, down) of the
# synthetic Llama-3-8B 4-bit model, H200, after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ncu_gemv.sh
# Writes $DEST/gemv.ncu-rep and gemv-details.txt (every section) and prints, per launch,
# duration, DRAM/memory throughput, occupancy, registers, issue and warp-state lines.
# --clock-control none: the card's own clocks (METHOD.md). The profiler range is one decode step (MLXCEL_CUDA_PROFILE_STEPS).
set -uo pipefail
BIN="${MLXCEL_BIN:-.devcarry/bin/mlxcel}"
DEST="${NCU_OUT:-/tmp/mlxcel-run}/ncu-gemv"; mkdir -p "$DEST"
MLXCEL_CUDA_PROFILE_STEPS="${STEPS:-6,1}" timeout "${NCU_TIMEOUT:-240}" ncu --profile-from-start off --clock-control none \
  --set full --kernel-name regex:qgemv4 --launch-count "${LAUNCHES:-8}" -f -o "$DEST/gemv" \
  "$BIN" generate --model synthetic:llama3-8b-4bit --prompt-tokens "${CTX:-4096}" --max-tokens 12 \
  --ignore-eos --prefill-chunk 4096 --kv fp16 > "$DEST/ncu.out" 2> "$DEST/ncu.err"
echo "ncu rc=$? ($(tail -c 300 "$DEST/ncu.err" | tr '\n' ' '))"
# The details page (every section's metrics by their display names) for the record, and the
# lines that say where a memory-bound kernel loses bandwidth.
ncu --import "$DEST/gemv.ncu-rep" --page details > "$DEST/gemv-details.txt" 2> "$DEST/import.err"
grep -E "custom_kernel|^ +(Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Grid Size|Block Size|Warp Cycles Per Issued Instruction|L2 Hit Rate|Mem Busy|Max Bandwidth|Issue Slots Busy|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler)" \
  "$DEST/gemv-details.txt" | sed -E 's/ +/ /g' | head -200
# Stall reasons come with the source counters section as hints ("OPT"/"INF" lines).
grep -E -A2 "Warp State Statistics|long scoreboard|Long Scoreboard" "$DEST/gemv-details.txt" | sed -E 's/ +/ /g' | head -40
