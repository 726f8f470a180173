set -u
export TOKENS=128
MLXCEL_PARITY_MODES=fp16 SKIP_BENCH=1 RUN_TAG=final bash benchmarks/gpu/fused_decode_run.sh 4096,32768,131072
