#!/usr/bin/env bash
# Stage a second build of mlxcel with a kernel patch applied, for an A/B run against the
# current kernels on the H200 in one device call (device time is the scarce resource).
#   benchmarks/gpu/stage.sh                       # the current code -> .devcarry/bin
#   benchmarks/gpu/stage_ab.sh benchmarks/kernel-notes/decode_attention_v4_2.patch
#   # device: source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ab_run.sh
# The patched tree is a git worktree under /tmp; its binaries go to .devcarry/ab/.
set -euo pipefail
patch="$(realpath "$1")"
root="$(git rev-parse --show-toplevel)"
wt=/tmp/mlxcel-ab-worktree
cd "$root"
git worktree remove --force "$wt" 2>/dev/null || true
git worktree add --detach "$wt" HEAD >/dev/null
cd "$wt"
git apply "$patch"
CARGO_TARGET_DIR="$root/target/ab" cargo build --release -p mlxcel-cli
rm -rf "$root/.devcarry/ab" && mkdir -p "$root/.devcarry/ab/tests"
cp "$root/target/ab/release/mlxcel" "$root/.devcarry/ab/"
CARGO_TARGET_DIR="$root/target/ab" cargo test --release --no-run -p mlxcel-core --test gpu_fused_decode --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        shutil.copy(m["executable"], sys.argv[1] + "/gpu_fused_decode")
' "$root/.devcarry/ab/tests"
echo "staged $(basename "$patch") into .devcarry/ab"
