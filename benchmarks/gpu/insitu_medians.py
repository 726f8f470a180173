"""Per-kernel medians of in-situ ncu runs (benchmarks/gpu/ncu_e2e.sh, `insitu_env` in e2e_run.sh).

    python3 benchmarks/gpu/insitu_medians.py CSV [CSV...] [--grep SUBSTRING]

Each CSV is ncu's `--csv --page raw` output with gpu__time_duration.sum, one row per launch of
the profiled decode steps. ncu_e2e.sh prints sums per kernel family, which merges kernels that
share a name prefix (o_proj and down are both `qgemv4`, with different template arguments);
this groups launches by their full kernel name, grid and block instead and prints each group's
median time per launch in us, one column per CSV, largest first (by the first CSV's sums).
Kernels whose template arguments differ between the CSVs (a schedule or a flag changes the
name) land in different rows: compare the rows with the same grid. CSVs may be gzipped (`.gz`,
as the recorded results keep them).
"""

import csv
import gzip
import io
import statistics
import sys


def groups(path: str) -> dict:
    """(name, grid, block) -> per-launch times in us, from one ncu CSV."""
    lines = (gzip.open if path.endswith(".gz") else open)(path, "rt").read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"{path}: no ncu CSV header (\"ID\",...): did ncu profile any kernel?")
    out = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        value = row.get("gpu__time_duration.sum", "").replace(",", "")
        try:
            ns = float(value)
        except ValueError:
            continue  # the units row, or a kernel ncu did not time
        name = row["Kernel Name"].split("(")[0][:100]
        out.setdefault((name, row["Grid Size"], row["Block Size"]), []).append(ns / 1e3)
    return out


def main() -> None:
    args = sys.argv[1:]
    pattern = ""
    if "--grep" in args:
        i = args.index("--grep")
        pattern = args[i + 1]
        del args[i : i + 2]
    if not args:
        sys.exit(__doc__)
    runs = [groups(p) for p in args]
    keys = set().union(*runs)
    keys = sorted(keys, key=lambda k: -sum(runs[0].get(k, [0.0])))
    for k in keys:
        if pattern not in k[0]:
            continue
        cells = []
        for g in runs:
            v = g.get(k)
            cells.append(f"{statistics.median(v):8.2f} us n={len(v):3d}" if v else " " * 18)
        print(f"{k[0]:100s} {k[1]:>14s} {k[2]:>12s} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
