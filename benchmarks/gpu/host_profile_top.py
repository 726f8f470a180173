#!/usr/bin/env python3
"""Summarize a collapsed-stack host profile (`MLXCEL_HOST_PROFILE`, mlxcel-cli/src/host_profile.rs).

  host_profile_top.py FILE [--thread NAME] [--under SUBSTR] [--top N]

Prints, for the samples of one thread (default: the decode loop's, `mlxcel`), optionally only
stacks passing through a frame containing SUBSTR:
- inclusive time by frame (a frame counted once per sample however deep it recurs);
- self time by leaf frame;
- a coarse split by the first mlxcel / MLX / CUDA-driver frame below the decode step.
Frames are shortened: template arguments and parameter lists dropped.
"""
import re
import sys
from collections import Counter


def short(frame):
    f = re.sub(r"\(.*\)( const)?$", "", frame)
    out, depth = [], 0
    for ch in f:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)[:140]


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    path, thread, under, top = args[0], "mlxcel", None, 30
    i = 1
    while i < len(args):
        if args[i] == "--thread":
            thread = args[i + 1]; i += 2
        elif args[i] == "--under":
            under = args[i + 1]; i += 2
        elif args[i] == "--top":
            top = int(args[i + 1]); i += 2
        else:
            sys.exit(f"unknown argument {args[i]}")
    incl, leaf, total = Counter(), Counter(), 0
    threads = Counter()
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        threads[frames[0]] += n
        if frames[0] != thread:
            continue
        if under and not any(under in f for f in frames):
            continue
        total += n
        seen = set()
        for f in frames[1:]:
            s = short(f)
            if s not in seen:
                incl[s] += n
                seen.add(s)
        leaf[short(frames[-1])] += n
    print(f"samples by thread: {dict(threads.most_common(8))}")
    print(f"{total} samples of thread {thread}" + (f" under {under}" if under else ""))
    print(f"\ninclusive (top {top}):")
    for f, n in incl.most_common(top):
        print(f"{100.0 * n / max(total, 1):6.1f}%  {f}")
    print(f"\nself (top {top}):")
    for f, n in leaf.most_common(top):
        print(f"{100.0 * n / max(total, 1):6.1f}%  {f}")


if __name__ == "__main__":
    main()
