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
cargo test --release --no-run -p mlxcel-core --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]
            and (m["target"]["name"].startswith("gpu_") or m["target"]["name"] == "files_memory_device")):
        shutil.copy(m["executable"], ".devcarry/bin/tests/" + m["target"]["name"])
        print("staged test", m["target"]["name"])
'
# The device tool carries at most 64 MiB.
strip .devcarry/bin/mlxcel .devcarry/bin/slice_update_donation .devcarry/bin/tests/* 2>/dev/null || true
du -sh .devcarry
