#!/usr/bin/env python3
"""One time axis for the host's and the device's view of the pipelined decode steps.

Reads the JSON of `mlxcel generate --json --profile` run with MLXCEL_DEVICE_CLOCK=1 (its
`stats.decode_timeline`: per step, host Unix-clock times of build start, submit
(`async_eval`) start and end, wait start and end; device `%globaltimer` times of the step's
first CUDA graph start ("launch"), first node and last node).

The two clocks differ by an unknown offset (host = device + offset). Two facts bound it:
a step's first graph cannot start on the device before the host entered `async_eval` for
it (offset >= submit_start - launch), and a wait cannot end before the step's last node ran
(offset <= wait_end - last). The script prints the bounds, picks the lower one (the
wait's wake-up latency is the slack), and prints the median time of each event in a step,
relative to the step's host build start.

    python3 benchmarks/gpu/timeline.py run.json [more.json ...]
"""
import gzip
import json
import statistics
import sys


def analyse(path):
    stats = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))["stats"]
    steps = stats.get("decode_timeline")
    if not steps:
        print(f"{path}: no decode_timeline (run with MLXCEL_DEVICE_CLOCK=1 on CUDA)")
        return
    tail = [s for s in steps[len(steps) // 2:] if s["host_wait_end"]]
    if not tail:
        print(f"{path}: no waited steps in the second half (too few steps?)")
        return
    lo = max(s["host_submit_start"] - s["device_launch"] for s in tail)
    hi = min(s["host_wait_end"] - s["device_last"] for s in tail)
    print(f"{path}: {stats['kv_cache_mode']}, {stats['decode_steady_tokens_per_second']:.1f} tok/s, "
          f"{len(tail)} steps; clock offset bounds [{lo}, {hi}] ns (width {(hi - lo) / 1e3:.1f} us"
          + (", inconsistent: clocks drift or the probes are not where assumed)" if hi < lo else ")"))
    off = lo

    def rel(s, key, base):
        v = s[key] + (off if key.startswith("device") else 0)
        return (v - base) / 1e6

    rows = {}
    prev_last = {}
    for i, s in enumerate(steps):
        prev_last[i] = s["device_last"] + off
    for i, s in enumerate(steps[len(steps) // 2:], start=len(steps) // 2):
        if not s["host_wait_end"] or i == 0:
            continue
        base = s["host_build_start"]
        for key in ("host_submit_start", "host_submit_end", "device_launch", "device_first",
                    "device_last", "host_wait_start", "host_wait_end"):
            rows.setdefault(key, []).append(rel(s, key, base))
        rows.setdefault("previous step's device_last", []).append((prev_last[i - 1] - base) / 1e6)
        rows.setdefault("device idle before launch", []).append(
            (s["device_launch"] - steps[i - 1]["device_last"]) / 1e6)
        rows.setdefault("launch to first node", []).append(
            (s["device_first"] - s["device_launch"]) / 1e6)
        rows.setdefault("first to last node", []).append(
            (s["device_last"] - s["device_first"]) / 1e6)
        rows.setdefault("host build (model code)", []).append(
            (s["host_submit_start"] - s["host_build_start"]) / 1e6)
        rows.setdefault("host submit (async_eval)", []).append(
            (s["host_submit_end"] - s["host_submit_start"]) / 1e6)
    print("  median ms; event times relative to the step's host build start:")
    for key, v in rows.items():
        print(f"    {key:32s} {statistics.median(v):8.3f}   (p10 {sorted(v)[len(v) // 10]:.3f},"
              f" p90 {sorted(v)[(len(v) * 9) // 10]:.3f})")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        analyse(p)
