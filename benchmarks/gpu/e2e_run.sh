# Shared by the device-call scripts (source it): `run TAG KV CTX [ENV=VALUE...]` runs one
# end-to-end generation of the synthetic Llama-3-8B 4-bit model (or $MODEL) with --profile
# and --json into $R/TAG-KV-CTX.{json,err} and prints the profile's key lines. $RUN_ENV
# (e.g. "MLXCEL_DEVICE_CLOCK=1") goes in front of every run's own variables.
# A run stops after $RUN_TIMEOUT seconds (default 300). $PIN_CPUS (e.g. "0-7") runs it under
# `taskset -c` (host time per step varied by up to 45% between runs in session 8).
# FILL=random-kv passes `--prompt-fill random-kv` (random cache contents instead of a
# prefill: a 128K run takes seconds instead of ~45 s; decode speed is unchanged).
# BIN picks the binary (default .devcarry/bin/mlxcel; .devcarry/ab/mlxcel after stage_ab.sh).
run() {
  local tag=$1 kv=$2 ctx=$3; shift 3
  local pin=()
  [ -z "${PIN_CPUS:-}" ] || pin=(taskset -c "$PIN_CPUS")
  timeout "${RUN_TIMEOUT:-300}" "${pin[@]}" env ${RUN_ENV:-} "$@" "${BIN:-.devcarry/bin/mlxcel}" generate --model "${MODEL:-synthetic:llama3-8b-4bit}" \
    --prompt-tokens "$ctx" --max-tokens "${TOKENS:-128}" --ignore-eos --profile --prefill-chunk 4096 \
    ${FILL:+--prompt-fill "$FILL"} --kv "$kv" --json > "$R/$tag-$kv-$ctx.json" 2> "$R/$tag-$kv-$ctx.err"
  echo "$kv $ctx $tag: $(grep -E 'decode \(2nd|host per|of which|device clock|host CPU|build parts|^error' \
    "$R/$tag-$kv-$ctx.err" | tr -s ' ' | tr '\n' ' ')"
}
