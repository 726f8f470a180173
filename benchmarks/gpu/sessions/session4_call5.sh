# Repeat runs (run-to-run spread) and host-cost A/Bs at 4K; repeats at 128K.
set -u
export TOKENS=128 TESTS=none SKIP_BENCH=1
MODES="fp16 turbo4" RUN_TAG=r1 bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== fp16 through the fused control kernel (MLXCEL_FUSED_FP16=1)"
MLXCEL_FUSED_FP16=1 MODES="fp16" RUN_TAG=fusedfp16 bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== turbo4 with encode + slice_update appends (MLXCEL_INPLACE_APPEND=0)"
MLXCEL_INPLACE_APPEND=0 MODES="turbo4" RUN_TAG=noinplace bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== repeat"
MODES="turbo4 fp16 int8 turbo4-asym" RUN_TAG=r2 bash benchmarks/gpu/fused_decode_run.sh 4096
MODES="turbo4 fp16" RUN_TAG=r3 bash benchmarks/gpu/fused_decode_run.sh 131072
