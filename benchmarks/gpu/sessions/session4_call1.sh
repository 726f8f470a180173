set -u
export TOKENS=128
MLXCEL_PARITY_MODES=fp16,int8,turbo4-asym,turbo4,turbo3 TESTS=gpu_fused_decode RUN_TAG=a BENCH_ARGS="--contexts 4096,32768,131072 --modes fp16,int8,turbo4-asym,turbo4 --shapes 32:8:128 --split-modes none --iters 30" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== env A/B ops1000"
MLX_MAX_OPS_PER_BUFFER=1000 TESTS=none SKIP_BENCH=1 RUN_TAG=ops1000 MODES="fp16 turbo4" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== env A/B ops40"
MLX_MAX_OPS_PER_BUFFER=40 TESTS=none SKIP_BENCH=1 RUN_TAG=ops40 MODES="fp16 turbo4" bash benchmarks/gpu/fused_decode_run.sh 4096
echo "== env A/B nographs"
MLX_USE_CUDA_GRAPHS=0 TESTS=none SKIP_BENCH=1 RUN_TAG=nographs MODES="fp16 turbo4" bash benchmarks/gpu/fused_decode_run.sh 4096
