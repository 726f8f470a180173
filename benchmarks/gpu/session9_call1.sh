#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min; run with timeout_s 600), after
#   benchmarks/gpu/stage.sh
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session9_call1.sh
# Session 8 found the host's time per decode step varying by up to 45% between runs of one
# configuration, more than the effects being measured (ADR 0007). This call:
# 1. records the machine (cores, cgroup CPU quota, NUMA, GPU affinity, load);
# 2. checks `--prompt-fill random-kv` against a real prefill at 128K (turbo4 and fp16: the
#    device span per step must match; the fill has not run on a GPU yet);
# 3. with random-kv (seconds per run instead of ~45 s at 128K), three interleaved rounds at
#    128K, 32K and 4K of fp16 / turbo4 / turbo4 with MLX's byte limit lifted
#    (MLXCEL_LIFT_GRAPH_BYTES=1) / int8 / turbo4-asym, each run reporting its CPU time per
#    step (loop thread, process, preemptions), then one round pinned (PIN_CPUS, default
#    the GPU's CPU affinity from nvidia-smi topo, else 0-7);
# 4. prints medians and ranges (benchmarks/gpu/repeats_summary.py).
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
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
BUDGET=${BUDGET:-520}
timed() { # timed SECONDS_NEEDED TAG KV CTX [ENV...]
  local need=$1; shift
  if ((SECONDS + need > BUDGET)); then echo "skipped $* (t=${SECONDS}s)"; return; fi
  run "$@"
}
big=${BIG:-131072}
# 2. random-kv vs a real prefill (the prefill runs cost ~45 s each at 128K).
RUN_TIMEOUT=150
timed 60 prefill turbo4 "$big"
FILL=random-kv timed 30 fill turbo4 "$big"
# 3. interleaved rounds, random-kv.
export FILL=random-kv
for ctx in $big ${CTXS:-32768 4096}; do
  need=$((ctx > 65536 ? 25 : 12)); RUN_TIMEOUT=$((ctx > 65536 ? 120 : 60))
  for round in 1 2 3; do
    # Rotate the order each round so no config always runs first.
    configs=("fp16" "turbo4" "turbo4 lift" "int8" "turbo4-asym")
    for i in 0 1 2 3 4; do
      c=${configs[$(((i + round) % 5))]}; kv=${c% *}; extra=""; [ "$c" = "turbo4 lift" ] && extra=lift
      if [ -n "$extra" ]; then timed "$need" "r$round$extra" "$kv" "$ctx" MLXCEL_LIFT_GRAPH_BYTES=1
      else timed "$need" "r$round" "$kv" "$ctx"; fi
    done
  done
done
pin=${PIN:-$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/ {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+-[0-9]+$/) {print $i; exit}}')}
pin=${pin:-0-7}; echo "pinned round: taskset -c $pin"
for c in fp16 turbo4 int8; do PIN_CPUS=$pin timed 25 "r9pin" "$c" "$big"; done
python3 benchmarks/gpu/repeats_summary.py "$R" | tee "$R/summary.md"
python3 benchmarks/gpu/timeline.py "$R"/prefill-*.json "$R"/fill-*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|first to last" "$R/timeline.txt"
echo "done at t=${SECONDS}s"
