#!/usr/bin/env bash
# KV-cache sweep: decode speed and memory of `mlxcel generate` per KV mode and context, with
# every mode's ratio to fp16 measured in the same run. Rounds are interleaved (mode order
# rotated each round) and the summary takes medians: host time per decode step varies
# between runs of one configuration by up to 45% on the H200 (ADR 0007), so one sample per
# mode decides nothing.
#
#   benchmarks/bench_kv_cache.sh [options]
#     --model M       model (default with a GPU backend: synthetic:llama3-8b-4bit, random
#                     weights of Llama-3-8B's shapes; on MLX's CPU backend give a small one)
#     --modes LIST    KV modes, space- or comma-separated (default: fp16 int8 int8r turbo4-asym turbo4)
#     --contexts LIST prompt lengths (default: 4096 32768 131072)
#     --tokens N      tokens generated per run (default 128; tok/s is over the second half)
#     --repeats N     interleaved rounds (default 3)
#     --fill F        random-kv (default: random keys/values instead of the prefill, decode
#                     speed only; a 128K run takes seconds) or model (real prefill: also
#                     prefill speed and peak memory including prefill activations)
#     --out DIR       results folder (default benchmarks/results/kv-sweep-DATE-HOST)
#     --bin PATH      mlxcel binary (default target/release/mlxcel, built if missing)
#     --timeout S     seconds per run before it is stopped (default 900)
#     -h, --help
#
# Writes DIR/runs/<tag>-<mode>-<ctx>.{json,err} (each run's `--json` stats and `--profile`),
# DIR/machine.txt, DIR/sweep.csv (one row per run) and DIR/summary.md (per context and mode:
# median steady decode tok/s and its range, ratio to fp16, host and device ms per step, KV
# cache MB and its compression against fp16, peak memory). Environment variables such as
# MLXCEL_DEVICE_CLOCK=1 (device time per step on CUDA) pass through to every run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
command_line="benchmarks/bench_kv_cache.sh $*"
model="" modes="fp16 int8 int8r turbo4-asym turbo4" contexts="4096 32768 131072" tokens=128 repeats=3
fill=random-kv out="" bin="" timeout_s=900
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --modes) modes=${2//,/ }; shift 2 ;;
    --contexts) contexts=${2//,/ }; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --fill) fill=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench_kv_cache.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$fill" in random-kv | model) ;; *) echo "bench_kv_cache.sh: --fill must be random-kv or model, got '$fill'" >&2; exit 2 ;; esac
for n in "$tokens" "$repeats" "$timeout_s" $contexts; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_kv_cache.sh: '$n' is not a positive integer (--tokens, --repeats, --timeout, --contexts)" >&2; exit 2; }
done
((tokens >= 4)) || { echo "bench_kv_cache.sh: --tokens must be at least 4 (tok/s is taken over the second half)" >&2; exit 2; }
if [ -z "$bin" ]; then
  bin="$root/target/release/mlxcel"
  [ -x "$bin" ] || (cd "$root" && cargo build --release -p mlxcel-cli)
fi
[ -x "$bin" ] || { echo "bench_kv_cache.sh: no mlxcel binary at $bin" >&2; exit 2; }
if [ -z "$model" ]; then
  if "$bin" info 2>/dev/null | grep -qE "^backend +(cuda|metal)"; then model=synthetic:llama3-8b-4bit; else
    echo "bench_kv_cache.sh: no GPU backend found; give --model (the 8B synthetic model is far too slow on MLX's CPU backend)" >&2; exit 2
  fi
fi
out=${out:-"$root/benchmarks/results/kv-sweep-$(date +%Y-%m-%d)-$(hostname -s)"}
mkdir -p "$out/runs"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "host: $(hostname)"; echo "model: $model"
  echo "modes: $modes"; echo "contexts: $contexts"; echo "tokens: $tokens"; echo "repeats: $repeats"; echo "fill: $fill"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') ($(nproc 2>/dev/null) cores)"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  # The whole of `info` (a `| head` here killed the script under pipefail once info's flag
  # list outgrew the head: SIGPIPE on info, exit 141, no message).
  "$bin" info 2>&1 || echo "mlxcel info failed (rc $?)"
} > "$out/machine.txt"
read -r -a mode_list <<< "$modes"
n=${#mode_list[@]} total=$((repeats * n * $(wc -w <<< "$contexts"))) done_runs=0
fill_args=()
[ "$fill" = model ] || fill_args=(--prompt-fill "$fill")
for ctx in $contexts; do
  for ((round = 1; round <= repeats; round++)); do
    for ((i = 0; i < n; i++)); do
      mode=${mode_list[$(((i + round - 1) % n))]}
      tag="r$round" base="$out/runs/$tag-$mode-$ctx"
      done_runs=$((done_runs + 1))
      printf '[%d/%d] %s ctx %s round %d ... ' "$done_runs" "$total" "$mode" "$ctx" "$round"
      if timeout "$timeout_s" "$bin" generate --model "$model" --prompt-tokens "$ctx" --max-tokens "$tokens" \
        --ignore-eos --profile --json --prefill-chunk 4096 "${fill_args[@]}" --kv "$mode" > "$base.json" 2> "$base.err"; then
        grep -E "^decode \(2nd half\)" "$base.err" | sed -E 's/ +/ /g; s/decode \(2nd half\) //; s/ \(.*//'
      else
        echo "failed (rc $?; $base.err: $(grep -m1 -E '^error' "$base.err" || tail -n1 "$base.err"))"
      fi
    done
  done
done
python3 "$root/benchmarks/repeats_summary.py" "$out/runs" --csv "$out/sweep.csv" > "$out/summary.md"
{ echo; echo "Model $model, $tokens tokens per run, $repeats interleaved rounds, fill $fill; $(date -u +%Y-%m-%d)."; echo "Machine: machine.txt. Command: $command_line"; } >> "$out/summary.md"
cat "$out/summary.md"
echo "wrote $out/summary.md, $out/sweep.csv and $out/runs/"
