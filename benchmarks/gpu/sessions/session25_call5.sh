set -uo pipefail
. benchmarks/gpu/e2e_run.sh
call_dir s25c5
gpu_test gpu_fused_decode 150 "MLXCEL_MMA_PAIR: " paired_tiles
sweep_best default MLXCEL_MMA_PAIR=0 pair MLXCEL_MMA_PAIR=1 > /dev/null
e2e_setup 280 50
tokens_ab MLXCEL_MMA_PAIR turbo4 tok
FLAG_MODES="turbo4" FLAG_ROUNDS=1 flag_rounds MLXCEL_MMA_PAIR 25 131072
finish_call
