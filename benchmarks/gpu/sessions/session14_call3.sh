#!/usr/bin/env bash
# Session 14's second device call (H200, ~9.5 min; timeout_s 600), after benchmarks/gpu/stage.sh
# with MLXCEL_QKV_ENCODE on by default (call 1 = session14_call2.sh: bit-identical, tokens
# match, device span equal or lower):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session14_call3.sh
# 1. In-situ kernel times at 32K (ncu_e2e.sh, random-kv): turbo4 with the encode fold off and
#    on (the device cost of the fold without the host gaps of the span), fp16.
# 2. ncu of the turbo4 attention kernel at 128K with the raw stall-reason metrics
#    (smsp__average_warps_issue_stalled_*: session 12's details page had no breakdown).
# 3. int8 boundary layers (MLXCEL_KV_BOUNDARY_TYPE=int8) against the fp16 ends and fp16:
#    two interleaved rounds at 128K, then at 32K. Prediction (session11 ncu, bench
#    attention): ~-0.2 ms per step at 128K, ~-0.1 ms at 32K.
# `python3 benchmarks/repeats_summary.py DIR` gives the medians (tags r<round>, r<round>i8).
# CPU dry run: MODEL=synthetic:/tmp/tiny.json CTXS="512 256" TOKENS=8 NCU=0
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s14c3
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  FILL=random-kv NCU_OUT="$R/enc0" MLXCEL_QKV_ENCODE=0 timeout 80 bash benchmarks/gpu/ncu_e2e.sh turbo4 32768 8,2 2>&1 | tail -16
  FILL=random-kv NCU_OUT="$R/enc1" timeout 80 bash benchmarks/gpu/ncu_e2e.sh turbo4,fp16 32768 8,2 2>&1 | tail -32
  echo "ncu e2e done at t=${SECONDS}s"
  mkdir -p "$R/ncu-attn"
  timeout 90 ncu --clock-control none --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
    --section SourceCounters --kernel-name "regex:mlxcel_decode" --launch-skip 6 --launch-count 1 -f -o "$R/ncu-attn/turbo4-131072" \
    .devcarry/bin/mlxcel bench attention --contexts 131072 --modes turbo4 --shapes 32:8:128 --split-modes none --iters 2 \
    > "$R/ncu-attn/run.out" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072.ncu-rep" --page raw --csv > "$R/ncu-attn/raw.csv" 2>&1
  ncu --import "$R/ncu-attn/turbo4-131072.ncu-rep" --page details > "$R/ncu-attn/details.txt" 2>&1
  rm -f "$R/ncu-attn/turbo4-131072.ncu-rep"
  python3 - "$R/ncu-attn/raw.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
if len(rows) < 3:
    print("ncu attn: no rows"); sys.exit()
h, v = rows[0], rows[2]
out = []
for k, x in zip(h, v):
    if "issue_stalled" in k and k.endswith("per_issue_active.ratio"):
        try:
            out.append((float(x.replace(",", "")), k))
        except ValueError:
            pass
    if k in ("gpu__time_duration.sum", "smsp__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"):
        print("ncu attn", k, x)
for x, k in sorted(out, reverse=True)[:12]:
    print(f"ncu attn stall {x:7.3f}  {k}")
PY
  echo "ncu attn done at t=${SECONDS}s"
fi
RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
export BUDGET=${BUDGET:-545} FILL=random-kv
RUN_TIMEOUT=80
for ctx in ${CTXS:-131072 32768}; do
  need=34; [ "$ctx" -ge 131072 ] || need=22
  for round in 1 2; do TOKENS=64 ends_round "$round" "$ctx" "$need" "turbo4 fp16" "turbo4 int8" "fp16 fp16"; done
done
python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
cat "$R/summary.md"
echo "done at t=${SECONDS}s"
