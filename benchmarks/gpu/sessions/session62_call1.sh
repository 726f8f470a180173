#!/usr/bin/env bash
# Session 62, first call (~5 min): the kernel disk cache (MLXCEL_KERNEL_DISK_CACHE, on).
# Every process used to spend ~16 s in NVRTC at its first decode step (session 62's probe:
# a second `generate` of 1024 tokens on a warm H100, prefill 2.3 s, 16 decode tokens 16.0 s).
# - fp16 at 1024 tokens, real prefill: twice with the cache off (MLX compiles in memory, as
#   before), then twice with it on (the first writes the images, the second should find them:
#   predicted decode of 16 tokens ~16 s -> < 1 s);
# - turbo4 at 4096 tokens twice with it on (its own kernels);
# - steady decode with the images compiled here against MLX's own compile, turbo4 and fp16 at
#   32K (random-kv, device clock): the same kernel text, another header; predicted equal.
#   xz -df .devcarry/bin/mlxcel.xz .devcarry/bin/tests/*.xz; chmod +x .devcarry/bin/mlxcel .devcarry/bin/tests/* &&
#   source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/sessions/session62_call1.sh
set -uo pipefail
# shellcheck source=benchmarks/gpu/e2e_run.sh
. benchmarks/gpu/e2e_run.sh
call_dir s62c1
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); binaries $(cat .devcarry/bin/COMMIT 2>/dev/null)"
gen off1 fp16 1024 MLXCEL_KERNEL_DISK_CACHE=0
gen off2 fp16 1024 MLXCEL_KERNEL_DISK_CACHE=0
gen on1 fp16 1024
gen on2 fp16 1024
gen on1 turbo4 4096
gen on2 turbo4 4096
grep -h "kernel disk cache" "$R"/*.err | head -5
PTX=$(ls -d /tmp/mlx/*/ptx | head -1)
echo "MLX's PTX cache $PTX: $(ls "$PTX" | grep -c '^custom_kernel_.*\.ptx$') custom-kernel images, $(ls "$PTX" | grep -vc '^custom_kernel_') other files, $(du -sh "$PTX" | cut -f1)"
ls -la "$PTX" | grep custom_kernel_ | head -40 > "$R/ptx-listing.txt"
# MLX's own kernels without mlxcel's images: the cache off there means MLX compiles ours.
MLXONLY=/tmp/ptx-mlxonly
rm -rf "$MLXONLY" && mkdir -p "$MLXONLY"
find "$PTX" -maxdepth 1 -type f ! -name 'custom_kernel_*' -exec cp {} "$MLXONLY/" \;
e2e_setup 560 120
for round in 1 2; do
  run "r$round-on" turbo4 32768
  run "r$round-off" turbo4 32768 MLXCEL_KERNEL_DISK_CACHE=0 MLX_PTX_CACHE_DIR=$MLXONLY
done
run r1-on fp16 32768
run r1-off fp16 32768 MLXCEL_KERNEL_DISK_CACHE=0 MLX_PTX_CACHE_DIR=$MLXONLY
for f in "$R"/r*.err; do echo "$(basename "$f"): $(grep -E '^prefill' "$f" | tr -s ' ')"; done
finish_call
