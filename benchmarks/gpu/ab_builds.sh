#!/usr/bin/env bash
# A/B of two commits in one device call, after benchmarks/gpu/stage.sh (build B = the checked
# out code, with its GPU tests, in .devcarry/bin) and benchmarks/gpu/stage_ab.sh <revision>
# (build A in .devcarry/ab; A_BIN names another binary):
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ab_builds.sh
# (ab_run.sh is the kernel-patch A/B: attention benchmark and parity of the patched build.)
# 1. TESTS (GPU test binaries of build B); 2. end-to-end decode of the synthetic Llama-3-8B
# 4-bit model, A and B interleaved, REPS times per KV mode and context (the spread between
# runs of one build is up to ~15%); 3. ncu kernel time per decode step (NCU_MODES).
# Env: MODEL (default synthetic:llama3-8b-4bit), TESTS, MODES, CTXS, REPS, TOKENS, NCU_MODES ("none" skips), EXTRA_B (env assignments
# for extra B runs, e.g. "MLXCEL_FOLD_MERGE=0"; each runs once per mode and context).
set -uo pipefail
FINAL="${OUT:-/tmp/out}"; mkdir -p "$FINAL"
R=/tmp/ab-run; rm -rf "$R"; mkdir -p "$R"
TOKENS="${TOKENS:-128}"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$R/gpu.txt"
for t in ${TESTS:-none}; do
  [ "$t" = none ] && continue
  echo "== $t"
  .devcarry/bin/tests/$t --test-threads=1 --nocapture > "$R/test-$t.txt" 2>&1
  grep -E "^test |test result|panicked|worst" "$R/test-$t.txt" | tail -8
done
run() {  # tag binary kv ctx [env...]
  local tag=$1 bin=$2 kv=$3 ctx=$4; shift 4
  env "$@" "$bin" generate --model "${MODEL:-synthetic:llama3-8b-4bit}" --prompt-tokens "$ctx" --max-tokens "$TOKENS" \
    --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$tag-$kv-$ctx.json" 2> "$R/$tag-$kv-$ctx.err"
  python3 - "$R/$tag-$kv-$ctx.json" "$tag" "$kv" "$ctx" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["stats"]
ms = lambda k: 1e3 * s.get(k, 0.0)
print(f"{sys.argv[4]:>6} {sys.argv[3]:<11} {sys.argv[2]:<22} {s['decode_steady_tokens_per_second']:7.2f} tok/s"
      f"  step {1e3 / max(s['decode_steady_tokens_per_second'], 1e-9):6.3f} ms"
      f"  host {ms('decode_host_seconds_per_step_steady'):6.3f} (submit {ms('decode_submit_seconds_per_step_steady'):6.3f})"
      f"  wait {ms('decode_wait_seconds_per_step_steady'):6.3f} ms"
      f"  step p50 {ms('decode_step_seconds_p50_steady'):6.3f} p90 {ms('decode_step_seconds_p90_steady'):6.3f} ms")
PY
}
A_BIN="${A_BIN:-.devcarry/ab/mlxcel}"
echo "== end to end (A = $A_BIN, B = .devcarry/bin/mlxcel)"
for ctx in ${CTXS:-4096}; do
  for kv in ${MODES:-turbo4 fp16}; do
    for rep in $(seq "${REPS:-2}"); do
      run "A$rep" "$A_BIN" "$kv" "$ctx"
      run "B$rep" .devcarry/bin/mlxcel "$kv" "$ctx"
    done
    for e in ${EXTRA_B:-}; do run "B-$e" .devcarry/bin/mlxcel "$kv" "$ctx" "$e"; done
  done
done
if [ "${NCU_MODES:-turbo4}" != none ]; then
  echo "== ncu: kernel time per decode step (8 steps from step 8)"
  for kv in ${NCU_MODES:-turbo4}; do
    for side in A B; do
      bin=.devcarry/bin/mlxcel; [ $side = A ] && bin="$A_BIN"
      echo "-- $side"
      MLXCEL_BIN=$bin NCU_OUT="$R/ncu-$side" bash benchmarks/gpu/ncu_e2e.sh "$kv" "${NCU_CTX:-4096}" 8,8 2>&1 | head -12
    done
  done
fi
tar czf "$FINAL/ab_results.tgz" -C "$R" .
