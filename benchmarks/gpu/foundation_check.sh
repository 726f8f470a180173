#!/usr/bin/env bash
# Runs on the H200 (device tool), after benchmarks/gpu/stage.sh here:
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/foundation_check.sh
# Prints `mlxcel info` (text and JSON with the custom-kernel check) and runs the
# mlxcel-core test binaries on the CUDA backend. Logs go to $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
echo "== mlxcel info"
.devcarry/bin/mlxcel info 2>&1 | tee "$OUT/info.txt" || status=1
echo "== mlxcel info --json --kernel-check"
.devcarry/bin/mlxcel info --json --kernel-check > "$OUT/info.json" 2> "$OUT/info.stderr" || status=1
cat "$OUT/info.json" "$OUT/info.stderr"
for t in .devcarry/bin/tests/*; do
  name="$(basename "$t")"
  echo "== test binary $name"
  "$t" --test-threads=1 > "$OUT/test-$name.txt" 2>&1 || status=1
  grep -E "^test |test result|panicked|MLXCEL_TEST_SEED|relative error|got" "$OUT/test-$name.txt"
done
echo "foundation_check status=$status"
exit $status
