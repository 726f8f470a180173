#!/usr/bin/env bash
# quality of boundary storage choices for turbo4: KLD vs fp16 (4 x 1024 tokens of Hamlet)
B=/work/main/target/release/mlxcel
run() { local tag=$1; shift; /usr/bin/time -f "%e s" $B perplexity --file shakespeare:hamlet --ctx 1024 --chunks 4 --kv turbo4 --json "$@" > /tmp/kld/$tag.json 2> /tmp/kld/$tag.err; echo "$tag $(tail -1 /tmp/kld/$tag.err)"; }
run m1-fp16int8 --kv-boundary-type fp16+int8
run m1-fp16turbo4 --kv-boundary-type fp16+turbo4
run m1-none --kv-boundary-layers 0
while [ ! -f /tmp/models/fetch.done ]; do sleep 10; done
M2=/tmp/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
M3=/tmp/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
run m2-fp16int8 --model $M2 --kv-boundary-type fp16+int8
run m2-fp16turbo4 --model $M2 --kv-boundary-type fp16+turbo4
run m2-none --model $M2 --kv-boundary-layers 0
run m3-fp16int8 --model $M3 --kv-boundary-type fp16+int8
run m3-fp16turbo4 --model $M3 --kv-boundary-type fp16+turbo4
run m3-none --model $M3 --kv-boundary-layers 0
echo ALLDONE
