"""Replaces the prompt's token ids in archived `mlxcel generate --json` runs by a digest.

    python3 benchmarks/gpu/strip_prompt_tokens.py FILE_OR_DIR...

Why: a 128K-context run's JSON lists its 131072 prompt ids (~0.9 MB of its ~1.5 MB), and the
benchmarks' prompts are random fills (`--prompt-fill random-kv`) that no analysis reads; the
device tool takes at most 64 MiB of working tree per call, which the archived runs had reached
(session 47). Each `prompt_tokens` list longer than 64 becomes {"count", "first" (its first 16
ids), "sha256" (of the ids joined by commas)}; the generated tokens and the statistics stay
as written. Files are rewritten in place, gzipped or not as they were; others are left alone.
"""

import glob
import gzip
import hashlib
import json
import os
import sys

KEEP = 64


def strip(path: str) -> bool:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            run = json.load(f)
    except (OSError, ValueError):
        return False  # a failed run leaves an empty or partial file
    ids = run.get("prompt_tokens") if isinstance(run, dict) else None
    if not isinstance(ids, list) or len(ids) <= KEEP:
        return False
    run["prompt_tokens"] = {
        "count": len(ids),
        "first": ids[:16],
        "sha256": hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest(),
    }
    if path.endswith(".gz"):
        with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:
            f.write(json.dumps(run).encode())
    else:
        with open(path, "w") as f:
            json.dump(run, f)
    return True


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: strip_prompt_tokens.py FILE_OR_DIR...")
    files = []
    for a in sys.argv[1:]:
        if os.path.isdir(a):
            files += glob.glob(os.path.join(a, "**", "*.json"), recursive=True)
            files += glob.glob(os.path.join(a, "**", "*.json.gz"), recursive=True)
        else:
            files.append(a)
    n = sum(strip(f) for f in sorted(files))
    print(f"{n} of {len(files)} runs had their prompt ids replaced by a digest")


if __name__ == "__main__":
    main()
