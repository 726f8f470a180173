#!/usr/bin/env bash
# In-situ kernel times of end-to-end decode steps (H200), after benchmarks/gpu/stage.sh:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ncu_e2e.sh [modes] [contexts] [first,count]
# (MLXCEL_BIN: another mlxcel binary, e.g. a second build staged for an A/B; NCU_OUT: dest;
# FILL=random-kv: random cache contents instead of a prefill, for long contexts; NCU_CACHE=none:
# keep the caches between kernels, as a decode step does, instead of ncu's flush before each.)
# Runs `mlxcel generate` on the synthetic Llama-3-8B 4-bit model under
# `ncu --profile-from-start off`; the generation loop opens the profiler range around the
# chosen decode steps (MLXCEL_CUDA_PROFILE_STEPS), so only their kernels are timed, at the
# card's clocks. Writes one CSV per run (kernel name, duration) and prints the sum per step
# and the largest kernel groups. Kernels are serialized under ncu: the sum excludes the
# gaps between kernels, which the step time without ncu includes.
set -uo pipefail
MODES="${1:-fp16,turbo4}"
CTXS="${2:-4096}"
STEPS="${3:-8,1}"
BIN="${MLXCEL_BIN:-.devcarry/bin/mlxcel}"
DEST="${NCU_OUT:-/tmp/mlxcel-run}/ncu-e2e"; mkdir -p "$DEST"
for mode in ${MODES//,/ }; do
  for ctx in ${CTXS//,/ }; do
    f="$DEST/ncu-e2e-$mode-$ctx.csv"
    MLXCEL_CUDA_PROFILE_STEPS="$STEPS" ncu --profile-from-start off --clock-control none ${NCU_CACHE:+--cache-control "$NCU_CACHE"} \
      --metrics gpu__time_duration.sum --csv --page raw --print-units base \
      "$BIN" generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
      --max-tokens 16 --ignore-eos --prefill-chunk 4096 ${FILL:+--prompt-fill "$FILL"} --kv "$mode" > "$f" 2> "$DEST/ncu-e2e-$mode-$ctx.err"
    python3 - "$f" "$mode" "$ctx" "${STEPS#*,}" <<'PY'
import csv, sys, collections, re
path, mode, ctx, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [l for l in open(path) if l.startswith('"')]
r = list(csv.reader(rows))
if len(r) < 3:
    print(mode, ctx, "no kernels profiled"); sys.exit()
h = r[0]; ki = h.index("Kernel Name"); ti = h.index("gpu__time_duration.sum")
groups = collections.Counter(); counts = collections.Counter(); total = 0.0
for row in r[2:]:
    name = re.sub(r"custom_kernel_(\w+?)_\d.*", r"custom_kernel_\1", row[ki])[:90]
    t = float(row[ti].replace(",", "")) / 1e3  # ns -> us
    groups[name] += t; counts[name] += 1; total += t
n = sum(counts.values())
# Each decode step ends with one argmax: count the steps the range really caught (session 5
# asked for 8 and got 7, so its per-step numbers were 7/8 of the truth).
caught = sum(c for k, c in counts.items() if "arg_reduce" in k or "argmax_token" in k)
if caught and caught != steps:
    print(f"{mode} {ctx}: asked for {steps} steps, the profiler range caught {caught}")
    steps = caught
print(f"{mode} {ctx}: {n / steps:.0f} kernels, {total / steps / 1e3:.3f} ms of kernel time per step")
for name, t in groups.most_common(14):
    print(f"   {t / steps:9.1f} us  {counts[name] / steps:5.0f}x  {name}")
PY
  done
done
