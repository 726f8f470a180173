#!/usr/bin/env bash
# The runs of 2026-12-06-kv-boundary-ends-apart.md: `mlxcel perplexity` (4 x 1024 tokens of
# Hamlet, each mode against fp16 on the same windows) with the boundary layers counted apart.
# Session 60 ran them with an experiment build that read the two counts from a variable; this
# script asks for the same layers through `--kv-boundary-layers FIRST,LAST` (m1 with 2,0 was
# rerun that way: the same KLD, PPL and top-1 to the last digit).
#   run.sh OUT_DIR   (models as in ../shared/reference/models-and-corpora.md)
set -euo pipefail
OUT=${1:?usage: run.sh OUT_DIR}
B=${B:-target/release/mlxcel}
M2=${M2:-/tmp/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
M3=${M3:-/tmp/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}
mkdir -p "$OUT"
run() { local tag=$1 layers=$2 kv=$3; shift 3
  $B perplexity --file shakespeare:hamlet --ctx 1024 --chunks 4 --kv "$kv" --kv-boundary-layers "$layers" --json "$@" > "$OUT/$tag.json"; }
for l in 2,2 2,0 2,1 3,0 4,0; do
  run "m1-$l" "$l" turbo4
  run "m2-$l" "$l" turbo4 --model "$M2"
  run "m3-$l" "$l" turbo4 --model "$M3"
done
for l in 2,2 3,0; do
  run "a1-$l" "$l" turbo4-asym
  run "a2-$l" "$l" turbo4-asym --model "$M2"
  run "t1-$l" "$l" turbo3
  run "t2-$l" "$l" turbo3 --model "$M2"
done
