#!/usr/bin/env bash
# Session 47, first device call (H200, ~8 min): MLXCEL_ROPE_TABLE (RoPE's cos/sin at the step's
# position from one table per step instead of each attention launch's sincosf, whose slow exact
# reduction session 46's ncu source counters found in every 128K launch's prologue, ~1.6 us).
# Its step A/B for turbo4 at 128K and 32K and turbo4-asym at 128K (prediction: -0.03 to -0.05
# ms per 128K step, level at 32K where no angle leaves the fast reduction), its bit identity
# (attention and attention append, every append format, both RoPE layouts, ~3K and 131K
# positions), and the same in-situ source profile of layer 10's 128K attention launch with it on
# (prediction: the prologue's ~490 samples down by ~150, no sincosf slow path).
#   xz -d .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz && chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session47_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s47c1
step_ab ab-rtab MLXCEL_ROPE_TABLE turbo4 131072
step_ab ab-rtab MLXCEL_ROPE_TABLE turbo4 32768
step_ab ab-rtab MLXCEL_ROPE_TABLE turbo4-asym 131072
gpu_test gpu_attention_append 240 "steps" rope_table
CTX=131072 insitu_source attn128k-rtab decode_attention_mma_app 10
python3 benchmarks/gpu/source_regions.py "$R/attn128k-rtab-sass.csv.gz"
finish_call
