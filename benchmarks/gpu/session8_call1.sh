#!/usr/bin/env bash
# Next session's first device call (H200, ~8 min), after
#   benchmarks/gpu/stage.sh && benchmarks/gpu/stage_ab.sh 795ebaf
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/session8_call1.sh
# Build A = 795ebaf (session 7's end state), build B = the checked-out code: custom kernels
# on CUDA get T_<input> dtype template arguments only where their text uses them.
# 1. GPU tests of B: the CUDA self-test (f32/f16/bf16 inputs of one kernel: distinct
#    compiled modules without T_b/T_alpha), the GEMV kernels, and the fused decode parity
#    for turbo4 (tensor-core kernel, uses T_q) and turbo3 (CUDA-core kernel).
# 2. fp16 and turbo4 at 4K and 32K, A and B interleaved, twice each, with the build profile
#    and device timeline on: did the host's build time per step fall, by how much.
set -uo pipefail
export MLXCEL_BUILD_PROFILE=1 MLXCEL_DEVICE_CLOCK=1
mkdir -p "${OUT:-/tmp/out}"
MLXCEL_PARITY_MODES=turbo4,turbo3 timeout 240 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture \
  > "${OUT:-/tmp/out}/gpu_fused_decode.txt" 2>&1
echo "gpu_fused_decode rc=$? $(grep -E 'test result|worst|panicked' "${OUT:-/tmp/out}/gpu_fused_decode.txt" | tr '\n' ' ' | cut -c1-600)"
TESTS="files_memory_device gpu_quantized_gemv" MODES="fp16 turbo4" CTXS="${CTXS:-4096 32768}" REPS=2 NCU_MODES=none \
  bash benchmarks/gpu/ab_builds.sh
python3 - /tmp/ab-run <<'PY'
# Build parts per run (ms per step): where the host time went, A vs B.
import glob, json, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    s = json.load(open(f))["stats"]
    parts = dict(s.get("decode_build_parts_seconds_steady") or [])
    tot = sum(parts.values()) * 1e3
    print(f"{os.path.basename(f):<28} build {tot:6.3f} ms  " + ", ".join(f"{k} {1e3 * v:.3f}" for k, v in parts.items()))
PY
