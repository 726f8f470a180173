"""Greedy-token comparison of the runs in a call's result folder (benchmarks/gpu/e2e_run.sh's
`run` writes TAG-KV-CTX.json with the generated tokens).

    python3 benchmarks/gpu/token_pairs.py DIR [--tokens]

For every pair of runs with the same KV mode and context, prints whether their tokens are all
equal or where they first differ; with --tokens, then every run's tokens. Session 24 used it to
find that fp16's greedy tokens vary from run to run at >= 256 cached positions (MLX's cuDNN
decode SDPA) while turbo4's do not.
"""

import glob
import gzip
import json
import os
import sys

args = sys.argv[1:]
show = "--tokens" in args
args = [a for a in args if a != "--tokens"]
if len(args) != 1:
    sys.exit("usage: token_pairs.py DIR [--tokens]")
runs = {}
# Archived runs may be gzipped (*.json.gz), as repeats_summary.py reads them.
for f in sorted(glob.glob(os.path.join(args[0], "*.json")) + glob.glob(os.path.join(args[0], "*.json.gz"))):
    try:
        name = os.path.basename(f).removesuffix(".gz")[:-5]
        runs[name] = json.load(gzip.open(f, "rt") if f.endswith(".gz") else open(f))["tokens"]
    except Exception as e:  # a failed run leaves an empty or partial file
        print(f, "unreadable", e)
names = sorted(runs)
for i, a in enumerate(names):
    for b in names[i + 1:]:
        if a.split("-", 1)[1] != b.split("-", 1)[1]:
            continue
        d = [j for j, (x, y) in enumerate(zip(runs[a], runs[b])) if x != y]
        same_len = len(runs[a]) == len(runs[b])
        print(f"{a} vs {b}: " + ("all equal" if not d and same_len else f"first difference at {d[0] if d else min(len(runs[a]), len(runs[b]))}")
              + f" ({len(runs[a])}, {len(runs[b])} tokens)")
if show:
    for n in names:
        print(n, runs[n])
