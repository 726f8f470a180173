"""A decode step's kernel time split into the work every KV mode shares and the mode's own.

    python3 benchmarks/gpu/step_budget.py MODE CTX CSV [--layers 32] [--boundary N] [--kv-heads 8]
        [--head-dim 128] [--copy-tbs 4.24] [--against FP16_CSV --goal 2.0 --weight-gb 4.22
        --device-ms MODE_MS FP16_MS]

CSV: ncu's `--csv --page raw` output with gpu__time_duration.sum for whole decode steps in situ
(benchmarks/gpu/ncu_e2e.sh; NCU_CACHE=none keeps L2 between kernels as a real step does; may be
gzipped). Why: the issue's ratios (turbo4 against fp16) move only with the kernels a mode runs
for itself; the weight GEMVs, the argmax and the embedding run in every mode. This prints the
per-step time of each kernel family, the shared sum (with the qkv GEMV counted at the plain
stacked kernel's time: the turbo modes fold their cache append into it, and the extra is their
own), the mode's own sum, and its KV bytes against the copy roofline.

KV bytes per token and KV head at head dim D (`kv_bytes`): fp16 4 D (K and V fp16); turbo4 D + 4
(4-bit K and V, two fp16 norms); turbo4-asym 2.5 D + 2 (fp16 K, 4-bit V and its norm). Boundary
layers as today's defaults store them: turbo4-asym's first and last two fp16 keys with int8 values
and their fp16 scale, 3 D + 2 (ADR 0012); turbo4's first three fp16 keys with turbo4 values, the
same 2.5 D + 2 as turbo4-asym (ADRs 0027, 0028). At D = 128: 512, 132, 322, 386. --boundary N
overrides the count (not the kind).

--against FP16_CSV (fp16's steps at the same context) adds the ratio frontier (ADR 0016): the
ratio of fp16's step to this mode's by kernel sums; with this mode's own kernels at copy speed;
with every kernel of both modes at copy speed (the bytes' bound); and the fraction of copy speed
that the shared weight GEMVs and this mode's own kernels would both need (fp16's own kernels as
measured) for --goal. --weight-gb: the weight bytes a step reads (the synthetic Llama-3-8B 4-bit:
7.50 G weights at 0.5625 bytes with their group-64 fp16 scales and biases). --device-ms: both
modes' step times by the device clock (`--profile` with MLXCEL_DEVICE_CLOCK=1) in place of ncu's
kernel sums, whose serialized launches slow some kernels (cuDNN's fp16 SDPA by ~8% at 128K in
session 37); each mode's own time is then its step less the shared kernels' ncu sum.
"""

import argparse
import csv
import gzip
import io
import sys



def kv_bytes(kind: str, d: int) -> int:
    """Bytes per token and KV head of one layer's cache (the module docstring's formulas)."""
    return {"fp16": 4 * d, "turbo4": d + 4, "turbo4-asym": 2 * d + d // 2 + 2, "fp16+int8": 3 * d + 2}[kind]


# Each mode's default boundary layers: (count, storage) (the module docstring; ADRs 0012, 0027, 0028).
BOUNDARY = {"turbo4": (3, "turbo4-asym"), "turbo4-asym": (4, "fp16+int8")}


def family(name: str, grid: str) -> str:
    """The kernel family of one launch (the names mlxcel's kernels and MLX's / cuDNN's carry)."""
    if "qgemv4_silu" in name:
        return "gate/up"
    if "qgemv4_qkv_enc" in name:
        return "qkv+append"
    if "qgemv4_qkv" in name:
        return "qkv"
    if "qgemv4" in name:
        if grid.startswith("(8016"):
            return "head"
        # down (K = 14336) and o_proj (K = 4096) differ in their shared-memory template argument
        return "down" if "_67840_" in name else "o_proj"
    if "decode_attention" in name:
        return "attention (boundary)" if grid.startswith("(33,") else "attention"
    if "sdpa" in name or "lean_reduction" in name:
        return "sdpa"
    if "merge" in name:
        return "merge"
    if "append" in name or "int8_kv" in name:
        return "append"
    if "rope" in name:
        return "rope"
    return "argmax, embedding" if (is_argmax(name) or "gather" in name or "dequantize" in name) else "other"


def is_argmax(name: str) -> bool:
    """The step's one argmax launch: MLX's arg_reduce, or mlxcel's argmax_token (session 33 on)."""
    return "arg_reduce" in name or "argmax_token" in name


def launches(path: str) -> list:
    """(kernel name, grid, us) of every profiled launch in one ncu CSV."""
    rows = []
    text = (gzip.open if path.endswith(".gz") else open)(path, "rt").read().splitlines()
    start = next((i for i, line in enumerate(text) if line.startswith('"ID"')), None)
    if start is None:
        sys.exit(f'{path}: no ncu CSV header ("ID",...)')
    for row in csv.DictReader(io.StringIO("\n".join(text[start:]))):
        value = row.get("gpu__time_duration.sum", "").replace(",", "")
        try:
            rows.append((row["Kernel Name"], row.get("Grid Size", ""), float(value) / 1e3))  # ns -> us
        except ValueError:
            continue  # ncu's units row
    return rows


def budget(mode: str, ctx: int, path: str, a, show: bool = True) -> dict:
    """One mode's per-step kernel time split into shared and own (ms), with its KV bytes (GB)."""
    fam: dict[str, float] = {}
    count: dict[str, int] = {}
    rows = launches(path)
    for name, grid, t in rows:
        k = family(name, grid)
        fam[k] = fam.get(k, 0.0) + t
        count[k] = count.get(k, 0) + 1
    steps = sum(1 for name, _, _ in rows if is_argmax(name))
    if steps == 0:
        sys.exit(f"{path}: no argmax launch, so no whole decode step to divide by")
    per = {k: v / steps for k, v in fam.items()}
    if show:
        for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"  {k:22s} {v:8.1f} us  ({count[k] / steps:.0f} launches)")

    # The plain stacked qkv's time per launch: turbo4's boundary layers run it, fp16 runs it in
    # every layer; turbo4's other layers fold the append into it (qkv+append).
    plain_qkv = per.get("qkv", 0.0) / (count.get("qkv", 0) / steps) if count.get("qkv") else 0.0
    shared_parts = ["gate/up", "down", "o_proj", "head", "argmax, embedding"]
    shared = sum(per.get(k, 0.0) for k in shared_parts) + plain_qkv * a.layers
    total = sum(per.values())
    own = total - shared
    d = a.head_dim
    if mode == "fp16":
        per_token = kv_bytes("fp16", d) * a.layers
    else:
        count, kind = BOUNDARY[mode]
        count = count if a.boundary is None else a.boundary
        per_token = kv_bytes(mode, d) * (a.layers - count) + kv_bytes(kind, d) * count
    total_bytes = per_token * ctx * a.kv_heads
    roof = total_bytes / (a.copy_tbs * 1e12) * 1e6  # us
    if show:
        print(f"{mode} {ctx}: {steps} steps, kernels {total / 1e3:.3f} ms per step")
        print(f"  shared (weight GEMVs with the plain qkv at {plain_qkv:.2f} us x {a.layers}, argmax, embedding): {shared / 1e3:.3f} ms")
        print(f"  the mode's own: {own / 1e3:.3f} ms; its KV bytes {total_bytes / 1e9:.3f} GB, {roof / 1e3:.3f} ms at "
              f"{a.copy_tbs} TB/s ({100 * roof / own:.0f}% of that speed)")
    return {"shared": shared / 1e3, "own": own / 1e3, "own_roof": roof / 1e3}


