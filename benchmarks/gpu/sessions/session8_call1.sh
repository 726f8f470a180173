#!/usr/bin/env bash
# Next session's first device call (H200, ~9 min; run with timeout_s 600), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh 795ebaf
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session8_call1.sh
# Build A = 795ebaf (session 7's last measured state), build B = the checked-out code, which
# adds host-side changes not yet run on a GPU: custom kernels on CUDA get T_<input> dtype
# template arguments only where their text uses them; int8 caches append K and V in one
# launch (int8_encode_kv.cu; the one-side int8 encoder now shares its row code); turbo4-asym
# appends its fp16 keys (RoPE inside) and turbo4 values in one launch
# (turbo_encode_kv_asym.cu) instead of MLX rope + slice_update + the value encoder.
# 1. GPU tests of B: the CUDA self-test (f32/f16/bf16 inputs of one kernel: distinct
#    compiled modules without T_b/T_alpha), the GEMV kernels, the fused decode parity for
#    turbo4 (tensor-core kernel, uses T_q) and turbo3 (CUDA-core kernel), and
#    gpu_fused_rope (int8 and turbo4-asym: the K+V launch with and without RoPE against
#    the one-side paths, bit for bit, and the stored key against the exact rotation).
# 2. fp16, turbo4, turbo4-asym and int8 at 4K (host-bound there), A and B interleaved, twice each, with
#    the build profile and device timeline on: did the host's build time per step fall, and
#    how many MLX ops each step queues (build B only: `ops per step`, decode_ops_per_step_steady).
set -uo pipefail
export MLXCEL_BUILD_PROFILE=1 MLXCEL_DEVICE_CLOCK=1
mkdir -p "${OUT:-/tmp/out}"
MLXCEL_PARITY_MODES=turbo4,turbo3 timeout 240 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture \
  > "${OUT:-/tmp/out}/gpu_fused_decode.txt" 2>&1
echo "gpu_fused_decode rc=$? $(grep -E 'test result|worst|panicked' "${OUT:-/tmp/out}/gpu_fused_decode.txt" | tr '\n' ' ' | cut -c1-600)"
TESTS="files_memory_device gpu_quantized_gemv gpu_fused_rope" MODES="fp16 turbo4 turbo4-asym int8" CTXS="${CTXS:-4096}" REPS=2 NCU_MODES=none \
  bash benchmarks/gpu/ab_builds.sh
python3 - /tmp/ab-run <<'PY'
# Build parts per run (ms per step): where the host time went, A vs B.
import glob, json, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    s = json.load(open(f))["stats"]
    parts = dict(s.get("decode_build_parts_seconds_steady") or [])
    tot = sum(parts.values()) * 1e3
    ops = s.get("decode_ops_per_step_steady")
    print(f"{os.path.basename(f):<28} build {tot:6.3f} ms  " + ", ".join(f"{k} {1e3 * v:.3f}" for k, v in parts.items())
          + (f"  ops/step {ops:.1f}" if ops else ""))
PY
