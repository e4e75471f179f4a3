"""The screening proxy's added latency over a direct call to a loopback upstream.

The upstream is ``benchmarks/_loopback_server.py ... chat`` (a constant chat completion,
no delay).
Direct: POST to it; proxied: POST ``/v1/chat/completions`` through the guard
(``pattern`` screens the user message, the audit record is committed, then the body is
forwarded with httpx and the answer returned). Concurrency 8, interleaved rounds.

    python benchmarks/service_proxy.py [N]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _service_harness import load, ms, quantile, start


def main(n: int = 1500) -> None:
    upstream = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_loopback_server.py")), "0", "chat"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert upstream.stdout is not None
    port = int(upstream.stdout.readline().strip().split()[-1])
    base = f"http://127.0.0.1:{port}/v1"
    server = start("--defense", "pattern", "--upstream", base)
    try:
        lat: dict[str, list[float]] = {"direct": [], "proxy": []}
        counter = 0
        for _round in range(3):
            bodies = [
                {"model": "m", "messages": [{"role": "user", "content": f"question {counter + i}"}]}
                for i in range(n // 3)
            ]
            counter += len(bodies)
            got, _, _ = load(f"{base}/chat/completions", bodies, concurrency=8)
            lat["direct"].extend(got)
            got, _, answers = load(f"{server.url}/v1/chat/completions", bodies, concurrency=8)
            assert all(status == 200 for status, _ in answers), answers[:2]
            lat["proxy"].extend(got)
        print(f"proxy added latency, {n} requests, concurrency 8")
        print(f"  direct  {ms(lat['direct'])}")
        print(f"  proxied {ms(lat['proxy'])}")
        for q in (0.5, 0.99):
            added = (quantile(lat["proxy"], q) - quantile(lat["direct"], q)) * 1000
            print(f"  added at p{int(q * 100)}: {added:.2f} ms")
    finally:
        server.stop()
        upstream.terminate()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1500)
