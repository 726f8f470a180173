#!/usr/bin/env python3
"""Medians over repeated runs: `repeats_summary.py DIR` reads DIR/*.json written by
e2e_run.sh with tags ending in a round number (e.g. `r2lift-turbo4-131072.json`: tag
`r2lift`, round 2, config `lift`) and prints, per context and config, the median and range
of steady tok/s, host ms per step, submit, device span, idle, and the decode loop thread's
CPU ms per step, the process's, and preemptions, plus each config's median ratio to the
median of fp16 at the same context (of the same build where the tag names one, e.g. `r1A`). Host variance between runs of one configuration was up to 45%
in session 8, so single samples decide nothing."""
import glob, json, os, re, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    m = re.match(r"r(\d+)([^-]*)-(.+)-(\d+)\.json$", os.path.basename(f))
    if not m:
        continue
    _, cfg, kv, ctx = m.groups()
    try:
        s = json.load(open(f))["stats"]
    except Exception as e:  # a failed run leaves an empty or partial file
        print(f"{os.path.basename(f)}: unreadable ({e})")
        continue
    ms = lambda k: None if s.get(k) is None else 1e3 * s[k]
    rows[(int(ctx), kv + (f" {cfg}" if cfg else ""))].append({
        "tok/s": s["decode_steady_tokens_per_second"],
        "host": ms("decode_host_seconds_per_step_steady"),
        "submit": ms("decode_submit_seconds_per_step_steady"),
        "device": ms("decode_device_seconds_inside_step_steady"),
        "idle": ms("decode_device_seconds_between_steps_steady"),
        "cpu thread": ms("decode_loop_thread_cpu_seconds_per_step_steady"),
        "cpu process": ms("decode_process_cpu_seconds_per_step_steady"),
        "preempt": s.get("decode_loop_thread_preemptions_per_step_steady"),
    })

def fmt(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})"

cols = ["tok/s", "host", "submit", "device", "idle", "cpu thread", "cpu process", "preempt"]
print("| ctx | config | n | ratio | " + " | ".join(cols) + " |")
print("|---" * (len(cols) + 4) + "|")
for (ctx, name) in sorted(rows):
    runs = rows[(ctx, name)]
    # Against fp16 of the same build (config "fp16 A" for "turbo4 A"), else plain fp16.
    suffix = name.split(" ", 1)[1] if " " in name else ""
    fp16 = rows.get((ctx, f"fp16 {suffix}")) or rows.get((ctx, "fp16"))
    med = statistics.median(r["tok/s"] for r in runs)
    ratio = f"{med / statistics.median(r['tok/s'] for r in fp16):.2f}x" if fp16 else "-"
    print(f"| {ctx} | {name} | {len(runs)} | {ratio} | " + " | ".join(fmt([r[c] for r in runs]) for c in cols) + " |")
