"""A tiny HTTP/1.1 guard API on loopback for benchmarks: every answer takes ``DELAY_S``.

``python benchmarks/_loopback_server.py [DELAY_S]`` prints the port it listens on,
then serves until killed. Each connection is kept alive and handled by its own
asyncio task, so the server answers as many concurrent requests as there are
connections without queueing them; one request costs it a few tens of
microseconds of CPU besides the sleep. It imports nothing but the standard
library, so it starts fast and runs in its own process (its CPU is not the
client's).

Every request gets ``{"blocked": false, "score": 0.1}``.
"""

from __future__ import annotations

import asyncio
import sys

BODY = b'{"blocked": false, "score": 0.1}'
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(delay_s)
            writer.write(RESPONSE)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(delay_s: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, delay_s), "127.0.0.1", 0, backlog=1024
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.020))
