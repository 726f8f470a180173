#!/usr/bin/env bash
# Next session's first device call (H200, ~6 min; timeout_s 600), after benchmarks/gpu/stage.sh
# (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel, .devcarry/bin/tests/gpu_fused_decode):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session18_call1.sh
# MLXCEL_MMA_WIDE16 (off, written after session 17's device calls, never run): the turbo4
# tensor-core kernel in CTAs of 16 warps around the one pair table, the ring cut to 4 stages
# (204800 bytes of shared memory; NVRTC: 127 registers, so 16 x 128 threads fill the SM's 64K
# registers exactly). Why: with 12 warps ncu still finds no eligible warp in 38% of the
# cycles at 128K (48.54 us, 4.78 cycles per issued instruction). But 8 -> 12 warps per SM
# (WIDE, session 17) moved the issued warps per scheduler only 0.61 -> 0.63 and the kernel
# 50.66 -> 49.79 us, far below that change's 1.4x prediction. Prediction now: -1 to -2% per
# call at 128K (~48.5 -> ~47.5 us), ~-0.03 ms per step; no gain if the 4-stage ring starves
# the warps. Cheap to try; a small or no gain says warps are not what holds the kernel.
# 1. the parity suite with WIDE16 on (turbo4: WIDE16 only changes table kernels);
# 2. bench attention, turbo4, WIDE16 off / on (one run each: the bench is noisy, +-10%);
# 3. ncu of the turbo4 kernel at 128K: default, WIDE16;
# 4. turbo4 at 128K and 32K end to end, WIDE16 on / off, two rounds each (device clock).
# If parity holds and 3-4 show it faster: default on (flags.rs, docs/usage.md).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTX=512 LONG=1024 CTXS=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c1
flag_parity wide16 120 MLXCEL_MMA_WIDE16=1
kernel_flag_ab MLXCEL_MMA_WIDE16 wide16
finish_call
