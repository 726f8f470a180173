#!/usr/bin/env python3
"""Instruction counts of a decode-attention kernel's main loops, from NVRTC's SASS.

Usage: sass_loops.py KERNEL.cubin|KERNEL.sass [--hmma N] [--census]

A .cubin is disassembled with nvdisasm (NVDISASM, or the one under the NVRTC venv of
benchmarks/gpu/nvrtc_check.py). A loop is a backward branch; those holding exactly N HMMA
(default 32: the turbo4 pair loop, 16 per tile) are listed with their instruction count and
the blocks that forward branches inside them skip (the lazy rescale's block, the refills): the
count of a pass that skips a block is the loop's count less that block's. --census prints the
loop's instructions by opcode. Why: the tensor-core kernel's loop is issue-bound, so its
instructions per pair are the cheap proxy the sessions without a GPU can measure (the NOTES
quote these counts; NVRTC_CUBIN_DIR in nvrtc_check.py writes the cubins).
"""
import collections
import glob
import os
import re
import subprocess
import sys


def sass_text(path):
    if not path.endswith(".cubin"):
        return open(path).read()
    nvdisasm = os.environ.get("NVDISASM") or next(
        iter(glob.glob("/tmp/nvrtc/lib/python3*/site-packages/nvidia/cu13/bin/nvdisasm")), "nvdisasm")
    return subprocess.run([nvdisasm, "-c", path], check=True, capture_output=True, text=True).stdout


def parse(text):
    ins, labels = [], {}
    for line in text.splitlines():
        m = re.match(r"^\s*\.(L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if m:
            ins.append(m.group(2).strip())
    return ins, labels


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    hmma = int(args[args.index("--hmma") + 1]) if "--hmma" in args else 32
    ins, labels = parse(sass_text(args[0]))
    found = 0
    for end, text in enumerate(ins):
        m = re.search(r"BRA.*`\(\.(L_x_\d+)\)", text)
        if not (m and m.group(1) in labels and labels[m.group(1)] < end):
            continue
        start = labels[m.group(1)]
        body = ins[start:end + 1]
        if sum("HMMA" in x for x in body) != hmma:
            continue
        found += 1
        skips = []
        for k in range(start, end + 1):
            b = re.search(r"BRA.*`\(\.(L_x_\d+)\)", ins[k])
            if b and b.group(1) in labels and k < labels[b.group(1)] <= end + 1:
                block = ins[k + 1:labels[b.group(1)]]
                top = collections.Counter(opcode(x) for x in block).most_common(3)
                skips.append(f"{len(block)} at +{k - start} ({', '.join(f'{o} {n}' for o, n in top)})")
        print(f"loop at instruction {start}: {len(body)} instructions, FSEL {sum(opcode(x) == 'FSEL' for x in body)};"
              f" skippable blocks: {'; '.join(skips) or 'none'}")
        if "--census" in args:
            print("  " + ", ".join(f"{o} {n}" for o, n in collections.Counter(opcode(x) for x in body).most_common()))
    if not found:
        sys.exit(f"no loop with {hmma} HMMA in {args[0]}")


if __name__ == "__main__":
    main()
