#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; run with timeout_s 600), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh 7ee2dd3
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session9_call1.sh
# Session 8 found the host's time per decode step varying by up to 45% between runs of one
# configuration, more than the effects being measured (ADR 0007). This call:
# 1. records the machine (cores, cgroup CPU quota, NUMA, GPU affinity, load);
# 2. gpu_fused_rope: the fused attention output declared [B, 1, Hq * D]
#    (`attend_rope_flat`, written after session 8's last call) must equal the heads layout;
# 3. checks `--prompt-fill random-kv` against a real prefill at 128K (turbo4: the device
#    span per step must match; the fill has not run on a GPU yet);
# 4. 4K, A = 7ee2dd3 (session 8's measured build) vs B = this build (4 MLX nodes fewer per
#    layer: stacked qkv -> reshape + split; 1 fewer per compressed layer: flat attention
#    output), fp16 / turbo4 / int8, three interleaved rounds, real prefill;
# 5. 128K with random-kv, three interleaved rounds of fp16 / turbo4 / turbo4 with MLX's
#    byte limit lifted (MLXCEL_LIFT_GRAPH_BYTES=1) / int8 / turbo4-asym, each run with its
#    CPU time per step (loop thread, process, preemptions);
# 6. medians and ranges (benchmarks/repeats_summary.py).
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
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-520}
big=${BIG:-131072}
RUN_TIMEOUT=150
timed 60 prefill turbo4 "$big"
FILL=random-kv timed 30 fill turbo4 "$big"
# 4K A/B, real prefill (build A has no --prompt-fill).
RUN_TIMEOUT=60
for round in 1 2 3; do
  for kv in fp16 turbo4 int8; do
    BIN=.devcarry/ab/mlxcel timed 10 "r${round}A" "$kv" "${SMALL:-4096}"
    timed 10 "r${round}B" "$kv" "${SMALL:-4096}"
  done
done
# The node count per step of both builds (build profile on: a diagnostic run, not timed):
# turbo4 B should queue ~156 fewer MLX ops per step than A (545 in session 8).
MLXCEL_BUILD_PROFILE=1 timed 10 opsB turbo4 "${SMALL:-4096}"
MLXCEL_BUILD_PROFILE=1 timed 10 opsB fp16 "${SMALL:-4096}"
export FILL=random-kv
RUN_TIMEOUT=120
rounds "$big" 25
python3 benchmarks/repeats_summary.py "$R" | tee "$R/summary.md"
grep -H "ops per step" "$R"/ops*.err
python3 benchmarks/gpu/timeline.py "$R"/prefill-*.json "$R"/fill-*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|first to last" "$R/timeline.txt"
echo "done at t=${SECONDS}s"
