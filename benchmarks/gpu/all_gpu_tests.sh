#!/usr/bin/env bash
# Every test of the staged GPU test binaries (.devcarry/bin/tests/gpu_*, benchmarks/gpu/stage.sh)
# in one device call, JOBS processes at a time (e2e_run.sh's suite_parallel). Why: after a kernel
# change each of the ~36 tests has to pass again, one process takes about an hour for them, and
# six processes ran 21 of them in 205 s on an H100 (session 73).
#   source .devcarry/mlx-cuda/activate.sh && BUDGET=400 bash benchmarks/gpu/all_gpu_tests.sh
# JOBS (default 8) is shared among the binaries by their test counts (at least one each). SKIP:
# test names to leave out, space-separated (e.g. the `passed:` lines of an earlier call).
# Carry `.devcarry/mlx-cuda`, `.devcarry/bin/tests` and, where `carry_size.sh` says it fits,
# `.devcarry/ptx-cache`.
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir gputests
BUDGET=${BUDGET:-400}
JOBS=${JOBS:-8}
dir=${TEST_BIN_DIR:-.devcarry/bin/tests}
read -r -a skips <<< "${SKIP:-}"
bins=() counts=() total=0
for b in "$dir"/gpu_*; do
  [ -x "$b" ] || continue
  n=$("$b" --list 2> /dev/null | grep -c ': test$')
  bins+=("$(basename "$b")") counts+=("$n") total=$((total + n))
done
((total > 0)) || { echo "no GPU test binaries in $dir"; exit 1; }
echo "card: $(card_name); binaries $(cat .devcarry/bin/COMMIT 2> /dev/null); $total tests"
for i in "${!bins[@]}"; do
  jobs=$((JOBS * counts[i] / total))
  ((jobs >= 1)) || jobs=1
  suite_parallel "${bins[i]}" "$jobs" "${skips[@]}" > "$R/${bins[i]}.txt" 2>&1 &
done
wait
for b in "${bins[@]}"; do cat "$R/$b.txt"; done
echo "done at t=${SECONDS}s"
