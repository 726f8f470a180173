set -u
export TOKENS=128
MLXCEL_PARITY_MODES=fp16,int8,turbo4-asym,turbo4,turbo3 RUN_TAG=a BENCH_ARGS="--contexts 4096,32768,131072 --modes fp16,int8,turbo4-asym,turbo4 --shapes 32:8:128 --split-modes none --iters 30" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== fp16 through MLX SDPA (MLXCEL_FUSED_DECODE=0)"
MLXCEL_FUSED_DECODE=0 TESTS=none SKIP_BENCH=1 RUN_TAG=sdpa MODES=fp16 bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== MLX quantized_matmul (MLXCEL_FUSED_QMV=0)"
MLXCEL_FUSED_QMV=0 TESTS=none SKIP_BENCH=1 RUN_TAG=noqmv MODES="fp16 turbo4" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== inline kernel text (MLXCEL_KERNEL_FILES=0)"
MLXCEL_KERNEL_FILES=0 TESTS=none SKIP_BENCH=1 RUN_TAG=inline MODES="turbo4" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== ncu e2e"
NCU_OUT=/tmp/ncu3 timeout 200 bash benchmarks/gpu/ncu_e2e.sh fp16,turbo4 4096
tar czf $OUT/ncu-e2e.tgz -C /tmp/ncu3 .
