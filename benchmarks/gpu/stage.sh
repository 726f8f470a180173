#!/usr/bin/env bash
# Stage everything a GPU run needs into .devcarry/ (ignored by git, carried by the device
# tool): the MLX CUDA payload, the release `mlxcel` binary, the mlxcel-core GPU test
# binaries (gpu_*, and files_memory_device for its custom-kernel self-test) and the
# slice_update_donation probe (examples/), all built here against the CPU libmlx of the
# same MLX version.
#   benchmarks/gpu/stage.sh
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
cd "$root"
[ -f .devcarry/mlx-cuda/activate.sh ] || bash ../shared/device/prepare-mlx-cuda.sh
cargo build --release -p mlxcel-cli
rm -rf .devcarry/bin && mkdir -p .devcarry/bin/tests
cp target/release/mlxcel .devcarry/bin/
cargo build --release -p mlxcel-core --example slice_update_donation
cp target/release/examples/slice_update_donation .devcarry/bin/
# `stage_tests DEST_DIR PREDICATE CARGO_ARGS...`: builds test binaries without running them and
# copies each whose target name satisfies the Python expression PREDICATE (on `name`) into
# DEST_DIR.
stage_tests() {
  local dest=$1 pred=$2; shift 2
  cargo test --release --no-run "$@" --message-format=json 2>/dev/null |
    python3 -c '
import json, sys, shutil
dest, pred = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    m = json.loads(line)
    name = m.get("target", {}).get("name", "")
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"] and eval(pred):
        shutil.copy(m["executable"], dest + "/" + name)
        print("staged test", name)
' "$dest" "$pred"
}
stage_tests .devcarry/bin/tests 'name.startswith("gpu_") or name == "files_memory_device"' -p mlxcel-core
# STAGE_GENERATION_TESTS=1: also the mlxcel-models test binary synthetic_and_hub (the
# generation loops' token comparisons, e.g. session37_call1.sh), gzip'd into .devcarry/bin.
if [ "${STAGE_GENERATION_TESTS:-0}" = 1 ]; then
  stage_tests .devcarry/bin 'name == "synthetic_and_hub"' -p mlxcel-models --test synthetic_and_hub
  strip .devcarry/bin/synthetic_and_hub && gzip -9f .devcarry/bin/synthetic_and_hub
fi
# The device tool carries at most 64 MiB.
strip .devcarry/bin/mlxcel .devcarry/bin/slice_update_donation .devcarry/bin/tests/* 2>/dev/null || true
du -sh .devcarry
