#!/usr/bin/env bash
# Stage a second build of mlxcel for an A/B run on the H200 in one device call (device time
# is the scarce resource): the current code with a kernel patch applied, or another commit.
#   benchmarks/gpu/stage.sh                       # the current code -> .devcarry/bin
#   benchmarks/gpu/stage_ab.sh benchmarks/kernel-notes/decode_attention_v4_2.patch
#   # device: source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ab_run.sh
#   benchmarks/gpu/stage_ab.sh <git revision>     # e.g. main~3, to compare two commits
#   # device: source .devcarry/mlx-cuda/activate.sh && bash benchmarks/gpu/ab_builds.sh
# The tree is a git worktree under /tmp; its binaries go to .devcarry/ab/.
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
wt=/tmp/mlxcel-ab-worktree
if [ -f "$1" ]; then patch="$(realpath "$1")"; rev=HEAD; else patch=""; rev="$1"; fi
cd "$root"
git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "stage_ab.sh: $1 is neither a patch file nor a git revision" >&2; exit 2; }
git worktree remove --force "$wt" 2>/dev/null || true
git worktree add --detach "$wt" "$rev" >/dev/null
cd "$wt"
[ -z "$patch" ] || git apply "$patch"
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
# The device tool carries at most 64 MiB.
strip "$root/.devcarry/ab/mlxcel" "$root/.devcarry/ab/tests/"* 2>/dev/null || true
echo "staged ${patch:+$(basename "$patch") on }$rev into .devcarry/ab"
