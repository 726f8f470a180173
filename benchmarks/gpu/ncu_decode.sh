#!/usr/bin/env bash
# Nsight Compute on the fused decode kernels (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ncu_decode.sh [modes] [contexts]
# Profiles one call (main kernel + split merge) per mode, at the clocks the card runs at, from `mlxcel bench attention`
# (Llama-3-8B layer shape) and writes the Speed-of-Light / occupancy / launch sections.
set -uo pipefail
MODES="${1:-turbo4,turbo4-asym}"
CTXS="${2:-131072}"
DEST="${NCU_OUT:-/tmp/mlxcel-run}/ncu"; mkdir -p "$DEST"
for mode in ${MODES//,/ }; do
  for ctx in ${CTXS//,/ }; do
    ncu --clock-control none --kernel-name "regex:mlxcel_(decode|merge)" --launch-skip 6 --launch-count 2 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis --section WarpStateStats \
      .devcarry/bin/mlxcel bench attention --contexts "$ctx" --modes "$mode" --shapes 32:8:128 \
      --split-modes none --iters 2 > "$DEST/ncu-$mode-$ctx.txt" 2>&1
    grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Compute \(SM\)|Issue Slots Busy|Warp Cycles Per Issued|Dynamic Shared" "$DEST/ncu-$mode-$ctx.txt" | sed "s/^/$mode $ctx: /"
  done
done
