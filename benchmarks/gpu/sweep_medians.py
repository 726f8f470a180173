"""Medians of ncu duration sweeps (benchmarks/gpu/e2e_run.sh, `ncu_sweep` / `sweep_medians`).

    python3 benchmarks/gpu/sweep_medians.py DIR CONTEXTS TAG...

Reads DIR/sweep-TAG.csv or, where that is missing, DIR/sweep-TAG.csv.gz (ncu --csv --page raw with gpu__time_duration.sum, one row per
decode-attention launch, the contexts of CONTEXTS (comma-separated) in order with equally
many launches each). Prints each tag's per-context median, launch count and range to stderr,
and on stdout the tag with the lowest sum of the last two contexts' medians.
"""

import csv
import gzip
import os
import statistics
import sys


def main() -> None:
    out, ctxs, tags = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
    score = {}
    for tag in tags:
        try:
            path = f"{out}/sweep-{tag}.csv"
            if not os.path.exists(path) and os.path.exists(path + ".gz"):
                path += ".gz"
            with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
                rows = [line for line in f if line.startswith('"')]
        except OSError as e:
            print(f"{tag}: {e}", file=sys.stderr)
            continue
        table = list(csv.reader(rows))
        if len(table) < 3:
            print(f"{tag}: no launches", file=sys.stderr)
            continue
        ti = table[0].index("gpu__time_duration.sum")
        t = [float(x[ti].replace(",", "")) / 1e3 for x in table[2:]]
        n = len(t) // len(ctxs)
        parts = [t[i * n:(i + 1) * n] for i in range(len(ctxs))]
        med = [statistics.median(p) for p in parts]
        cells = "  ".join(f"{c} {m:6.2f} us (n={n}, {min(p):.2f}-{max(p):.2f})" for c, m, p in zip(ctxs, med, parts))
        print(f"{tag:8s} {cells}", file=sys.stderr)
        score[tag] = sum(med[-2:])
    print(min(score, key=score.get) if score else tags[0])


if __name__ == "__main__":
    main()
