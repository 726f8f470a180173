"""Stall reasons per region of one kernel launch's ncu source page: every reason's sample count,
where `source_samples.py` prints only each region's largest shares.

    python3 benchmarks/gpu/source_regions.py SASS_CSV [TOP]
    python3 benchmarks/gpu/source_regions.py SASS_CSV TOP 0xa260,0xbc40,0xe520,0xfa60

The regions are source_samples.py's (prologue, main loop, epilogue: `main_loop`), or, given
offsets from the kernel's first instruction, the spans between them (session 46 split the paired
attention kernel at the prologue's barrier, the pair loop, the odd tile and the epilogue). Why:
the attention timeline (session 46) left ~3.8 us before the prologue's barrier and ~2 us after
the slowest warp's loop end unexplained; `no_inst` (instruction fetch), `imc` / `long_sb`
(constant and global loads) or `short_sb` (shared memory) samples there say which it is.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from source_samples import main_loop, read_page  # noqa: E402


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    instrs, why = read_page(path)
    base = instrs[0][0]
    if len(sys.argv) > 3:
        cuts = [base + int(x, 16) for x in sys.argv[3].split(",")]
    else:
        lo, hi = main_loop(instrs)
        if lo is None:
            sys.exit(f"{path}: no main loop found")
        cuts = [lo, hi + 1]
    starts = [base] + cuts
    totals: list[dict[str, int]] = [{} for _ in starts]
    for a, _, _ in instrs:
        k = max(i for i, s in enumerate(starts) if a >= s)
        for name, v in why[a].items():
            totals[k][name] = totals[k].get(name, 0) + v
    for k, d in enumerate(totals):
        end = f"{starts[k + 1] - base:#x}" if k + 1 < len(starts) else "end"
        ranked = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        print(f"[{starts[k] - base:#x}, {end}): {sum(d.values())} samples; "
              + ", ".join(f"{n} {v}" for n, v in ranked if v > 0))


if __name__ == "__main__":
    main()
