#!/usr/bin/env bash
# Next session's second device call (H200, ~7 min; timeout_s 600), same staging as
# session18_call1.sh (carry .devcarry/mlx-cuda, .devcarry/bin/mlxcel):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session18_call2.sh
# Two questions session 17 left open (NOTES "Next lever (after session 17)"):
# 1. Where a 32K step goes, now that 32K sits at the 1.3x line (turbo4 1.26x in session 17,
#    1.29-1.39x in session 16; turbo4-asym 1.11-1.23x): in-situ kernel sums of fp16, turbo4
#    and turbo4-asym at 32K (ncu_e2e.sh, 2 steps each). The last 32K breakdown is session 14's
#    (attention 22.5 us + merge 4.6 us per call) from before the fp16+int8 ends, WIDE and FTZ.
#    Decides whether 32K's next lever is the GEMVs (shared with fp16, ~2.3 ms) or the
#    attention's fixed part (~7 us per call, 28 calls).
# 2. int8 at 128K ran 4.81 ms per step in session 17 against 5.52 in session 16: FTZ (the only
#    change reaching that kernel) or the host? int8 end to end at 128K, FTZ on / off, two
#    interleaved rounds with the device clock, beside the host's submit time.
# CPU dry run: MODEL=synthetic:/tmp/tiny.json LONG=1024 CTX=512 NCU=0 BIN=target/release/mlxcel
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s18c2
if [ "${NCU:-1}" = 1 ]; then
  FILL=random-kv NCU_OUT="$R/insitu" timeout 300 bash benchmarks/gpu/ncu_e2e.sh fp16,turbo4,turbo4-asym "${CTX:-32768}" 8,2 2>&1 | tail -45
fi
e2e_setup 540 80
export FLAG_MODES=int8 FLAG_ROUNDS=2
flag_rounds MLXCEL_MMA_FTZ 34 "${LONG:-131072}"
finish_call
