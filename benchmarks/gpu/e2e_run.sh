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
  echo "$kv $ctx $tag: $(grep -E 'decode \(2nd|host per|of which|submit thread|device clock|host CPU|kv appends|build parts|inside them|^error' \
    "$R/$tag-$kv-$ctx.err" | tr -s ' ' | tr '\n' ' ')"
}

# `gen TAG KV CTX [ENV=VALUE...]`: one generate of 16 tokens after a real prefill of CTX tokens
# (4096-token chunks) into $R/TAG-KV-CTX.{json,err}; prints its wall time, prefill and decode
# lines, and how many kernel disk cache warnings it logged (session 62's calls).
gen() {
  local tag=$1 kv=$2 ctx=$3 t0=$SECONDS rc; shift 3
  env "$@" timeout "${GEN_TIMEOUT:-240}" .devcarry/bin/mlxcel generate --model synthetic:llama3-8b-4bit --prompt-tokens "$ctx" \
    --max-tokens 16 --ignore-eos --profile --prefill-chunk 4096 --kv "$kv" --json > "$R/$tag-$kv-$ctx.json" 2> "$R/$tag-$kv-$ctx.err"
  rc=$?
  echo "$tag $kv $ctx ($*): rc=$rc wall $((SECONDS - t0)) s | $(grep -E '^(prefill|decode  |decode \(2nd)' "$R/$tag-$kv-$ctx.err" | tr -s ' ' | tr '\n' '|') disk-cache warnings: $(grep -c 'kernel disk cache' "$R/$tag-$kv-$ctx.err")"
}

