#!/usr/bin/env bash
# Issue 5's microbenchmark by kernel time: one `mlxcel bench attention` run under ncu (every
# launch of MLX's fp16 SDPA, mlxcel's decode-attention and split-merge kernels and the copy
# roofline's kernel timed on the device alone), then `ncu_attention_table.py`'s table per shape,
# context and mode (us, TB/s, fraction of the copy kernel's TB/s, ratio to the SDPA's kernels)
# into $R/table.md, beside bench's own wall-time table in $R/bench/. Why both: bench's time per
# call is host-limited for the fused calls at <= 32K (ncu_attention_table.py's docstring).
#   R=/tmp/out [CTXS=...] [MODES=...] [SHAPES=...] [ITERS=5] bash benchmarks/gpu/attention_kernel_times.sh
# Needs ncu on PATH and .devcarry/bin/mlxcel (BIN overrides it).
set -uo pipefail
: "${R:?set R to the result folder}"
mkdir -p "$R"
command -v ncu > /dev/null || { echo "attention_kernel_times: ncu not found"; exit 1; }
timeout "${NCU_TIMEOUT:-420}" ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw --print-units base \
  --kernel-name-base demangled --kernel-name "regex:decode_attention|sdpa|lean_reduction|merge_splits|Negative" \
  "${BIN:-.devcarry/bin/mlxcel}" bench attention --contexts "${CTXS:-4096,8192,16384,32768,65536,131072}" \
  --modes "${MODES:-fp16,int8,turbo4-asym,turbo4,turbo3-asym,turbo3,turbo2-asym,turbo2}" \
  --shapes "${SHAPES:-32:8:128,32:8:64}" --split-modes none --iters "${ITERS:-5}" --copy-mib 1024 \
  --out "$R/bench" > "$R/ncu-kernels.csv" 2> "$R/bench.err"
rc=$?
echo "bench attention under ncu: rc=$rc"
python3 benchmarks/gpu/ncu_attention_table.py "$R/ncu-kernels.csv" "$R/bench" --copy-mib 1024 > "$R/table.md" 2> "$R/table.err"
echo "table rc=$?"; cat "$R/table.md" "$R/table.err"
gzip -9f "$R/ncu-kernels.csv"
exit $rc
