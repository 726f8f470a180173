"""Issue 5's microbenchmark by kernel time: ncu durations of every launch of one
`mlxcel bench attention` run, as a table per layer shape, context and KV mode.

    python3 benchmarks/gpu/ncu_attention_table.py NCU_CSV BENCH_DIR [--copy-mib N] > table.md

NCU_CSV (plain or .gz): `ncu --metrics gpu__time_duration.sum --csv --page raw` over the bench
run with the kernel filter of `attention_kernel_times.sh` (MLX's fp16 SDPA kernels, mlxcel's
decode-attention and split-merge kernels, and the copy roofline's `negative` kernel).
BENCH_DIR: that run's `--out` folder (results.csv gives the shapes, contexts, modes in launch
order and each mode's bytes).

Why a second table beside `bench attention`'s own: its time per call is wall time over 50 calls,
and at <= 32K a fused call is limited by the host (each call's graph build plus MLX's encoding of
its launch, ~15-20 us, against a ~22 us kernel on an H100), so its TB/s and "fraction of copy"
there describe the launch path rather than the kernel. ncu times each kernel on the device alone
(launches serialized, L2 flushed between them by default). MLX's SDPA is timed the same way: its
two cuDNN kernels (the attention and its split reduction) summed, as a fused call's attention
kernel and separate merge are. Each cell is the median over the mode's launches (warm-up
included: they run the same kernel on the same bytes).

Launch order (mlxcel-cli/src/bench.rs): the copy roofline's calls, then per shape and context
the fp16 SDPA baseline's calls, then each mode's calls in --modes order (fp16 as a mode is
MLX's SDPA again). A group of consecutive SDPA launches that follows a fused group starts the
next context.
"""

import argparse
import csv
import re
import statistics
import sys

from step_budget import launches


def read_launches(path):
    """(kernel name, us) of every launch, read by step_budget.py's reader (plain or .gz)."""
    rows = [(name, us) for name, _, us in launches(path)]
    if not rows:
        sys.exit(f"{path}: no launches in the ncu CSV")
    return rows


def kind(name):
    if "Negative" in name:
        return "copy"
    if "sdpa" in name or "lean_reduction" in name:
        return "sdpa"
    if "merge_splits" in name:
        return "merge"
    if "decode_attention" in name:
        return "attention"
    return None


def groups(launches):
    """Consecutive launches of one call type: ("copy" | "sdpa" | attention kernel name,
    {part: [us...]}), a fused group's separate merges counted with it."""
    out = []
    # Whether a timed call's launch has been seen: the copy roofline runs first, and later
    # `negative` launches belong to a mode's setup (the int8 encoder's, in f32), not to a call.
    calls_began = False
    for name, us in launches:
        k = kind(name)
        if k is None or (k == "copy" and calls_began):
            continue
        calls_began = calls_began or k != "copy"
        key = name if k == "attention" else k
        part = "merge" if k == "merge" else ("lean" if "lean_reduction" in name else "main")
        if k == "merge":
            if not out or out[-1][0] in ("copy", "sdpa"):
                sys.exit("a split merge launch with no attention launch before it")
            out[-1][1].setdefault(part, []).append(us)
            continue
        if not out or out[-1][0] != key:
            out.append((key, {}))
        out[-1][1].setdefault(part, []).append(us)
    return out


