"""Drive the Debian Chromium like a user, over the DevTools protocol, with the stdlib.

The report tests read a page back with ``--dump-dom``; the viewer has to be *used*
(type into a filter, click a link, submit a form), so these tests start Chromium
headless with ``--remote-debugging-port`` on 127.0.0.1 and speak the DevTools
protocol over a websocket written here with :mod:`socket` (RFC 6455: masked text
frames out, unmasked frames in): no driver, no Playwright, no downloaded browser.

Clicks and typing are real input events (``Input.dispatchMouseEvent`` at the
element's centre, ``Input.insertText`` into the focused field), so a link hidden
under another element or outside the viewport would not be clicked. Console
messages, uncaught exceptions and browser log entries (Content-Security-Policy
violations among them) are collected for the test to assert on.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["Browser", "find_chromium"]

_TIMEOUT = 120.0  # seconds for one DevTools answer (a loaded 2-core machine is slow)

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-allow-origins=http://127.0.0.1",
)


def find_chromium() -> str | None:
    explicit = os.environ.get("SHIELDBENCH_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _Socket:
    """A minimal websocket client (text frames) over a loopback TCP socket."""

    def __init__(self, url: str, timeout: float = 120.0) -> None:
        match = re.fullmatch(r"ws://127\.0\.0\.1:(\d+)(/.*)", url)
        if match is None:
            raise ValueError(f"not a loopback DevTools websocket: {url}")
        self._sock = socket.create_connection(("127.0.0.1", int(match[1])), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self._sock.sendall(
            (
                f"GET {match[2]} HTTP/1.1\r\nHost: 127.0.0.1:{match[1]}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self._sock.recv(1)
            if not chunk:
                raise ConnectionError("DevTools closed the websocket handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self._sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("DevTools closed the websocket")
            out += chunk
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytes([0x81])
        n = len(data)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self._sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def receive(self) -> str:
        parts = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the websocket")
            if opcode in (0x9, 0xA):  # ping / pong: not sent by DevTools in practice
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def settimeout(self, seconds: float) -> None:
        self._sock.settimeout(seconds)

    def close(self) -> None:
        self._sock.close()


class Browser:
    """One headless Chromium with one page, driven like a user."""

    def __init__(self, chromium: str, *, width: int = 1280, height: int = 900) -> None:
        self._profile = tempfile.mkdtemp(prefix="sb-view-chromium-")
        self._proc = subprocess.Popen(
            [
                chromium,
                *_FLAGS,
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self._profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._devtools_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self._ws = _Socket(pages[0]["webSocketDebuggerUrl"])
        self._next = 0
        self.console: list[str] = []
        self._events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.resize(width, height)

    def _devtools_port(self) -> int:
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if port_file.is_file():
                text = port_file.read_text().split("\n")
                if text and text[0].strip().isdigit():
                    return int(text[0])
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._proc.returncode}")
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port in 60 s")

    def _record(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console.append(" ".join(str(a.get("value", a)) for a in params.get("args", ())))
        elif method == "Runtime.exceptionThrown":
            self.console.append(str(params.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.console.append(
                f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"
            )
        self._events.append(message)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._record(message)

    def _wait_event(self, name: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        for i, event in enumerate(self._events):
            if event.get("method") == name:
                del self._events[: i + 1]
                return
        while (left := deadline - time.monotonic()) > 0:
            self._ws.settimeout(left)
            try:
                message = json.loads(self._ws.receive())
            except TimeoutError:
                break
            finally:
                self._ws.settimeout(_TIMEOUT)
            self._record(message)
            if message.get("method") == name:
                self._events.clear()
                return
        raise TimeoutError(f"no {name} in {timeout} s (at {self.js('location.href')})")

    def resize(self, width: int, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )

    def open(self, url: str) -> None:
        self._events.clear()
        self.call("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def _centre(self, selector: str) -> tuple[float, float]:
        found = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getClientRects()[0] || e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height]; })()"
        )
        if found is None:
            raise LookupError(f"no element matches {selector!r} on {self.js('location.href')}")
        x, y, w, h = found
        if w <= 0 or h <= 0:
            raise LookupError(f"{selector!r} is not visible")
        return x, y

    def click(self, selector: str, *, navigates: bool = False) -> None:
        """Click the element's centre with the mouse (and wait for the next page)."""
        x, y = self._centre(selector)
        if navigates:
            self._events.clear()
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        if navigates:
            self._wait_event("Page.loadEventFired")

    def type_into(self, selector: str, text: str) -> None:
        """Click into a field, select what it holds, and type ``text`` over it."""
        self.click(selector)
        self.js(f"document.querySelector({json.dumps(selector)}).select()")
        self.call("Input.insertText", text=text)

    def press_enter(self, *, navigates: bool = True) -> None:
        if navigates:
            self._events.clear()
        for kind in ("keyDown", "keyUp"):
            self.call(
                "Input.dispatchKeyEvent",
                type=kind,
                key="Enter",
                code="Enter",
                windowsVirtualKeyCode=13,
                text="\r" if kind == "keyDown" else "",
            )
        if navigates:
            self._wait_event("Page.loadEventFired")

    def overflow_px(self) -> int:
        """How far the page is wider than the window (0: no horizontal scrolling)."""
        return int(
            self.js("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        )

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            shutil.rmtree(self._profile, ignore_errors=True)
