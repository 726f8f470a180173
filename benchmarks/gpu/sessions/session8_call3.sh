#!/usr/bin/env bash
# Session 8, third device call (H200, ~6 min), same staging as session8_call1.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session8_call3.sh
# Why turbo4's host time per step grows from 32K to 128K (call 2: build 1.49 -> 2.65 ms,
# submit 2.34 -> 5.18 ms; the device idles 2.06 ms per step at 128K). turbo4 at 128K with
# the build profile: default; no fp16 boundary layers (no cuDNN SDPA child graphs, which
# MLX re-instantiates every step); boundary layers on our fused fp16 kernel instead of
# cuDNN; MLX_MAX_MB_PER_BUFFER large (no size-triggered graph commits: the 128K packed
# caches pass MLX's 1000 MB per graph every ~3 layers); MLX_MAX_OPS_PER_BUFFER=400 (fewer,
# larger graphs). fp16 default first and last for the same-call ratio.
set -uo pipefail
R=/tmp/s8c3; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s8c3.tgz" -C "$R" .' EXIT
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
RUN_ENV="MLXCEL_DEVICE_CLOCK=1 MLXCEL_BUILD_PROFILE=1"
ctx=${CTX:-131072}
RUN_TIMEOUT=$((ctx > 65536 ? 150 : 90))
run first fp16 "$ctx"
run default turbo4 "$ctx"
run nobound turbo4 "$ctx" MLXCEL_KV_BOUNDARY_LAYERS=0
run fusedfp16 turbo4 "$ctx" MLXCEL_FUSED_FP16=1
run mb turbo4 "$ctx" MLX_MAX_MB_PER_BUFFER=1000000
run ops400 turbo4 "$ctx" MLX_MAX_OPS_PER_BUFFER=400
run last fp16 "$ctx"
python3 - "$R" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        s = json.load(open(f))["stats"]
    except Exception as e:
        print(os.path.basename(f), "unreadable:", e); continue
    parts = dict(s.get("decode_build_parts_seconds_steady") or [])
    print(f"{os.path.basename(f):<28} build {1e3 * sum(parts.values()):6.3f} ms  "
          + ", ".join(f"{k} {1e3 * v:.3f}" for k, v in parts.items()))
PY
python3 benchmarks/gpu/timeline.py "$R"/*.json > "$R/timeline.txt" 2>&1
grep -E "^/tmp|host submit|host build|first to last" "$R/timeline.txt" | head -40
