set -u
export NCU_OUT=$OUT
timeout 250 bash benchmarks/gpu/ncu_e2e.sh fp16,turbo4 4096
timeout 200 bash benchmarks/gpu/ncu_e2e.sh fp16,turbo4 32768
cd $OUT && tar czf ncu-e2e.tgz ncu-e2e && rm -rf ncu-e2e
