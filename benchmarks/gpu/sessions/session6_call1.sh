#!/usr/bin/env bash
# Session 6, first device call (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session6_call1.sh
# 1. Host/device timelines of pipelined decode steps at 4K (MLXCEL_DEVICE_CLOCK=1; read
#    with benchmarks/gpu/timeline.py): turbo4 and fp16, then turbo4 under MLX's graph
#    settings (no CUDA graphs; 1000 and 25 nodes per graph), with the polling wait, and
#    without the cuDNN SDPA boundary layers. Session 6's step_gaps.sh run showed fp16 at 4K
#    3.37 ms of device time inside a step and 2.53 ms idle between steps while the host
#    waited 1.94 ms per step: the device idles although the next step was queued.
# 2. Parity of the review refactors (fdef006, 6c4642b) and the tickets-stub fix:
#    gpu_device_clock, gpu_fused_rope, gpu_fused_decode (and the fold on turbo4/int8).
# 3. GEMV L2 prefetch (MLXCEL_QMV_PREFETCH) parity and ncu A/B per decode step.
set -uo pipefail
R=/tmp/s6c1; rm -rf "$R"; mkdir -p "$R"
trap 'tar czf "${OUT:-/tmp}/s6c1.tgz" -C "$R" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
run() {  # tag kv [env...]
  local tag=$1 kv=$2; shift 2
  env "$@" .devcarry/bin/mlxcel generate --model "${MODEL:-synthetic:llama3-8b-4bit}" --prompt-tokens "${CTX:-4096}" \
    --max-tokens 128 --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$tag-$kv.json" 2> "$R/$tag-$kv.err"
  echo "$kv $tag: $(grep -E 'decode \(2nd|host per|of which|device clock|^error' "$R/$tag-$kv.err" | tr -s ' ' | tr '\n' ' ')"
}
echo "== timelines"
run tl turbo4 MLXCEL_DEVICE_CLOCK=1
run tl fp16 MLXCEL_DEVICE_CLOCK=1
run tl-nographs turbo4 MLXCEL_DEVICE_CLOCK=1 MLX_USE_CUDA_GRAPHS=0
run tl-ops1000 turbo4 MLXCEL_DEVICE_CLOCK=1 MLX_MAX_OPS_PER_BUFFER=1000
run tl-ops25 turbo4 MLXCEL_DEVICE_CLOCK=1 MLX_MAX_OPS_PER_BUFFER=25
run tl-poll turbo4 MLXCEL_DEVICE_CLOCK=1 MLXCEL_POLL_WAIT=1
run tl-nobound turbo4 MLXCEL_DEVICE_CLOCK=1 MLXCEL_KV_BOUNDARY_LAYERS=0
run tl-nographs fp16 MLXCEL_DEVICE_CLOCK=1 MLX_USE_CUDA_GRAPHS=0
python3 benchmarks/gpu/timeline.py "$R"/tl*.json 2>&1 | tee "$R/timeline.txt"
echo "== parity"
for t in gpu_device_clock gpu_fused_rope gpu_fused_decode; do
  .devcarry/bin/tests/$t --test-threads=1 --nocapture > "$R/test-$t.txt" 2>&1
  echo "$t: $(grep -E 'test result|panicked|worst' "$R/test-$t.txt" | tr '\n' ' ' | cut -c1-600)"
done
MLXCEL_FOLD_MERGE=1 MLXCEL_PARITY_MODES=turbo4,int8 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture \
  fused_decode_matches > "$R/test-fold.txt" 2>&1
echo "fold: $(grep -E 'test result|panicked|fused decode:' "$R/test-fold.txt" | tr '\n' ' ' | cut -c1-400)"
echo "== GEMV prefetch"
MLXCEL_QMV_PREFETCH=1 .devcarry/bin/tests/gpu_quantized_gemv --test-threads=1 --nocapture > "$R/test-qmv-prefetch.txt" 2>&1
grep -E "worst|test result|panicked" "$R/test-qmv-prefetch.txt"
for pf in 0 1; do
  echo "-- MLXCEL_QMV_PREFETCH=$pf"
  MLXCEL_QMV_PREFETCH=$pf NCU_OUT="$R/ncu-pf$pf" bash benchmarks/gpu/ncu_e2e.sh turbo4 4096 8,2 2>&1 | grep -E "kernels|qgemv"
done
