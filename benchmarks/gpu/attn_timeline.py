"""Where a decode attention launch spends its time, from the per-warp stamps that
`MLXCEL_ATTENTION_TIMING_PROBE=timeline` prints (`MLXCEL_TL` lines on mlxcel's stdout; KV head 0
of batch 0, every 16th context length; `cuda/decode_attention_mma.cu`, PROBE 4).

    python3 benchmarks/gpu/attn_timeline.py [--min-len N] OUT.txt [OUT2.txt ...]
    python3 benchmarks/gpu/attn_timeline.py --splits MIN_LEN NW OUT.txt ...   # per split

--min-len N keeps the launches at >= N positions. Why: a `--prompt-fill random-kv` run also
stamps the fill's launches (every 4096 positions up to the context, back to back, no GEMVs
between them; session 69 found them in the medians); `e2e_run.sh`'s `timeline` passes the
context + 1, the decode steps alone.

A line: len S split NW warp count g0 g4 c1 c2 c3 c4, where g0 / g4 are the warp's %globaltimer
(ns) at entry and after the partials' stores, and c1..c4 its clock64 cycles from entry to the
prologue's barrier, its first tile's wait (-1: not stamped), the loop's end, the partials'
stores. Cycles become ns by the lines' own (g4 - g0) / c4 (the median). Lines of one launch share
(len, NW) and start within 15 us of each other (launches of one kind are >= ~40 us apart).

Per launch (then medians per kind: NW 12 = the turbo4 pair-table kernel, NW 4 = 4-warp CTAs such
as the boundary layers'), in us from the launch's first warp entry:
  entry      the last warp's entry (CTA scheduling spread)
  prologue   median warp's prologue barrier
  first      median / max warp's first tile landed (the ramp)
  loop_end   median / max warp's loop end (max - median: the drain of the slowest warps)
  end        the last warp's partials stored (the launch's end, before the fold if any)
  stream     first (median) to loop_end (median): the streaming window
  fold_last  (folded launches) the last CTA of KV head 0 knowing it is last: its ticket, after
             every split's partials (`MLXCEL_TLF` lines, session 67). Binaries before session
             69's kernel change printed each CTA's 12 warp lines before its ticket, so there it
             came ~410-450 us late (H100, 32K) and dates only the fold's start; since then the
             warp lines are printed after the ticket (the last CTA's after its merge)
  fold_end   the same CTA's merged output stored
  merge      fold_end - fold_last: the fold's merge alone (the kernel's own time; printf-free)
Why: session 32's probes put ~5.8 us of the 128K call over its bytes' copy time in the loop's
"ramp and drain" without telling them apart (NOTES, "Next lever (after session 45)").
"""
import gzip
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"MLXCEL_TL (-?\d+(?: -?\d+){11})")
# The fold's tail (one line per folded launch): len S NW t_last t_end (%globaltimer, ns).
FOLD_LINE = re.compile(r"MLXCEL_TLF (\d+) (\d+) (\d+) (\d+) (\d+)")


def read(paths):
    """The warp lines and the fold lines of `paths` (files, gzipped or not)."""
    rows, folds = [], []
    for p in paths:
        # Archived runs are gzipped (*.json.gz).
        f = gzip.open(p, "rt", errors="replace") if p.endswith(".gz") else open(p, errors="replace")
        for line in f:
            for m in LINE.finditer(line):
                v = [int(x) for x in m.group(1).split()]
                rows.append(dict(zip("len S split NW warp count g0 g4 c1 c2 c3 c4".split(), v)))
            for m in FOLD_LINE.finditer(line):
                folds.append(dict(zip("len S NW t_last t_end".split(), (int(x) for x in m.groups()))))
    return rows, folds


def fold_of(folds, ln, nw, t0, t_next):
    """The fold line of the launch (ln, nw) whose first warp entered at t0: same length and CTA
    width, its ticket after t0 and before t_next, the next launch of the same (ln, nw) (None: no
    later one). Why a window to the next launch and not a fixed one: under the probe the ticket
    comes after every CTA's printf (~410 us on an H100 at 32K, session 69), later than the warp
    lines' end by far more than the launch itself lasts. (fold_last, fold_end) in us from t0;
    nan, nan if none."""
    for f in folds:
        if f["len"] == ln and f["NW"] == nw and f["t_last"] >= t0 and (t_next is None or f["t_last"] < t_next):
            return (f["t_last"] - t0) / 1e3, (f["t_end"] - t0) / 1e3
    return float("nan"), float("nan")


def launches(rows):
    by = defaultdict(list)
    for r in rows:
        by[(r["len"], r["NW"])].append(r)
    out = []
    for (ln, nw), rs in sorted(by.items()):
        rs.sort(key=lambda r: r["g0"])
        cur = [rs[0]]
        for r in rs[1:]:
            if r["g0"] - cur[0]["g0"] > 15000:
                out.append((ln, nw, cur))
                cur = []
            cur.append(r)
        out.append((ln, nw, cur))
    return out


def ns_per_cycle(rows):
    """Cycles become ns by the lines' own (g4 - g0) / c4 (the median)."""
    return statistics.median((r["g4"] - r["g0"]) / r["c4"] for r in rows if r["c4"] > 0 and r["g4"] > r["g0"])


