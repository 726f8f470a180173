"""Stall reasons per region (prologue, main loop, epilogue) of one kernel launch's ncu source
page: every reason's sample count, where `source_samples.py` prints only each region's largest.

    python3 benchmarks/gpu/source_regions.py SASS_CSV [TOP]
    python3 benchmarks/gpu/source_regions.py SASS_CSV TOP 0xa260,0xbc40,0xe520,0xfa60

The regions are source_samples.py's (the loop: the backward branch with the most HMMAs), or,
given offsets from the kernel's first instruction, the spans between them (the paired
attention kernel's widest backward branch spans nearly all of it, so session 46 split it by hand
at the prologue's barrier, the pair loop, the odd tile and the epilogue). Why:
the attention timeline (session 46) left ~3.8 us before the prologue's barrier and ~2 us after
the slowest warp's loop end unexplained; `no_inst` (instruction fetch) or `short_sb` (shared
memory) samples there say which it is.
"""
import csv
import gzip
import re
import subprocess
import sys


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols = rows[head]
    ai, ni = cols.index("Address"), cols.index("Warp Stall Sampling (All Samples)")
    reasons = [(i, c[len("stall_"):]) for i, c in enumerate(cols) if c.startswith("stall_") and "(" not in c]
    if len(sys.argv) > 3:
        cuts = [int(x, 16) for x in sys.argv[3].split(",")]
        return by_offsets(rows[head + 1:], ai, ni, reasons, cuts, top)
    here = __file__.rsplit("/", 1)[0]
    out = subprocess.run([sys.executable, f"{here}/source_samples.py", path, "1"], capture_output=True, text=True).stdout
    m = re.search(r"loop (0x[0-9a-f]+)-(0x[0-9a-f]+)", out)
    if not m:
        sys.exit(f"no main loop found by source_samples.py:\n{out}")
    lo, hi = int(m.group(1), 16), int(m.group(2), 16)
    totals: dict[str, dict[str, float]] = {}
    for r in rows[head + 1:]:
        if len(r) <= ni or not r[ai].startswith("0x"):
            continue
        a = int(r[ai], 16)
        region = "prologue" if a < lo else ("loop" if a <= hi else "epilogue")
        for i, name in reasons:
            totals.setdefault(region, {}).setdefault(name, 0.0)
            totals[region][name] += float(r[i] or 0)
    for region in ("prologue", "loop", "epilogue"):
        d = totals.get(region, {})
        s = sum(d.values())
        ranked = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        print(f"{region}: {s:.0f} samples; " + ", ".join(f"{k} {v:.0f}" for k, v in ranked if v > 0))


def by_offsets(rows, ai, ni, reasons, cuts, top) -> None:
    """Samples per span [0, cuts[0]), [cuts[0], cuts[1]), ... of offsets from the first instruction."""
    instrs = [r for r in rows if len(r) > ni and r[ai].startswith("0x")]
    base = int(instrs[0][ai], 16)
    spans = [0] + cuts
    totals: list[dict[str, float]] = [{} for _ in spans]
    for r in instrs:
        k = max(i for i, s in enumerate(spans) if int(r[ai], 16) - base >= s)
        for i, name in reasons:
            totals[k][name] = totals[k].get(name, 0.0) + float(r[i] or 0)
    for k, d in enumerate(totals):
        end = f"{spans[k + 1]:#x}" if k + 1 < len(spans) else "end"
        ranked = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        print(f"[{spans[k]:#x}, {end}): {sum(d.values()):.0f} samples; " + ", ".join(f"{n} {v:.0f}" for n, v in ranked if v > 0))


if __name__ == "__main__":
    main()
