#!/usr/bin/env bash
# Session 62, second call (~4 min, after session62_call1.sh on the same machine): the GPU
# parity suites with every kernel loaded from the images the kernel disk cache compiled
# (MLXCEL_KERNEL_DISK_CACHE, on): `fused_decode_matches_split_paths_or_falls_back` (every
# cache mode, contexts 1..4097, against the split paths) and the argmax tests, each twice:
# the first run compiles and writes the test's instantiations, the second finds them.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session62_call2.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s62c2
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
PTX=$(ls -d /tmp/mlx/*/ptx 2>/dev/null | head -1)
count() { ls "$PTX" 2>/dev/null | grep -c '^custom_kernel_.*\.ptx$'; }
echo "images before: $(count)"
for pass in 1 2; do
  t0=$SECONDS
  timeout 250 .devcarry/bin/tests/gpu_fused_decode --test-threads=1 --nocapture fused_decode_matches_split_paths_or_falls_back \
    > "$R/test-parity-$pass.txt" 2>&1
  echo "parity pass $pass: rc=$? $((SECONDS - t0)) s, images now $(count) | $(grep -E "test result|panicked|kernel disk cache" "$R/test-parity-$pass.txt" | head -3 | tr '\n' ' ')"
  t0=$SECONDS
  timeout 120 .devcarry/bin/tests/gpu_argmax --test-threads=1 > "$R/test-argmax-$pass.txt" 2>&1
  echo "argmax pass $pass: rc=$? $((SECONDS - t0)) s | $(grep -E "test result|panicked|kernel disk cache" "$R/test-argmax-$pass.txt" | head -3 | tr '\n' ' ')"
done
