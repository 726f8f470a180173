#!/usr/bin/env bash
# Session 9's first device call (H200, ~8 min; run with timeout_s 600), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh 7ee2dd3
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session9_call1.sh
# Session 8 left the GEMVs (~3.2 ms of every step at ~1.4 TB/s) as the main device cost and
# the 128K turbo4 attention kernel at ~50% of its copy roofline; neither had a full ncu
# profile. This call, decisive parts first:
# 1. records the machine (cores, cgroup CPU quota, NUMA, GPU affinity, load);
# 2. gpu_fused_rope: the fused attention output declared [B, 1, Hq * D]
#    (`attend_rope_flat`, written after session 8's last call) must equal the heads layout;
# 3. ncu's full set on the four GEMV kernels of one decode step (benchmarks/gpu/ncu_gemv.sh);
# 4. ncu's full set on the turbo4 attention kernel at 128K (one Llama-3-8B layer);
# 5. `--prompt-fill random-kv` against a real prefill at 128K (turbo4: the device span per
#    step must match; the fill has not run on a GPU yet);
# 6. 4K, A = 7ee2dd3 (session 8's build) vs B = this build (4 MLX nodes fewer per layer:
#    stacked qkv -> reshape + split; 1 fewer per compressed layer: flat attention output),
#    fp16 / turbo4, three interleaved rounds, real prefill; B's MLX ops per step.
# Runs are skipped once $BUDGET seconds are near, so results always come back.
set -uo pipefail
R=/tmp/s9c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s9c1.tgz" -C "$R" .' EXIT
{
  echo "== nproc: $(nproc)"; echo "== cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo n/a)"
  echo "== loadavg: $(cat /proc/loadavg)"; lscpu 2>/dev/null | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA|CPU max MHz)"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader && nvidia-smi topo -m
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
timeout 150 .devcarry/bin/tests/gpu_fused_rope --test-threads=1 --nocapture > "$R/test-gpu_fused_rope.txt" 2>&1
echo "gpu_fused_rope rc=$? $(grep -E 'test result|fused rope:|panicked' "$R/test-gpu_fused_rope.txt" | tr '\n' ' ' | cut -c1-400)"
NCU_OUT="$R" NCU_TIMEOUT=200 bash benchmarks/gpu/ncu_gemv.sh 2>&1 | head -120
echo "t=${SECONDS}s"
mkdir -p "$R/ncu-attn"
timeout 120 ncu --clock-control none --set full --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 \
  -f -o "$R/ncu-attn/turbo4-131072" .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 \
  --shapes 32:8:128 --split-modes none --iters 2 > "$R/ncu-attn/run.out" 2>&1
echo "ncu attention rc=$?"
ncu --import "$R/ncu-attn/turbo4-131072.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Grid Size|Block Size|Warp Cycles Per Issued Instruction|L2 Hit Rate|Mem Busy|Max Bandwidth|Issue Slots Busy|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler|Dynamic Shared)" \
  "$R/ncu-attn/details.txt" | sed -E 's/ +/ /g' | head -40
echo "t=${SECONDS}s"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-520}
big=${BIG:-131072}
RUN_TIMEOUT=100
timed 60 prefill turbo4 "$big"
FILL=random-kv timed 30 fill turbo4 "$big"
# 4K A/B, real prefill (build A has no --prompt-fill).
RUN_TIMEOUT=60
for round in 1 2 3; do
  for kv in fp16 turbo4; do
    BIN=.devcarry/ab/mlxcel timed 10 "r${round}A" "$kv" "${SMALL:-4096}"
    timed 10 "r${round}B" "$kv" "${SMALL:-4096}"
  done
done
# The node count per step (build profile on: a diagnostic run, not timed): turbo4 B should
# queue ~156 fewer MLX ops per step than A (545 in session 8).
MLXCEL_BUILD_PROFILE=1 timed 10 opsB turbo4 "${SMALL:-4096}"
MLXCEL_BUILD_PROFILE=1 timed 10 opsB fp16 "${SMALL:-4096}"
python3 benchmarks/repeats_summary.py "$R" | tee "$R/summary.md"
grep -H "ops per step" "$R"/ops*.err
python3 benchmarks/gpu/timeline.py "$R"/prefill-*.json "$R"/fill-*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|first to last" "$R/timeline.txt"
echo "done at t=${SECONDS}s"
