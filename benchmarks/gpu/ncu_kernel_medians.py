#!/usr/bin/env python3
"""Medians per kernel and grid of an `ncu --csv --metrics ...` run (one row per launch and
metric): launches, median duration in us, and the median of every other metric. Why: a
benchmark process (e.g. `mlxcel bench gemv`) launches the same kernel for different shapes
(the grid tells them apart) and layouts (the template arguments in the name do), and its
wall times include the host; ncu's durations are the device's alone (caches flushed between
launches by default).

    python3 ncu_kernel_medians.py CSV[.gz] [--runs]

--runs: a key's launches split into runs of consecutive launches (a run ends where another
kernel or grid launches), each run its own row: `bench gemv` times one GEMV after another, and
two GEMVs of one grid whose kernels share a name (o_proj and down_proj in some probe variants,
session 28) would otherwise land in one row."""
import csv
import gzip
import statistics
import sys
from collections import defaultdict

UNIT_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}


def main(path, runs=False):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's CSV rows; drops the app's output
    vals = defaultdict(lambda: defaultdict(list))
    order = []
    last_id, last_key, run = None, None, 0
    for row in csv.DictReader(lines):
        key = (row["Kernel Name"], row["Grid Size"])
        if runs:
            # A new launch (ID) of another kernel or grid ends the current run.
            if row["ID"] != last_id:
                if key != last_key:
                    run += 1
                last_id, last_key = row["ID"], key
            key = key + (run,)
        if key not in vals:
            order.append(key)
        name, unit, v = row["Metric Name"], row["Metric Unit"], row["Metric Value"]
        try:
            x = float(v.replace(",", ""))
        except ValueError:
            continue
        if name == "gpu__time_duration.sum":
            x *= UNIT_US.get(unit, float("nan"))
            name = "duration_us"
        vals[key][name].append(x)
    if not order:
        sys.exit(f"{path}: no ncu rows")
    for key in order:
        m = vals[key]
        kernel = key[0].split("(")[0]
        parts = [f"{len(m['duration_us']):4d}x", f"{statistics.median(m['duration_us']):9.2f} us"]
        parts += [f"{n} {statistics.median(v):.2f}" for n, v in sorted(m.items()) if n != "duration_us"]
        print(f"grid {key[1]:>14}  " + "  ".join(parts) + f"  {kernel}")


if __name__ == "__main__":
    main(sys.argv[1], "--runs" in sys.argv[2:])