def frontier(m: dict, f: dict, a) -> None:
    """What the --goal ratio against fp16 needs, from both modes' budgets (ms per step)."""
    if a.device_ms:
        m["own"], f["own"] = a.device_ms[0] - m["shared"], a.device_ms[1] - f["shared"]
        print(f"by the device clock: this mode {a.device_ms[0]:.3f} ms per step, fp16 {a.device_ms[1]:.3f}")
    weights_roof = a.weight_gb / a.copy_tbs  # ms
    print(f"against fp16 (shared {f['shared']:.3f} + own {f['own']:.3f} ms; its own at "
          f"{100 * f['own_roof'] / f['own']:.0f}% of copy speed):")
    print(f"  ratio by {'the device clock' if a.device_ms else 'kernel sums'}: "
          f"{(f['shared'] + f['own']) / (m['shared'] + m['own']):.2f}x")
    print(f"  this mode's own kernels at copy speed: {(f['shared'] + f['own']) / (m['shared'] + m['own_roof']):.2f}x")
    print(f"  every kernel of both at copy speed (weights {weights_roof:.3f} ms): "
          f"{(weights_roof + f['own_roof']) / (weights_roof + m['own_roof']):.2f}x")
    # Shared GEMVs and this mode's own kernels both at a fraction e of copy speed, fp16's own as
    # measured: W / e + F >= g (W / e + T / e)  <=>  e >= ((g - 1) W + g T) / F.
    need = ((a.goal - 1) * weights_roof + a.goal * m["own_roof"]) / f["own"]
    now_s, now_o = weights_roof / m["shared"], m["own_roof"] / m["own"]
    print(f"  {a.goal}x needs the shared GEMVs and this mode's own kernels both at >= {100 * need:.0f}% of copy "
          f"speed (now {100 * now_s:.0f}% and {100 * now_o:.0f}%)" + ("; above 100%: out of reach by bytes" if need > 1 else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["fp16", "turbo4", "turbo4-asym"])
    ap.add_argument("ctx", type=int)
    ap.add_argument("csv")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--boundary", type=int, help="boundary layers (default: the mode's default count)")
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--copy-tbs", type=float, default=4.24, help="copy roofline, TB/s (torch copy on this H200)")
    ap.add_argument("--against", help="fp16's ncu CSV at the same context: print the ratio frontier")
    ap.add_argument("--goal", type=float, default=2.0, help="the ratio against fp16 the frontier is for")
    ap.add_argument("--weight-gb", type=float, default=4.22, help="weight bytes a decode step reads, GB")
    ap.add_argument("--device-ms", type=float, nargs=2, metavar=("MODE_MS", "FP16_MS"),
                    help="both modes' steps by the device clock, in place of the kernel sums")
    a = ap.parse_args()
    m = budget(a.mode, a.ctx, a.csv, a)
    if a.against:
        frontier(m, budget("fp16", a.ctx, a.against, a, show=False), a)


if __name__ == "__main__":
    main()
