"""``shieldbench view`` as a user starts it, and the charts' escaping.

The command is started as a process on a free loopback port over the test
history; it prints the URL, answers, and stops on SIGINT (Ctrl-C). With
``--token auto`` the printed URL carries a fresh token and a request without it is
refused. Any label drawn in a chart stays text: the SVG parses as XML and holds no
element but the chart's own.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.charts import Bar, Point, Series, histogram, interval_bars, line_chart, plane

from .conftest import History


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "shieldbench", "view", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    printed = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        printed += line
        found = re.search(r"open (http://127\.0\.0\.1:\d+/runs\S*)", line)
        if found:
            return proc, found[1]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"view did not start: {printed}")


def _wait(url: str, **kwargs: object) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, timeout=30, **kwargs)  # type: ignore[arg-type]
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.slow
def test_the_command_serves_the_history_and_stops_on_ctrl_c(sqlite_history: History) -> None:
    port = _free_port()
    proc, url = _start("--db", sqlite_history.url, "--port", str(port))
    try:
        assert url == f"http://127.0.0.1:{port}/runs"
        page = _wait(url)
        assert page.status_code == 200
        assert sqlite_history.base in page.text
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


@pytest.mark.slow
def test_token_auto_prints_a_url_with_a_fresh_token(sqlite_history: History) -> None:
    port = _free_port()
    proc, url = _start("--db", sqlite_history.url, "--port", str(port), "--token", "auto")
    try:
        token = url.partition("?token=")[2]
        assert len(token) >= 16
        assert _wait(url.partition("?")[0]).status_code == 401
        ok = _wait(url.partition("?")[0], headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


TEXT = st.text(min_size=1, max_size=40)
UNIT = st.floats(0, 1)
OWN = {"svg", "title", "line", "text", "rect", "polyline", "circle"}


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    tags = {el.tag for el in root.iter()}
    assert tags <= OWN, tags - OWN
    return root


@settings(max_examples=50, deadline=None)
@given(labels=st.lists(TEXT, min_size=1, max_size=4), values=st.lists(UNIT, min_size=4, max_size=4))
def test_any_label_in_a_chart_stays_text(labels: list[str], values: list[float]) -> None:
    labels = ["".join(c for c in label if c.isprintable()) or "x" for label in labels]
    lo, hi = sorted(values[:2])
    bars = interval_bars([Bar(label, values[2], lo, hi) for label in labels], title=labels[0])
    shown = " ".join(t.text or "" for t in _parse(bars).iter("title"))
    assert all(label in shown for label in labels)
    lines = line_chart(
        [Series(label, [(0.0, lo), (1.0, hi)]) for label in labels],
        title=labels[0],
        x_label=labels[-1],
        y_label="y",
        unit_box=True,
    )
    _parse(lines)
    points = [Point(label, lo, lo, hi, values[3], 0.0, 1.0, True) for label in labels]
    _parse(plane(points, title=labels[0], max_fpr=0.01))
    _parse(histogram([0.1, 1.0, 10.0], [3, 0], title=labels[0]))
