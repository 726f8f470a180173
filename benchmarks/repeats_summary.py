#!/usr/bin/env python3
"""Medians over repeated runs: `repeats_summary.py DIR [--csv FILE]` reads DIR/*.json
written by `mlxcel generate --json` (benchmarks/gpu/e2e_run.sh, benchmarks/bench_kv_cache.sh)
with tags ending in a round number (e.g. `r2lift-turbo4-131072.json`: tag `r2lift`, round 2,
config `lift`; also `on2-...` / `off2-...` from flag_rounds) and prints a markdown table: per context and config, the median and range of
steady tok/s, host ms per step, submit, device span, idle, the decode loop thread's CPU ms
per step, the process's, preemptions, and the share of the decode's slice_update cache
appends that copied the cache; KV-cache MB (and its compression against fp16)
and peak memory MB; and each config's median ratio to the median of fp16 at the same context
(of the same build where the tag names one, e.g. `r1A`). With --csv, one row per run too.
Host variance between runs of one configuration was up to 45% in session 8, so single
samples decide nothing. Archived runs may be gzipped (`*.json.gz`): they are read alike."""
import csv, glob, gzip, json, os, re, statistics, sys
from collections import defaultdict

args = sys.argv[1:]
csv_path = None
if "--csv" in args:
    i = args.index("--csv")
    csv_path = args[i + 1]
    del args[i:i + 2]
if len(args) != 1:
    sys.exit("usage: repeats_summary.py DIR [--csv FILE]")

rows = defaultdict(list)
runs = []
files = glob.glob(os.path.join(args[0], "*.json")) + glob.glob(os.path.join(args[0], "*.json.gz"))
for f in sorted(files):
    base = os.path.basename(f).removesuffix(".gz")
    m = re.match(r"r(\d+)([^-]*)-(.+)-(\d+)\.json$", base)
    if m:
        rnd, cfg, kv, ctx = m.groups()
    else:
        # flag_rounds (benchmarks/gpu/e2e_run.sh): on<round> / off<round>, config `on` / `off`.
        m = re.match(r"(on|off)(\d+)-(.+)-(\d+)\.json$", base)
        if not m:
            continue
        cfg, rnd, kv, ctx = m.groups()
    try:
        s = json.load((gzip.open if f.endswith(".gz") else open)(f, "rt"))["stats"]
    except Exception as e:  # a failed run leaves an empty or partial file
        print(f"{base}: unreadable ({e})", file=sys.stderr)
        continue
    ms = lambda k: None if s.get(k) is None else 1e3 * s[k]
    r = {
        "tok/s": s["decode_steady_tokens_per_second"],
        "host": ms("decode_host_seconds_per_step_steady"),
        "submit": ms("decode_submit_seconds_per_step_steady"),
        "device": ms("decode_device_seconds_inside_step_steady"),
        "idle": ms("decode_device_seconds_between_steps_steady"),
        "cpu thread": ms("decode_loop_thread_cpu_seconds_per_step_steady"),
        "cpu process": ms("decode_process_cpu_seconds_per_step_steady"),
        "preempt": s.get("decode_loop_thread_preemptions_per_step_steady"),
        "kv MB": s["kv_cache_bytes"] / 1e6,
        "peak MB": s["peak_memory_bytes"] / 1e6,
        # Share of the decode's slice_update cache appends that copied the layer's cache
        # (recorded since session 22; older runs have no count).
        "appends copied": (s["decode_kv_appends_copied"] / s["decode_kv_appends_seen"]
                           if s.get("decode_kv_appends_seen") else None),
    }
    name = kv + (f" {cfg}" if cfg else "")
    rows[(int(ctx), name)].append(r)
    runs.append({"context": int(ctx), "config": name, "round": int(rnd),
                 "prompt_fill": s.get("prompt_fill", "model"),
                 "prefill tok/s": s.get("prefill_tokens_per_second"), **r})

def fmt(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})"

def med(runs_, key):
    vals = [r[key] for r in runs_ if r[key] is not None]
    return statistics.median(vals) if vals else None

cols = ["tok/s", "host", "submit", "device", "idle", "cpu thread", "cpu process", "preempt",
        "appends copied"]
print("| ctx | config | n | ratio | " + " | ".join(cols) + " | KV MB (x fp16) | peak MB |")
print("|---" * (len(cols) + 6) + "|")
for (ctx, name) in sorted(rows):
    rs = rows[(ctx, name)]
    # Against fp16 of the same build (config "fp16 A" for "turbo4 A"), else plain fp16.
    suffix = name.split(" ", 1)[1] if " " in name else ""
    fp16 = rows.get((ctx, f"fp16 {suffix}")) or rows.get((ctx, "fp16"))
    ratio = f"{med(rs, 'tok/s') / med(fp16, 'tok/s'):.2f}x" if fp16 else "-"
    kv_mb = med(rs, "kv MB")
    comp = f" ({med(fp16, 'kv MB') / kv_mb:.2f}x)" if fp16 and kv_mb else ""
    print(f"| {ctx} | {name} | {len(rs)} | {ratio} | " + " | ".join(fmt([r[c] for r in rs]) for c in cols)
          + f" | {kv_mb:.1f}{comp} | {med(rs, 'peak MB'):.1f} |")

if csv_path:
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(runs[0].keys()) if runs else ["context"])
        w.writeheader()
        for r in sorted(runs, key=lambda r: (r["context"], r["config"], r["round"])):
            w.writerow(r)
