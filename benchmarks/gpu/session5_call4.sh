#!/usr/bin/env bash
# Session 5, device call 4 (~2.5 min): MLXCEL_POLL_WAIT on (default) vs off, same build
# (branch next/rope-fold rebased on main), turbo4 and fp16 at 4K, alternating.
set -uo pipefail
R=/tmp/s5c4; mkdir -p "$R"
for kv in turbo4 turbo4 fp16; do
  for pw in 1 0; do
    MLXCEL_POLL_WAIT=$pw .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens 4096 --max-tokens 128 \
      --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$kv-$pw-$RANDOM.json" 2> "$R/err" &&
      echo "$kv poll=$pw $(grep -E 'decode \(2nd|host per|of which' "$R/err" | tr -s ' ' | tr '\n' ' ')"
  done
done
tar czf "$OUT/poll.tgz" -C "$R" .
