#!/usr/bin/env bash
# Next session's first device call (H200, ~4 min; timeout_s 400), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/slice_update_donation):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session23_call1.sh
# Session 22 found fp16's 128K decode step in two states (~6.2 ms while the host is < ~3 ms
# ahead of the GPU, ~9 ms once it is a whole step ahead). The lead: MLX's slice_update writes
# the fp16 cache in place only when nothing else holds the buffer; when the previous step's
# attention still does at encode time (the host a step ahead), it copies the layer's cache
# (268 MB per side at 128K). This call:
# 1. the probe (examples/slice_update_donation.rs) at 128K, 32 layers: appends that copied,
#    synchronous / pipelined / held control (the control must copy every append);
# 2. fp16 at 128K, 128 tokens, twice, with nvidia-smi logging clocks, power and the
#    clock-event reasons every 50 ms beside it (a clock or power state in the slow phase?),
#    --profile's `kv appends` line (the decode loop's own count of appends that copied the
#    layer's cache) and MLX's peak memory per run (copies allocate 268-MB buffers);
# 3. turbo4 at 128K once (the same log).
# CPU dry run: NCU=0 MODEL=synthetic:/tmp/tiny.json LONG=1024 PROBE_CTX=1024 PROBE_LAYERS=2 BIN=target/release/mlxcel PROBE=target/release/examples/slice_update_donation
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s23c1
timeout 150 "${PROBE:-.devcarry/bin/slice_update_donation}" --ctx "${PROBE_CTX:-131072}" \
  --layers "${PROBE_LAYERS:-32}" --steps 32 2>&1 | tee "$R/donation.txt"
e2e_setup 380 60
TOKENS=128
smi_pid=
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 50 > "$R/nvidia-smi.csv" 2>&1 &
  smi_pid=$!
fi
timed 40 r1 fp16 "${LONG:-131072}"
timed 40 r1 turbo4 "${LONG:-131072}"
timed 40 r2 fp16 "${LONG:-131072}"
[ -z "$smi_pid" ] || kill "$smi_pid"
finish_call