def stamps(rs, t0, ns):
    """The stamps of warps `rs` in us from `t0` (a launch's first warp entry): the last warp's
    entry, the median warp's barrier, the median / last first tile landed (nan where none was
    stamped), the median / last loop end, the last partials stored."""
    at = lambda r, k: (r["g0"] - t0 + r[k] * ns) / 1e3  # noqa: E731
    firsts = [at(r, "c2") for r in rs if r["c2"] >= 0] or [float("nan")]
    ends = [at(r, "c3") for r in rs]
    return dict(entry=max(r["g0"] - t0 for r in rs) / 1e3, prologue=statistics.median(at(r, "c1") for r in rs),
                first=statistics.median(firsts), first_max=max(firsts), loop_end=statistics.median(ends),
                loop_end_max=max(ends), end=max(at(r, "c4") for r in rs))


def per_split(rows, min_len, nw):
    """--splits MIN_LEN NW: medians per split over the launches at >= MIN_LEN positions of NW-warp
    CTAs (us from each launch's first warp entry): barrier, first tile landed (median / slowest
    warp), loop end (median / slowest), CTA end, tiles. Why: session 46 found the split holding
    position len - 1 (whose CTA also writes the step's K and V) ending last."""
    rows = [r for r in rows if r["len"] >= min_len and r["NW"] == nw]
    if not rows:
        sys.exit(f"no lines at >= {min_len} positions with NW {nw}")
    ns = ns_per_cycle(rows)
    cols = defaultdict(lambda: defaultdict(list))
    for _, _, rs in launches(rows):
        t0 = min(r["g0"] for r in rs)
        for s in sorted({r["split"] for r in rs}):
            w = [r for r in rs if r["split"] == s]
            m = dict(stamps(w, t0, ns), tiles=sum(r["count"] for r in w))
            for k, v in m.items():
                cols[s][k].append(v)
    keys = ["prologue", "first", "first_max", "loop_end", "loop_end_max", "end", "tiles"]
    print("split barrier " + " ".join(keys[1:]))
    for s, d in sorted(cols.items()):
        print(f"{s} " + " ".join(f"{statistics.median(d[k]):.2f}" for k in keys))


def main():
    if len(sys.argv) > 4 and sys.argv[1] == "--splits":
        return per_split(read(sys.argv[4:])[0], int(sys.argv[2]), int(sys.argv[3]))
    args, min_len = sys.argv[1:], 0
    if args[:1] == ["--min-len"]:
        if len(args) < 2 or not args[1].isdigit():
            sys.exit("--min-len takes a number of positions")
        min_len, args = int(args[1]), args[2:]
    rows, folds = read(args)
    if not rows:
        sys.exit("no MLXCEL_TL lines (was MLXCEL_ATTENTION_TIMING_PROBE=timeline set, on CUDA?)")
    rows = [r for r in rows if r["len"] >= min_len]
    folds = [f for f in folds if f["len"] >= min_len]
    if not rows:
        sys.exit(f"no MLXCEL_TL lines at >= {min_len} positions")
    ns = ns_per_cycle(rows)
    print(f"{len(rows)} warp lines, {len(folds)} fold lines; {ns:.4f} ns per cycle ({1 / ns:.3f} GHz)")
    kinds = defaultdict(list)
    print("len NW splits warps | entry prologue first(med/max) loop_end(med/max) end stream | fold_last fold_end"
          " merge | tiles per warp")
    ls = launches(rows)
    t0s = [min(r["g0"] for r in rs) for _, _, rs in ls]
    for i, (ln, nw, rs) in enumerate(ls):
        t0 = t0s[i]
        # launches() lists each (len, NW)'s launches together, in time order: the next one, if
        # of the same kind, bounds this launch's fold line.
        t_next = t0s[i + 1] if i + 1 < len(ls) and ls[i + 1][:2] == (ln, nw) else None
        m = stamps(rs, t0, ns)
        m["stream"] = m["loop_end"] - m["first"]
        m["fold_last"], m["fold_end"] = fold_of(folds, ln, nw, t0, t_next)
        m["merge"] = m["fold_end"] - m["fold_last"]
        kinds[nw].append(m)
        counts = sorted({r["count"] for r in rs})
        print(f"{ln} {nw} {rs[0]['S']} {len(rs)} | {m['entry']:.2f} {m['prologue']:.2f} {m['first']:.2f}/{m['first_max']:.2f} "
              f"{m['loop_end']:.2f}/{m['loop_end_max']:.2f} {m['end']:.2f} {m['stream']:.2f} | "
              f"{m['fold_last']:.2f} {m['fold_end']:.2f} {m['merge']:.2f} | {counts}")
    for nw, ms in sorted(kinds.items()):
        # Medians over the launches that have a value (nan: no first tile stamped, no fold).
        med = {}
        for k in ms[0]:
            vals = [m[k] for m in ms if m[k] == m[k]]
            med[k] = statistics.median(vals) if vals else float("nan")
        print(f"NW {nw}, medians of {len(ms)} launches (us): " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))


if __name__ == "__main__":
    main()