# `unpack_binaries` (run when this file is sourced): the binaries travel xz-packed in
# .devcarry/bin (the device tool carries at most 64 MiB), and every device call replaces the
# machine's .devcarry with the carried copy, so binaries a previous call unpacked are packed
# again (session 67: a warm follow-up without the command line's `xz -d` exited 127). Unpacks
# whatever is still packed; nothing to do when the command line already did it. Only on a
# machine with an NVIDIA device: a dry run here (a stub nvidia-smi) leaves the staged files
# packed for the next carry.
unpack_binaries() {
  local f
  [ -e /dev/nvidia0 ] || return 0
  for f in .devcarry/bin/*.xz .devcarry/bin/tests/*.xz; do
    [ -e "$f" ] || continue
    xz -df "$f" && chmod +x "${f%.xz}"
  done
}
unpack_binaries

# The compiled-kernel cache carried between device calls. Why: every call may start a fresh
# machine, and a fresh machine compiles every kernel instantiation it meets with NVRTC (~2.4 s
# each; session 71's fused bit-identity test ran out of 150 s on compiles alone, the parity
# suite out of 360 s after 209 of its cases). The images of one call serve the next on any card
# of the same compute capability and MLX version: MLX names each module after a hash of the
# text it compiles, and our kernel texts include files named after a hash of their content
# (`include_stubs`), so an edited kernel never meets a stale image. `ptx_cache_in` (run when
# this file is sourced, on a GPU machine) points MLX's cache and ours at one folder per compute
# capability and MLX version ($MLX_PTX_CACHE_DIR unless already set) and seeds it from
# .devcarry/ptx-cache/<key>.tar.xz.NN, the parts an earlier call brought back; `ptx_cache_out`
# (from call_dir's exit trap) packs that folder into $OUT as the same parts (15 MiB each: the
# device tool brings back files of up to 16 MiB), when it holds images the seed did not. Keep
# them for the next call with `cp <files_at>/ptx-*.tar.xz.* .devcarry/ptx-cache/` (after
# removing the old parts). PTX_CACHE=0 leaves MLX's cache where the binaries put it.
ptx_cache_key() {
  local cap
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [ -n "$cap" ] || return 1
  echo "ptx-sm${cap}-mlx$(cat .devcarry/mlx-cuda/VERSION 2>/dev/null | tr -cd '0-9A-Za-z.')"
}
ptx_cache_files() { find "$MLX_PTX_CACHE_DIR" -type f | wc -l; }
# `ptx_cache_seed FROM`: unpacks the parts FROM/$PTX_KEY.tar.xz.* (if any) into the cache folder
# and counts its files into PTX_SEEDED.
ptx_cache_seed() {
  if compgen -G "$1/$PTX_KEY.tar.xz.*" > /dev/null; then
    cat "$1/$PTX_KEY.tar.xz."* | tar xJf - -C "$MLX_PTX_CACHE_DIR" 2> /dev/null ||
      echo "ptx cache: the parts in $1 did not unpack; compiling as usual"
  fi
  PTX_SEEDED=$(ptx_cache_files)
  echo "ptx cache: $PTX_SEEDED files seeded from $1 ($MLX_PTX_CACHE_DIR)"
}
ptx_cache_in() {
  [ -e /dev/nvidia0 ] && [ "${PTX_CACHE:-1}" = 1 ] || return 0
  PTX_KEY=$(ptx_cache_key) || return 0
  export MLX_PTX_CACHE_DIR=${MLX_PTX_CACHE_DIR:-/tmp/mlxcel-ptx/$PTX_KEY}
  mkdir -p "$MLX_PTX_CACHE_DIR"
  ptx_cache_seed .devcarry/ptx-cache
}
ptx_cache_out() {
  [ -n "${PTX_KEY:-}" ] && [ -n "${OUT:-}" ] && [ -d "${MLX_PTX_CACHE_DIR:-}" ] || return 0
  local n
  n=$(ptx_cache_files)
  ((n > ${PTX_SEEDED:-0})) || return 0
  rm -f "$OUT/$PTX_KEY.tar.xz."*  # a smaller pack must not leave an earlier pack's last parts
  tar cf - -C "$MLX_PTX_CACHE_DIR" . | xz -T0 -6 | split -b 15M -d - "$OUT/$PTX_KEY.tar.xz."
  echo "ptx cache: $n files packed into $(find "$OUT" -maxdepth 1 -name "$PTX_KEY.tar.xz.*" | wc -l) parts"
}
ptx_cache_in

# `call_dir NAME`: this device call's result folder, R=/tmp/NAME (emptied), packed into
# $OUT/NAME.tgz when the script exits (the device tool brings back at most 8 files).
call_dir() {
  R=/tmp/$1
  rm -rf "$R" && mkdir -p "$R"
  trap "tar czf \"\${OUT:-/tmp}/$1.tgz\" -C \"$R\" .; ptx_cache_out" EXIT
}

# `card_name`: the first GPU's name (empty without nvidia-smi), which every call prints beside
# the staged binaries' commit.
card_name() { nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1; }

# `table_if_h200 [ENV=VALUE...]`: on an H200 (the card issue 5 names) replaces this script with
# session61_call1.sh's H200 branch, the issue's end-to-end table, with the given settings;
# elsewhere prints the card and returns.
table_if_h200() {
  local gpu
  gpu=$(card_name)
  echo "card: $gpu; binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
  if [[ "$gpu" == *H200* ]]; then exec env SKIP_PAIRED=1 "$@" bash benchmarks/gpu/sessions/session61_call1.sh; fi
}

# `have NEED WHAT...`: true when NEED seconds are still left of $BUDGET (seconds since the script
# started; default 520); otherwise prints "skipped WHAT (t=...)" and fails. Every budget check of
# the call scripts goes through it, so a device call's results come back before its time limit.
have() {
  local need=$1; shift
  if ((SECONDS + need > ${BUDGET:-520})); then echo "skipped $* (t=${SECONDS}s)"; return 1; fi
}

# `timed NEED TAG KV CTX [ENV=VALUE...]`: `run`, unless fewer than NEED seconds are left of
# $BUDGET (`have`).
timed() {
  local need=$1; shift
  have "$need" "$@" || return 0
  run "$@"
}

# `interleaved CTX NEED CONFIG...`: three rounds at CTX of the configurations, each
# "TAG KV [ENV=VALUE...]", the order rotated each round (tags rROUND-TAG), each run `timed NEED`.
interleaved() {
  local ctx=$1 need=$2; shift 2
  local configs=("$@") n=$# round i c
  for round in 1 2 3; do
    for ((i = 0; i < n; i++)); do
      # shellcheck disable=SC2206
      c=(${configs[$(((i + round) % n))]})
      timed "$need" "r$round-${c[0]}" "${c[1]}" "$ctx" "${c[@]:2}"
    done
  done
}

# `rounds CTX NEED`: three interleaved rounds at CTX of fp16 / turbo4 / turbo4 with MLX's
# graph byte limit lifted / int8 / turbo4-asym (tags r1, r1lift, ...: repeats_summary.py),
# the order rotated each round so that no configuration always runs first.
rounds() {
  local ctx=$1 need=$2 round i c
  local configs=("fp16" "turbo4" "turbo4 lift" "int8" "turbo4-asym")
  for round in 1 2 3; do
    for i in 0 1 2 3 4; do
      c=${configs[$(((i + round) % 5))]}
      if [ "$c" = "turbo4 lift" ]; then timed "$need" "r${round}lift" turbo4 "$ctx" MLXCEL_LIFT_GRAPH_BYTES=1
      else timed "$need" "r$round" "$c" "$ctx"; fi
    done
  done
}

# `bench_ab VAR TAG`: `mlxcel bench attention` for $BENCH_MODES (default turbo4) at $CTXS
# (default 4K, 32K, 128K) on the Llama-3-8B layer shape, once with VAR=0 and once with VAR=1,
# into $R/bench-attn-TAG{0,1} (CSV + markdown, stderr), printing the per-call lines.
bench_ab() {
  local var=$1 tag=$2 v
  for v in 0 1; do
    env "$var=$v" timeout 100 "${BIN:-.devcarry/bin/mlxcel}" bench attention --contexts "${CTXS:-4096,32768,131072}" \
      --modes "${BENCH_MODES:-turbo4}" --shapes 32:8:128 --split-modes none --iters 50 \
      --out "$R/bench-attn-$tag$v" > /dev/null 2> "$R/bench-attn-$tag$v.err"
    echo "bench attention $var=$v rc=$?"; grep -E " us \(host" "$R/bench-attn-$tag$v.err"
  done
}

# `ncu_attention DIR [ENV=VALUE...]`: ncu (`--section` list in $NCU_SECTIONS, default
# SpeedOfLight, Occupancy, WarpStateStats, SchedulerStats, ComputeWorkloadAnalysis) of one
# decode-attention launch of $NCU_MODE (default turbo4) at $ATTN_CTX (default 128K) in `bench attention`, the details page into
# $R/DIR/details.txt (the report itself is deleted: too large to bring back); prints the
# key lines. Skipped when ncu is missing or fewer than 50 s are left of $BUDGET + 130.
ncu_attention() {
  local dir=$1; shift
  if ! ((SECONDS + 50 < ${BUDGET:-520} + 130)) || ! command -v ncu > /dev/null; then
    echo "skipped ncu $dir (t=${SECONDS}s)"; return
  fi
  local sections=() s
  for s in ${NCU_SECTIONS:-SpeedOfLight Occupancy WarpStateStats SchedulerStats ComputeWorkloadAnalysis}; do sections+=(--section "$s"); done
  mkdir -p "$R/$dir"
  env "$@" timeout $((${BUDGET:-520} + 130 - SECONDS)) ncu --clock-control none "${sections[@]}" --kernel-name "regex:mlxcel_decode" \
    --launch-skip 6 --launch-count 1 -f -o "$R/$dir/turbo4" "${BIN:-.devcarry/bin/mlxcel}" bench attention \
    --contexts "${ATTN_CTX:-131072}" --modes "${NCU_MODE:-turbo4}" --shapes 32:8:128 --split-modes none --iters 2 > "$R/$dir/run.out" 2>&1
  ncu --import "$R/$dir/turbo4.ncu-rep" --page details > "$R/$dir/details.txt" 2>&1
  rm -f "$R/$dir/turbo4.ncu-rep"
  echo "ncu $dir ($*):"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps|Stall|Warp Cycles Per Issued" \
    "$R/$dir/details.txt" | sed -E 's/ +/ /g' | head -16
}

# `ncu_sweep TAG [ENV=VALUE...]`: ncu durations of every decode-attention launch (mode
# $SWEEP_MODE, default turbo4) of
# `bench attention` (Llama-3-8B layer shape) at $SWEEP_CTXS (default 4K, 32K, 128K; 5
# iterations after the warm-up) with the given variables, into $R/sweep-TAG.csv. Single
# launches vary by +-3%; medians over many launches rank kernel variants (session 18).
# NCU_CACHE=none keeps the L2 between launches (ncu flushes it by default: every launch then
# loads q, the codebook and RoPE's frequencies from DRAM, which a decode step finds in L2);
# only meaningful where one layer's cache exceeds the 50 MB L2 (128K: 142 MB for turbo4).
ncu_sweep() {
  local tag=$1; shift
  env "$@" timeout 100 ncu --clock-control none ${NCU_CACHE:+--cache-control "$NCU_CACHE"} --metrics gpu__time_duration.sum --csv --page raw --print-units base \
    --kernel-name "regex:mlxcel_decode" "${BIN:-.devcarry/bin/mlxcel}" bench attention --contexts "${SWEEP_CTXS:-4096,32768,131072}" \
    --modes "${SWEEP_MODE:-turbo4}" --shapes 32:8:128 --split-modes none --iters 5 > "$R/sweep-$tag.csv" 2> "$R/sweep-$tag.err"
}

# `source_profile TAG KERNEL_REGEX SKIP CMD...`: ncu's SourceCounters and WarpStateStats of one
# launch of the kernels matching KERNEL_REGEX (after SKIP of them) in CMD: the SASS source page
# as $R/TAG-sass.csv.gz, the details page as $R/TAG-details.txt (the report itself is deleted:
# too large to bring back); prints the duration and stall lines and where the warp-state
# samples fall (source_samples.py: prologue / main loop / epilogue, top instructions).
# $NCU_FLAGS: more ncu options (insitu_source: the profiler range, the caches kept).
source_profile() {
  local tag=$1 kern=$2 skip=$3; shift 3
  # shellcheck disable=SC2086
  timeout 150 ncu --clock-control none ${NCU_FLAGS:-} --section SourceCounters --section WarpStateStats --kernel-name "regex:$kern" \
    --launch-skip "$skip" --launch-count 1 -f -o "$R/$tag" "$@" > "$R/$tag.out" 2>&1
  echo "$tag: source profile rc=$?"
  ncu --import "$R/$tag.ncu-rep" --page source --csv --print-source sass > "$R/$tag-sass.csv" 2> "$R/$tag-sass.err"
  echo "$tag: source page rc=$? $(wc -c < "$R/$tag-sass.csv") bytes; $(head -c 300 "$R/$tag-sass.err")"
  ncu --import "$R/$tag.ncu-rep" --page details > "$R/$tag-details.txt" 2>&1
  grep -E "Duration|Stall|Warp Cycles Per Issued|Grid Size|Registers Per|Issue Slots Busy|Eligible Warps|Achieved Occupancy|DRAM Throughput|No Eligible" \
    "$R/$tag-details.txt" | sed -E 's/ +/ /g' | head -20
  python3 benchmarks/gpu/source_samples.py "$R/$tag-sass.csv" 15
  gzip -f "$R/$tag-sass.csv"; rm -f "$R/$tag.ncu-rep"
}

# `insitu_source TAG KERNEL_REGEX SKIP [ENV=VALUE...]`: source_profile of one GEMV (or any
# kernel) launch inside a decode step: `mlxcel generate` at $CTX (default 32K, random-kv
# caches, $INSITU_KV: default turbo4) under the profiler range of decode step 8
# (MLXCEL_CUDA_PROFILE_STEPS), caches kept between kernels as a step keeps them, the SKIP-th
# launch matching KERNEL_REGEX in that step (e.g. gate/up's `qgemv4_silu` 10: layer 10's).
# Adds the scheduler, occupancy, launch and memory sections to the details page.
insitu_source() {
  local tag=$1 kern=$2 skip=$3; shift 3
  (
    for e in "$@"; do export "${e?}"; done
    export MLXCEL_CUDA_PROFILE_STEPS=8,1
    NCU_FLAGS="--profile-from-start off --cache-control none --section SchedulerStats --section Occupancy --section LaunchStats --section SpeedOfLight --section MemoryWorkloadAnalysis" \
      source_profile "$tag" "$kern" "$skip" "${BIN:-.devcarry/bin/mlxcel}" generate --model synthetic:llama3-8b-4bit \
      --prompt-tokens "${CTX:-32768}" --max-tokens 12 --ignore-eos --prefill-chunk 4096 --prompt-fill random-kv \
      --kv "${INSITU_KV:-turbo4}"
  )
  echo "$tag done t=${SECONDS}s"
}

# `sweep_medians TAG...`: each sweep's per-context medians and ranges (stderr); on stdout the
# tag with the lowest sum of the last two contexts' medians (sweep_medians.py).
sweep_medians() {
  python3 benchmarks/gpu/sweep_medians.py "$R" "${SWEEP_CTXS:-4096,32768,131072}" "$@"
}

# `sweep_best TAG "ENV..." [TAG "ENV..."]...`: an ncu_sweep per configuration (unless NCU=0 or
# ncu is missing), then on stdout the fastest tag by sweep_medians (the first tag without
# sweeps); the medians go to stderr.
sweep_best() {
  local args=("$@") tags=() i
  for ((i = 0; i < ${#args[@]}; i += 2)); do tags+=("${args[i]}"); done
  if [ "${NCU:-1}" != 1 ] || ! command -v ncu > /dev/null; then echo "${tags[0]}"; return; fi
  # shellcheck disable=SC2086
  for ((i = 0; i < ${#args[@]}; i += 2)); do ncu_sweep "${args[i]}" ${args[i + 1]}; done
  sweep_medians "${tags[@]}"
}

# `ab_if_faster BEST "ENV_ON" "ENV_OFF"`: unless BEST is `default`, two interleaved turbo4
# rounds (env_rounds) of ENV_ON against ENV_OFF at $CTX (default 32K) and $LONG (default 128K).
ab_if_faster() {
  echo "fastest at 32K + 128K: $1"
  [ "$1" != default ] || return 0
  FLAG_MODES=turbo4 FLAG_ROUNDS=2 env_rounds 22 "$2" "$3" "${CTX:-32768}"
  FLAG_MODES=turbo4 FLAG_ROUNDS=2 env_rounds 34 "$2" "$3" "${LONG:-131072}"
}

# `tokens_ab VAR KV TAG`: two short greedy runs at 1K (32 tokens) with VAR=0 (tag `TAG0`) and
# VAR=1 (`TAG1`), then whether their tokens match (one line). For flags whose two paths
# compute the same values (bit-identical kernels, folded ops with the same roundings).
tokens_ab() {
  local var=$1 kv=$2 tag=$3
  # fp16 at >= 256 cached positions runs MLX's SDPA as cuDNN's decode kernels, whose greedy
  # tokens vary from run to run (session 24): a difference there says nothing about VAR.
  [ "$kv" != fp16 ] || echo "note: fp16 greedy tokens at 1024 positions vary between identical runs (session 24)"
  TOKENS=32 timed 60 "${tag}0" "$kv" 1024 "$var=0"
  TOKENS=32 timed 60 "${tag}1" "$kv" 1024 "$var=1"
  python3 -c 'import json, sys
a, b = (json.load(open(f))["tokens"] for f in sys.argv[1:3])
d = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
print(sys.argv[3], sys.argv[4], "off/on tokens:", "match" if not d and len(a) == len(b) else f"first difference at {d[:1]}", len(a), len(b))' \
    "$R/${tag}0-$kv-1024.json" "$R/${tag}1-$kv-1024.json" "$kv" "$var" 2>&1 | tail -1
}

# `step_ab TAG FLAG KV CTX [ENV=VALUE...]`: one run (tag TAG) with the boolean FLAG A/B'd inside
# the process (MLXCEL_STEP_AB: blocks of 8 steps alternate it, so both arms share the machine
# and the process), $TOKENS tokens (default 192), random-kv caches, the device clock; prints
# each arm's host and device time per step.
step_ab() {
  local tag=$1 flag=$2 kv=$3 ctx=$4; shift 4
  RUN_ENV="MLXCEL_DEVICE_CLOCK=1" FILL=random-kv TOKENS=${TOKENS:-192} RUN_TIMEOUT=${RUN_TIMEOUT:-90} \
    run "$tag" "$kv" "$ctx" MLXCEL_STEP_AB="$flag" MLXCEL_STEP_AB_BLOCK=8 "$@" > /dev/null
  echo "$tag $kv $ctx $*: $(grep -h "step A/B" "$R/$tag-$kv-$ctx.err" | tr -s ' ' | tr '\n' ' ') t=${SECONDS}s"
}

# `env_rounds NEED "ENV_ON" "ENV_OFF" CTX...`: $FLAG_ROUNDS (default three) interleaved rounds
# per CTX of the modes in $FLAG_MODES (default turbo4 and fp16), runs with the variables
# ENV_ON (tags on<round>) and ENV_OFF (off<round>), the order flipped each round; each run
# needs NEED seconds of $BUDGET.
env_rounds() {
  local need=$1 on=$2 off=$3 ctx round kv; shift 3
  for ctx in "$@"; do
    for ((round = 1; round <= ${FLAG_ROUNDS:-3}; round++)); do
      for kv in ${FLAG_MODES:-turbo4 fp16}; do
        # shellcheck disable=SC2086
        if ((round % 2)); then
          timed "$need" "on$round" "$kv" "$ctx" $on
          timed "$need" "off$round" "$kv" "$ctx" $off
        else
          timed "$need" "off$round" "$kv" "$ctx" $off
          timed "$need" "on$round" "$kv" "$ctx" $on
        fi
      done
    done
  done
}

# `flag_rounds VAR NEED CTX...`: env_rounds with VAR=1 against VAR=0.
flag_rounds() {
  local var=$1 need=$2; shift 2
  env_rounds "$need" "$var=1" "$var=0" "$@"
}

# `ends_round ROUND CTX NEED CONFIG...`: one round at CTX of the configs "KV ENDS" (ENDS: the
# boundary layers' cache, any --kv-boundary-type value, set through MLXCEL_KV_BOUNDARY_TYPE;
# int8r also with MLXCEL_INT8R_FUSED=1), their order rotated by ROUND so that no configuration
# always runs first; tags r<round> (fp16 ends), r<round>i8, r<round>i8r, r<round>e<ends in
# letters and digits> otherwise (repeats_summary.py).
ends_round() {
  local round=$1 ctx=$2 need=$3 i kv ends; shift 3
  local configs=("$@")
  for ((i = 0; i < ${#configs[@]}; i++)); do
    read -r kv ends <<< "${configs[$(((i + round) % ${#configs[@]}))]}"
    case $ends in
      int8) timed "$need" "r${round}i8" "$kv" "$ctx" MLXCEL_KV_BOUNDARY_TYPE=int8 ;;
      int8r) timed "$need" "r${round}i8r" "$kv" "$ctx" MLXCEL_KV_BOUNDARY_TYPE=int8r MLXCEL_INT8R_FUSED=1 ;;
      fp16 | "") timed "$need" "r$round" "$kv" "$ctx" MLXCEL_KV_BOUNDARY_TYPE=fp16 ;;
      *) timed "$need" "r${round}e${ends//[^a-z0-9]/}" "$kv" "$ctx" MLXCEL_KV_BOUNDARY_TYPE="$ends" ;;
    esac
  done
}

# `config_rounds CTX NEED "ROUND..." KV...`: for each ROUND (e.g. "1 2"), one run at CTX of every
# --kv mode KV (tag r<round>), the order rotated by ROUND so that no mode always runs first;
# each run needs NEED seconds of $BUDGET.
config_rounds() {
  local ctx=$1 need=$2 rounds=$3 round i; shift 3
  local configs=("$@")
  for round in $rounds; do
    for ((i = 0; i < ${#configs[@]}; i++)); do
      timed "$need" "r$round" "${configs[$(((i + round) % ${#configs[@]}))]}" "$ctx"
    done
  done
}

# `table_rounds KV...`: the issue's end-to-end table for the --kv modes KV: two interleaved
# rounds at each context of $CTXS (default 128K and 32K; runs need 36 s of $BUDGET at >= 128K,
# else 22), one round at $SHORT (default 4K, 16 s), then how many runs logged each boundary
# storage.
table_rounds() {
  local ctx need kv
  for ctx in ${CTXS:-131072 32768}; do
    need=36; [ "$ctx" -ge 131072 ] || need=22
    config_rounds "$ctx" "$need" "1 2" "$@"
  done
  for kv in "$@"; do timed 16 r1 "$kv" "${SHORT:-4096}"; done
  grep -h "boundary layers (the first" "$R"/*.err | sed -E 's/^.*(boundary layers)/\1/' | sort | uniq -c
}

# `issue_table KV...`: the issue's table as sessions 46-47 ran it: 128K round 1, 32K (128
# tokens), 128K round 2, then 4K, each round rotating the --kv modes KV (config_rounds); runs
# need 40 / 30 / 40 / 16 s of $BUDGET (set e2e_setup first).
issue_table() {
  config_rounds 131072 40 "1" "$@"
  TOKENS=128 config_rounds 32768 30 "1" "$@"
  config_rounds 131072 40 "2" "$@"
  config_rounds 4096 16 "1" "$@"
}

# `gpu_test NAME SECONDS PATTERN [FILTER]`: runs the staged GPU test binary NAME
# (.devcarry/bin/tests/NAME, benchmarks/gpu/stage.sh; only the tests matching FILTER if given)
# one test at a time into $R/test-NAME.txt and prints its exit status with the lines matching
# PATTERN (and the test summary).
gpu_test() {
  local name=$1 secs=$2 pattern=$3
  timeout "$secs" ".devcarry/bin/tests/$name" --test-threads=1 --nocapture ${4:+"$4"} > "$R/test-$name.txt" 2>&1
  echo "$name rc=$? $(grep -E -A1 "test result|panicked|$pattern" "$R/test-$name.txt" | tr '\n' ' ' | cut -c1-900)"
  # A call may run one test binary several times (filters; the same filter with other
  # settings named by $TEST_TAG): keep each run's output.
  mv "$R/test-$name.txt" "$R/test-$name-${4:-all}${TEST_TAG:+-$TEST_TAG}.txt"
}

# `budget_test NAME SECONDS PATTERN [FILTER]`: gpu_test, unless it could run past $BUDGET (seconds
# since the script started; default 520), so a device call's results come back in time.
budget_test() {
  have "$2" "$1" "${4:-}" || return 0
  gpu_test "$@"
}

# `suite_rest NAME DONE...`: the staged GPU test binary NAME but for the tests DONE (those that
# already passed), one at a time, in what is left of $BUDGET, into $R/test-rest.txt; prints
# its exit status (124: the time ran out) and each test's name, result and summary lines. A
# fresh machine's NVRTC compiles make a whole suite longer than one call: the names that
# printed ok go into DONE for the next call.
suite_rest() {
  local name=$1 left=$((${BUDGET:-520} - SECONDS)) skips=() t; shift
  for t in "$@"; do skips+=(--skip "$t"); done
  if ((left <= 60)); then echo "skipped the rest of $name (t=${SECONDS}s)"; return; fi
  timeout "$left" ".devcarry/bin/tests/$name" --test-threads=1 --nocapture "${skips[@]}" > "$R/test-rest.txt" 2>&1
  echo "rest of $name: rc=$? (limit ${left}s)"
  grep -E "^test |^ok$|test result|panicked|cases|checks" "$R/test-rest.txt" | tail -60
}

# `suite_parallel NAME JOBS DONE...`: suite_rest with JOBS tests at a time, each in its own
# process (`--exact`), all stopped when $BUDGET runs out. Why: one test binary runs its tests one
# at a time (they set process-wide MLXCEL_* flags), and on a warm H100 with the kernel cache each
# took 17-160 s (session 73), so the two binaries' 36 tests need about an hour in one process,
# two sessions' device budget. Each process gets its own copy of the kernel cache: MLX 0.32
# writes an image it compiled in place (an ofstream on the final name; ours go through a
# rename), so a process reading it while another writes could load half a file. The images the
# copies gain are merged back after all have ended.
# Per test, $R/par-NAME/TEST.txt; prints each test's exit status (124: stopped by the budget)
# with its summary lines, then the names that passed (the next call's DONE).
suite_parallel() {
  local name=$1 jobs=$2 left=$((${BUDGET:-520} - SECONDS)) dir; shift 2
  local bin=${TEST_BIN_DIR:-.devcarry/bin/tests}/$name
  if ((left <= 60)); then echo "skipped the parallel rest of $name (t=${SECONDS}s)"; return; fi
  dir=$R/par-$name
  mkdir -p "$dir" && : > "$dir/results.txt"
  "$bin" --list 2> /dev/null | sed -n 's/: test$//p' | grep -vxF -f <(printf '%s\n' "$@" "") > "$dir/todo.txt"
  PAR_BIN=$bin PAR_DIR=$dir PAR_END=$(($(date +%s) + left)) \
    xargs -P "$jobs" -I{} bash -c 'par_one "$1"' _ {} < "$dir/todo.txt"
  if [ -n "${MLX_PTX_CACHE_DIR:-}" ]; then
    local c
    # Images already there stay: `--update=none` (coreutils 9.3 on; the device's warns at
    # `-n`), else `-n` (coreutils 9.1 here knows only that).
    for c in "$dir"/cache-*; do
      [ -d "$c" ] || continue
      cp -r --update=none "$c"/. "$MLX_PTX_CACHE_DIR"/ 2> /dev/null || cp -rn "$c"/. "$MLX_PTX_CACHE_DIR"/
      rm -rf "$c"
    done
  fi
  echo "parallel rest of $name: $(wc -l < "$dir/todo.txt") tests, $jobs at a time, limit ${left}s"
  sort "$dir/results.txt"
  echo "passed: $(awk '$2 == "rc=0" {print $1}' "$dir/results.txt" | sort | tr '\n' ' ')"
}
# One test of suite_parallel (in xargs' shell: exported below). SECONDS restarts at 0 in each
# shell, so the deadline travels as the clock's epoch second (PAR_END).
par_one() {
  local t=$1 left rc t0=$SECONDS cache=()
  left=$((PAR_END - $(date +%s)))
  if ((left <= 5)); then echo "$t rc=skipped" >> "$PAR_DIR/results.txt"; return; fi
  if [ -n "${MLX_PTX_CACHE_DIR:-}" ]; then
    cp -r "$MLX_PTX_CACHE_DIR" "$PAR_DIR/cache-$t"
    cache=("MLX_PTX_CACHE_DIR=$PAR_DIR/cache-$t")
  fi
  env "${cache[@]}" timeout "$left" "$PAR_BIN" --exact "$t" \
    --test-threads=1 --nocapture > "$PAR_DIR/$t.txt" 2>&1
  rc=$?
  echo "$t rc=$rc $((SECONDS - t0))s $(grep -E "panicked|cases|checks|steps" "$PAR_DIR/$t.txt" | tr '\n' ' ' | cut -c1-400)" >> "$PAR_DIR/results.txt"
}
export -f par_one

# `bg_test TAG NAME SECONDS PATTERN [FILTER]`: gpu_test in the background, its line into
# $R/bg-TAG.txt: a test whose GPU work is a few small launches between NVRTC compiles (CPU)
# can overlap ncu sweeps. `bg_wait` waits for it and prints that line.
bg_test() {
  BG_TAG=$1; shift
  (gpu_test "$@" > "$R/bg-$BG_TAG.txt") &
  BG_PID=$!
}
bg_wait() {
  wait "$BG_PID"
  cat "$R/bg-$BG_TAG.txt"
}

# `ncu_gemv TAG BENCH_ARGS...`: ncu device times (caches flushed, the card's clocks) of
# `mlxcel bench gemv BENCH_ARGS...` (variables set by the caller, e.g. MLXCEL_QMV_POST=1, pass
# through), $GEMV_METRICS beside the duration, into $R/ncu-TAG.csv.gz; prints and keeps
# ($R/ncu-TAG-medians.txt) the medians per kernel, grid and run of consecutive launches
# (ncu_kernel_medians.py --runs: o_proj and down share some kernel names and grids).
ncu_gemv() {
  local tag=$1; shift
  timeout "${NCU_GEMV_TIMEOUT:-120}" ncu --clock-control none --kernel-name regex:qgemv4 --csv \
    --metrics "${GEMV_METRICS:-gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread}" \
    "${BIN:-.devcarry/bin/mlxcel}" bench gemv "$@" > "$R/ncu-$tag.csv" 2> "$R/ncu-$tag.err"
  echo "ncu $tag rc=$? t=${SECONDS}s"
  python3 benchmarks/gpu/ncu_kernel_medians.py "$R/ncu-$tag.csv" --runs | sed -e 's/custom_kernel_mlxcel_//' \
    -e 's/dram__throughput.avg.pct_of_peak_sustained_elapsed/dram%/' -e 's/launch__registers_per_thread/regs/' \
    | tee "$R/ncu-$tag-medians.txt"
  gzip -f "$R/ncu-$tag.csv"
}

# `insitu_env TAG ENV=VALUE...`: in-situ kernel times at $CTX (default 32K; ncu_e2e.sh,
# $INSITU_KV (default turbo4), two decode steps) with the given variables, into $R/insitu-TAG
# (unless NCU=0 or ncu is missing). Medians per kernel: benchmarks/gpu/insitu_medians.py.
insitu_env() {
  [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null || return 0
  local tag=$1; shift
  echo "in situ, $*:"
  env "$@" FILL=random-kv NCU_OUT="$R/insitu-$tag" timeout 150 \
    bash benchmarks/gpu/ncu_e2e.sh "${INSITU_KV:-turbo4}" "${CTX:-32768}" 8,2 2>&1 | tail -12
}

# `insitu_budget KV CTX`: one mode's inputs to benchmarks/gpu/step_budget.py at CTX, each while
# $BUDGET lasts: a device-clock run (64 tokens, random-kv fill; $R/clock-KV-CTX.err's "device
# clock" line is --device-ms) and every kernel of two decode steps in situ (ncu, caches kept
# between kernels as in a real step: insitu_env; $R/insitu-KV-CTX/ncu-e2e/*.csv.gz).
insitu_budget() {
  local kv=$1 ctx=$2
  have 60 "device clock $kv $ctx" && RUN_ENV=MLXCEL_DEVICE_CLOCK=1 FILL=random-kv TOKENS=64 run clock "$kv" "$ctx"
  have 90 "ncu $kv $ctx" || return 0
  INSITU_KV=$kv CTX=$ctx insitu_env "$kv-$ctx" NCU_CACHE=none
  gzip -f "$R"/insitu-"$kv-$ctx"/ncu-e2e/*.csv 2> /dev/null
  echo "t=${SECONDS}s"
}

# `insitu_schedules SCHEDULE...`: insitu_env with MLXCEL_QMV_SCHEDULE=SCHEDULE for each (tag:
# the schedule with - for :), each only while 35 s of $BUDGET are left.
insitu_schedules() {
  local s
  for s in "$@"; do
    have 35 in situ "$s" || continue
    insitu_env "${s//:/-}" MLXCEL_QMV_SCHEDULE="$s"
  done
}

# `insitu_flags VAR...`: insitu_env with every VAR=0 (tag 0), then every VAR=1 (tag 1).
insitu_flags() {
  local e v envs
  for e in 0 1; do
    envs=()
    for v in "$@"; do envs+=("$v=$e"); done
    insitu_env "$e" "${envs[@]}"
  done
}

# `e2e_setup BUDGET RUN_TIMEOUT`: the end-to-end runs' settings every call script uses: the
# device clock in --profile, random-kv caches, 64 decode tokens, $BUDGET (default BUDGET:
# seconds of the call the runs may use) and each run's time limit.
e2e_setup() {
  RUN_ENV="MLXCEL_DEVICE_CLOCK=1"
  export BUDGET=${BUDGET:-$1} FILL=random-kv TOKENS=64
  RUN_TIMEOUT=$2
}

# `flag_parity TAG SECONDS ENV=VALUE...`: the fused-decode parity suite (staged
# gpu_fused_decode, `fused_decode_matches`, modes $PARITY_MODES, default turbo4) with the
# given flags set, into $R/test-parity-TAG.txt; prints its exit status and result lines.
flag_parity() {
  local tag=$1 secs=$2; shift 2
  env "$@" MLXCEL_PARITY_MODES="${PARITY_MODES:-turbo4}" timeout "$secs" \
    .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches > "$R/test-parity-$tag.txt" 2>&1
  echo "parity $tag ($*) rc=$? $(grep -E "test result|panicked|fused decode:" "$R/test-parity-$tag.txt" | tr '\n' ' ')"
}

# `kernel_flag_ab VAR TAG`: the A/B of one tensor-core kernel flag: `bench attention` off / on
# (bench_ab), ncu of the turbo4 kernel at 128K off / on (unless NCU=0; dirs ncu-default and
# ncu-TAG), then $FLAG_ROUNDS (default 2) interleaved end-to-end rounds of $FLAG_MODES
# (default turbo4) at $LONG (default 128K) and $CTX (default 32K) with the device clock.
kernel_flag_ab() {
  local var=$1 tag=$2
  bench_ab "$var" "$tag"
  e2e_setup 540 80
  if [ "${NCU:-1}" = 1 ]; then
    export NCU_SECTIONS="SpeedOfLight Occupancy WarpStateStats SchedulerStats"
    ncu_attention ncu-default "$var=0"
    ncu_attention "ncu-$tag" "$var=1"
  fi
  export FLAG_MODES=${FLAG_MODES:-turbo4} FLAG_ROUNDS=${FLAG_ROUNDS:-2}
  flag_rounds "$var" 34 "${LONG:-131072}"
  flag_rounds "$var" 22 "${CTX:-32768}"
}

# The attention launches' per-warp timeline (MLXCEL_ATTENTION_TIMING_PROBE=timeline, session 45):
# one `run` (tag `tl...`: repeats_summary.py skips it) whose stdout, the .json file, also carries
# the kernel's MLXCEL_TL lines; then attn_timeline.py's summary of the decode steps' launches
# (past the context: the random-kv fill's launches are stamped too).
timeline() {
  local tag=$1 kv=$2 ctx=$3; shift 3
  FILL=random-kv TOKENS=${TOKENS:-40} run "$tag" "$kv" "$ctx" MLXCEL_ATTENTION_TIMING_PROBE=timeline "$@"
  python3 benchmarks/gpu/attn_timeline.py --min-len $((ctx + 1)) "$R/$tag-$kv-$ctx.json" 2>&1 | grep -E "warp lines|medians|^no "
}
# `finish_call`: the runs' prompt ids replaced by a digest (strip_prompt_tokens.py), the medians of
# the call's runs into $R/summary.md (and runs.csv), printed,
# and the call's elapsed time.
finish_call() {
  python3 benchmarks/gpu/strip_prompt_tokens.py "$R"
  python3 benchmarks/repeats_summary.py "$R" --csv "$R/runs.csv" > "$R/summary.md" 2>&1
  cat "$R/summary.md"
  echo "done at t=${SECONDS}s"
}

# `generation_tests`: the mlxcel-models test binary staged by `STAGE_GENERATION_TESTS=1
# benchmarks/gpu/stage.sh` (gunzip'd first) on this GPU: the pipelined loop's token comparisons
# (four cache modes, with and without the submit thread) once, the step A/B test twice (a
# token difference between identical runs shows as one pass and one failure). Output in
# $R/test-*.txt.
generation_tests() {
  local t=.devcarry/bin/synthetic_and_hub i
  timeout 60 $t --test-threads=1 pipelined > "$R/test-pipelined.txt" 2>&1
  echo "pipelined rc=$? $(grep -E "test result|panicked|left|right" "$R/test-pipelined.txt" | tr '\n' ' ' | cut -c1-500)"
  for i in 1 2; do
    timeout 30 $t --test-threads=1 step_ab > "$R/test-step_ab$i.txt" 2>&1
    echo "step_ab $i rc=$? $(grep -E "test result|left|right" "$R/test-step_ab$i.txt" | tr '\n' ' ' | cut -c1-700)"
  done
}