def call_time(parts):
    """Median kernel time of one call: the medians of its parts summed (an SDPA call's two
    kernels, a fused call's attention kernel and, where it runs, its merge)."""
    return sum(statistics.median(v) for v in parts.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ncu_csv")
    ap.add_argument("bench_dir")
    ap.add_argument("--copy-mib", type=int, default=1024,
                    help="the run's --copy-mib (default 1024, bench's own default)")
    ap.add_argument("--copy-tbps", type=float, default=None,
                    help="the copy roofline in TB/s when the CSV has no copy kernel (e.g. bench's "
                         "own line of the same run, read + write bytes over wall time)")
    a = ap.parse_args()
    with open(f"{a.bench_dir}/results.csv") as f:
        rows = list(csv.DictReader(f))
    # (shape, ctx) in launch order, with their fused modes in order and every mode's bytes.
    cells, order = {}, []
    for r in rows:
        key = (r["shape"], int(r["ctx"]))
        if key not in cells:
            cells[key] = {"fused": [], "bytes": {}}
            order.append(key)
        cells[key]["bytes"][r["mode"]] = int(r["bytes"])
        if r["path"].startswith("fused/"):
            cells[key]["fused"].append(r["mode"])
    gs = groups(read_launches(a.ncu_csv))
    if gs and gs[0][0] == "copy":
        copy_us = call_time(gs[0][1])
        copy_tbps = 2 * (a.copy_mib << 20) / copy_us / 1e6
        copy_line = f"copy kernel {copy_us:.1f} us for {a.copy_mib} MiB read + written = {copy_tbps:.3f} TB/s"
        gs = gs[1:]
    elif a.copy_tbps:
        copy_tbps = a.copy_tbps
        copy_line = f"copy roofline {copy_tbps:.3f} TB/s (given: --copy-tbps)"
    else:
        sys.exit("no copy kernel launches first in the CSV (the kernel filter must match MLX's "
                 "Negative kernel, with ncu --kernel-name-base demangled) and no --copy-tbps")
    # Split the rest by context: an SDPA group after a fused group opens the next one.
    per_ctx, cur = [], None
    for key, parts in gs:
        if key == "sdpa" and (cur is None or cur["fused"]):
            cur = {"sdpa": [], "fused": []}
            per_ctx.append(cur)
        if cur is None:
            sys.exit(f"a launch of {key[:60]} before any SDPA baseline")
        if key == "sdpa":
            cur["sdpa"].append(parts)
        else:
            cur["fused"].append((key, parts))
    if len(per_ctx) != len(order):
        sys.exit(f"{len(per_ctx)} contexts in the ncu launches, {len(order)} in results.csv: "
                 "was the same run profiled, with every mode's kernels matched?")
    print(f"Kernel time per call (ncu medians; us); {copy_line}.\n")
    for shape in dict.fromkeys(s for s, _ in order):
        print(f"### {shape} (Hq:Hkv:D)\n")
        print("| ctx | mode | kernel | us | TB/s | of copy | x fp16 SDPA |")
        print("|---|---|---|---|---|---|---|")
        for (s, ctx), found in zip(order, per_ctx):
            if s != shape:
                continue
            want = cells[(s, ctx)]["fused"]
            if len(found["fused"]) != len(want):
                sys.exit(f"{shape} {ctx}: {len(found['fused'])} fused groups, results.csv has {len(want)} fused modes")
            # The baseline's SDPA calls (and fp16's, when it is a mode: the same kernels).
            sdpa_parts = {}
            for p in found["sdpa"]:
                for part, v in p.items():
                    sdpa_parts.setdefault(part, []).extend(v)
            sdpa_us = call_time(sdpa_parts)
            fp16_bytes = cells[(s, ctx)]["bytes"]["fp16"]
            print(f"| {ctx} | fp16 | MLX SDPA ({' + '.join(sorted(sdpa_parts))}) | {sdpa_us:.2f} | "
                  f"{fp16_bytes / sdpa_us / 1e6:.2f} | {fp16_bytes / sdpa_us / 1e6 / copy_tbps:.0%} | 1.00x |")
            for mode, (kname, parts) in zip(want, found["fused"]):
                us = call_time(parts)
                b = cells[(s, ctx)]["bytes"][mode]
                m = re.search(r"decode_attention_(\w+?)_(\d+_\d+_\d+_\d+)", kname)
                label = f"{m.group(1)} {m.group(2)}" if m else kname[:40]
                if "merge" in parts:
                    label += " + merge"
                print(f"| {ctx} | {mode} | {label} | {us:.2f} | {b / us / 1e6:.2f} | "
                      f"{b / us / 1e6 / copy_tbps:.0%} | {sdpa_us / us:.2f}x |")
        print()


if __name__ == "__main__":
    main()
