#!/usr/bin/env bash
# What a device call would carry: the tracked files plus the given carry paths, in bytes, against
# the limit the device tool applied in session 73. Why: a call over it is refused at once, after
# the session has waited for the device (the tool says 64 MiB; a 62.8 MB tree was refused and a
# 59.7 MB one carried, so the check uses 60 MB). Run it before a call whose carry changed, e.g.
# after the kernel cache (.devcarry/ptx-cache) grew:
#   benchmarks/gpu/carry_size.sh .devcarry                       # everything staged
#   benchmarks/gpu/carry_size.sh .devcarry/mlx-cuda .devcarry/bin # a table call: no cache
# Exits 1 when over, listing what each path adds.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
LIMIT=${CARRY_LIMIT:-60000000}
tracked=$(git ls-files -z | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
total=$tracked
echo "tracked files: $tracked bytes"
for p in "$@"; do
  [ -e "$p" ] || { echo "$p: missing" >&2; exit 2; }
  n=$(du -sb "$p" | cut -f1)
  echo "$p: $n bytes"
  total=$((total + n))
done
echo "total: $total bytes (limit $LIMIT)"
((total <= LIMIT)) || { echo "over the limit by $((total - LIMIT)) bytes: carry less" >&2; exit 1; }
