#!/usr/bin/env python3
"""`mlxcel serve` on a GPU: start it on a model without a tokenizer (synthetic weights), send
token-id prompts to /v1/completions and print what came back, so that a device call shows
the server decoding on its model thread there and reusing its KV cache across requests.

    serve_smoke.py BIN MODEL KV PROMPT_TOKENS

Requests (greedy; synthetic weights never stop early, so each reply is max_tokens long):
  1. PROMPT_TOKENS random ids, 64 new tokens: nothing cached;
  2. the same ids plus 16 more, 64 new tokens: the first request's prompt comes from the
     cache (cached_tokens >= PROMPT_TOKENS);
  3. request 2 streamed: cached_tokens = its prompt minus one, and the stream ends in [DONE].
The server's own log lines (prompt tokens, cached, tok/s) are printed at the end: compare
their decode speed with `mlxcel generate` at the same context. Exits 1 on any mismatch.
"""
import json
import random
import subprocess
import sys
import threading
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read().decode()


def main():
    binary, model, kv, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--model", model, "--kv", kv],
        stderr=subprocess.PIPE,
        text=True,
    )
    log, url = [], []
    ready = threading.Event()

    def read():
        for line in proc.stderr:
            log.append(line.rstrip())
            if "at http://" in line and not url:
                url.append(line.split("at ", 1)[1].strip())
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ok = True
    try:
        if not ready.wait(600) or not url:
            print("the server did not start:\n" + "\n".join(log))
            return 1
        base = url[0]
        rng = random.Random(7)
        ids = [rng.randrange(10, 250) for _ in range(n)]
        more = ids + [rng.randrange(10, 250) for _ in range(16)]
        for i, (prompt, stream) in enumerate([(ids, False), (more, False), (more, True)], 1):
            t = time.time()
            body = {"prompt": prompt, "max_tokens": 64, "temperature": 0}
            if stream:
                body.update(stream=True, stream_options={"include_usage": True})
            raw = post(base + "/completions", body)
            secs = time.time() - t
            if stream:
                events = [e[6:] for e in raw.split("\n\n") if e.startswith("data: ")]
                done = events[-1] == "[DONE]"
                usage = json.loads(events[-2])["usage"] if done else {}
                ok &= done
            else:
                usage = json.loads(raw)["usage"]
            cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", -1)
            want = {1: 0, 2: n, 3: len(more) - 1}[i]
            good = usage.get("completion_tokens") == 64 and (
                cached >= want if i == 2 else cached == want
            )
            ok &= good
            print(
                f"request {i}: {'ok' if good else 'MISMATCH'} {secs:.2f} s, usage {usage}"
                f" (cached want {'>=' if i == 2 else '=='} {want})"
            )
    finally:
        proc.terminate()
        proc.wait(30)
    print("server log:\n  " + "\n  ".join(log[-8:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
