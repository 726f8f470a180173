"""Where a kernel's warp-state samples fall: prologue, main loop, epilogue (ncu source page).

    python3 benchmarks/gpu/source_samples.py SASS_CSV [TOP]

SASS_CSV: `ncu --import X.ncu-rep --page source --csv --print-source sass` of one kernel
launch profiled with `--section SourceCounters` (gzip accepted). The main loop is the
address range of the backward branch whose body holds the most HMMA instructions (the
attention kernel's tile loop; for a GEMV, its ring loop); before it is the prologue, after
it the epilogue; with several loops of that count (gate/up + SiLU: one per matrix) the main
loop spans them all. Prints each region's share of the samples ("Warp Stall Sampling (All
Samples)") and the TOP (default 15) instructions by samples with their region, so a session
can see what the ~6 us of the attention call that does not scale with the context is
(NOTES, "Next lever (after session 19)"). Where the page has ncu's per-reason columns
(stall_long_sb, stall_wait, ...), each region's largest stall reasons follow its share, and
each top instruction's largest reason: what a warp waited on there, not only where.
"""

import csv
import gzip
import re
import sys


def read_page(path: str):
    """The page's instructions as (address, source, samples) and each address's samples per
    stall reason (empty where the page has no per-reason columns)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.reader(f)]
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols = rows[head]
    ai, si, ni = cols.index("Address"), cols.index("Source"), cols.index("Warp Stall Sampling (All Samples)")
    # Per-reason sample columns ("stall_long_sb", ...; not their "(Not Issued)" twins).
    reasons = [(i, c[len("stall_"):]) for i, c in enumerate(cols) if c.startswith("stall_") and "(" not in c]
    instrs, why = [], {}
    for r in rows[head + 1:]:
        if len(r) <= ni or not r[ai].startswith("0x"):
            continue
        a = int(r[ai], 16)
        instrs.append((a, r[si].strip(), int(float(r[ni] or 0))))
        why[a] = {name: int(float(r[i] or 0)) for i, name in reasons if i < len(r)}
    if not instrs:
        sys.exit(f"{path}: no instructions")
    return instrs, why


def main_loop(instrs):
    """The main loop's address range (lo, hi), or (None, None) without one."""
    # Backward branches: "BRA `(.L_x_N)" resolved by ncu to an address, or "BRA 0x..." forms.
    # Those placed after the kernel's last EXIT jump back from out-of-line blocks (warp-divergence
    # fix-ups of shuffles): not loops. Without this the paired attention kernel's (session 46),
    # whose fix-ups jump back to its start, spanned the whole kernel and held the most HMMAs.
    exits = [a for a, s, _ in instrs if re.search(r"\bEXIT\b", s)]
    last_exit = max(exits) if exits else instrs[-1][0]
    loops = []
    for k, (addr, src, _) in enumerate(instrs):
        m = re.search(r"BRA[^0-9a-fx]*(0x[0-9a-f]+)", src)
        if m and int(m.group(1), 16) < addr <= last_exit:
            start = int(m.group(1), 16)
            body = [s for a, s, _ in instrs if start <= a <= addr]
            loops.append((sum("HMMA" in s for s in body), start, addr))
    # Every backward branch with the most HMMA instructions is main-loop time: gate/up + SiLU
    # runs one ring loop per matrix, and taking one of them counted the gate loop as prologue.
    most = max((n for n, _, _ in loops), default=0)
    cands = [(start, end) for n, start, end in loops if most > 0 and n == most]
    # Innermost only: a backward branch out of an out-of-line block (warp-divergence fix-ups at
    # the end of the attention kernel) can span the whole body.
    mma_loops = [(a, b) for a, b in cands if not any((c, d) != (a, b) and a <= c and d <= b for c, d in cands)]
    # The NOMATH probes' GEMVs have no HMMA and their ring loop is peeled around waits the
    # backward branch does not span: there the prologue ends at the first barrier (the end of
    # x's staging) and the rest counts as the loop.
    bars = [a for a, s, _ in instrs if "BAR.SYNC" in s]
    if mma_loops:
        return min(a for a, _ in mma_loops), max(b for _, b in mma_loops)
    if bars:
        return bars[0] + 1, instrs[-1][0]
    if loops:
        _, lo, hi = max(loops)
        return lo, hi
    return None, None


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    instrs, why = read_page(path)
    reasons = any(why.values())
    total = sum(n for _, _, n in instrs)
    lo, hi = main_loop(instrs)
    def region(a: int) -> str:
        if lo is None:
            return "all"
        return "prologue" if a < lo else ("loop" if a <= hi else "epilogue")
    shares = {}
    for a, _, n in instrs:
        shares[region(a)] = shares.get(region(a), 0) + n
    print(f"{total} samples; " + ", ".join(f"{k} {v} ({100 * v / max(total, 1):.0f}%)" for k, v in shares.items())
          + (f"; loop 0x{lo:x}-0x{hi:x}" if lo is not None else "; no loop found"))
    # Samples on the instruction after each DEPBAR (cp.async.wait_group): warps waiting on the
    # ring's weight copies, as against everything else in the loop.
    ring = sum(instrs[k + 1][2] for k, (_, s, _) in enumerate(instrs[:-1]) if s.startswith("DEPBAR"))
    print(f"  waiting on ring copies (after DEPBAR): {ring} ({100 * ring / max(total, 1):.0f}%)")
    if reasons:
        for name in shares:
            per = {}
            for a, _, _ in instrs:
                if region(a) == name:
                    for k, v in why[a].items():
                        per[k] = per.get(k, 0) + v
            n = max(sum(per.values()), 1)
            top_r = sorted(per.items(), key=lambda kv: -kv[1])[:6]
            print(f"  {name} by reason: " + ", ".join(f"{k} {100 * v / n:.0f}%" for k, v in top_r if v))
    for a, s, n in sorted(instrs, key=lambda x: -x[2])[:top]:
        w = max(why.get(a, {}).items(), key=lambda kv: kv[1], default=("", 0))
        print(f"  {n:6d}  {region(a):8s}  0x{a:x}  {s}" + (f"  [{w[0]} {w[1]}]" if w[1] else ""))


if __name__ == "__main__":
    main()
