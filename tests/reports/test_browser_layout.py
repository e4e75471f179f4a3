"""Reports of 2, 6 and 12 defenses in headless Chromium: they fit a 1280 px window.

Each report is opened twice with the harness of :mod:`test_browser`: once as a copy
with a measuring script appended (its hash added to the report's Content-Security-
Policy), which writes what it measured into the DOM as JSON for ``--dump-dom`` to read
back, and once as written, to check that the report's own script still runs and to
take a screenshot (``SHIELDBENCH_SCREENSHOTS=DIR`` keeps them; the README's
``docs/report.png`` is the six-defense one of ``make demo``). The runs are real: the
engine runs cheap defenses (``pattern`` variants, keyword and length rules) over
``builtin:smoke``, whose 17 categories also stress the per-category views.
"""

from __future__ import annotations

import base64
import hashlib
import html as htmllib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.reports import build_report, write_reports
from shieldbench.types import Run, RunConfig, Verdict

from .conftest import Keyword
from .test_browser import Strict, _browse, _dom, chromium, dump_dom, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["chromium"]  # the fixture, shared with test_browser


WINDOW = 1280
# Appended to a copy of the report (its hash added to the CSP): measures the laid-out
# page and writes the figures into the DOM as JSON, for --dump-dom to read back.
_MEASURE = r"""
(function () {
  var W = window.innerWidth, out = {width: W, scrollWidth: document.documentElement.scrollWidth,
    outside: [], scrollers: [], scrolling: [], breaking: [], wrapped: [], sticky: 0,
    stickyFirst: 0};
  function scroller(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      var s = getComputedStyle(p).overflowX;
      if (s === "auto" || s === "scroll") { return p; }
    }
    return null;
  }
  var blocks = "table, figure, .cards, .charts, p, ul, details";
  document.querySelectorAll(blocks).forEach(function (el) {
    var sc = scroller(el);
    var right = (sc || el).getBoundingClientRect().right;
    if (right > W + 0.5) {
      var what = el.tagName + "." + el.className + " " + Math.round(right);
      (sc ? out.scrollers : out.outside).push(what);
    }
  });
  document.querySelectorAll("th, td").forEach(function (cell) {
    if (cell.classList.contains("text")) { return; }
    var s = getComputedStyle(cell);
    var wrap = s.overflowWrap;
    if (s.wordBreak === "break-all" || wrap === "anywhere" || wrap === "break-word") {
      out.breaking.push(cell.tagName + " " + cell.textContent.slice(0, 40));
    }
  });
  document.querySelectorAll("td code, th code, .ident, .pair").forEach(function (el) {
    if (el.getClientRects().length > 1) { out.wrapped.push(el.textContent.slice(0, 40)); }
  });
  document.querySelectorAll(".scroll thead th").forEach(function (th) {
    if (getComputedStyle(th).position === "sticky") { out.sticky++; }
  });
  document.querySelectorAll(".scroll tbody td:first-child").forEach(function (td) {
    if (getComputedStyle(td).position === "sticky") { out.stickyFirst++; }
  });
  document.querySelectorAll(".scroll").forEach(function (sc) {
    if (sc.scrollWidth > sc.clientWidth + 1) {
      var section = sc.closest("section");
      out.scrolling.push((section ? section.id : "") + " " + sc.firstElementChild.className);
    }
  });
  out.tables = document.querySelectorAll("table").length;
  out.tablesInScroll = document.querySelectorAll(".scroll > table").length;
  out.planes = document.querySelectorAll("#tradeoff figure svg").length;
  out.matrices = document.querySelectorAll("#comparison table.matrix").length;
  out.sparks = document.querySelectorAll("#summary .spark").length;
  out.cards = document.querySelectorAll("#summary .card").length;
  out.idents = Array.prototype.map.call(document.querySelectorAll(".ident code"), function (c) {
    return [c.textContent, c.getAttribute("title")];
  });
  var pre = document.createElement("pre");
  pre.id = "layout-measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def measure_layout(chromium: str, page: Path, profile: Path) -> dict[str, Any]:
    """Open ``page`` (a copy with the measuring script) in a 1280 x 900 window."""
    text = page.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(_MEASURE.encode("utf-8")).digest()).decode()
    marker = "script-src &#39;"
    assert marker in text
    text = text.replace(marker, f"script-src &#39;sha256-{digest}&#39; &#39;", 1)
    text = text.replace("</body>", f"<script>{_MEASURE}</script></body>", 1)
    measured = page.with_name("measured.html")
    measured.write_text(text, encoding="utf-8")
    dom = _browse(
        chromium,
        measured,
        profile,
        f"--window-size={WINDOW},900",
        "--virtual-time-budget=3000",
        "--dump-dom",
    )
    found = re.search(r'<pre id="layout-measure">(.*?)</pre>', dom, re.S)
    assert found is not None, "the measuring script did not run"
    data: dict[str, Any] = json.loads(htmllib.unescape(found.group(1)))
    return data


class Words:
    """Blocks texts containing at least ``need`` of ``words``; score = share found."""

    def __init__(self, *words: str, need: int = 1) -> None:
        self.name = "words"
        self.words = words
        self.need = need

    def check(self, text: str) -> Verdict:
        lowered = text.lower()
        hits = sum(w in lowered for w in self.words)
        return Verdict(blocked=hits >= self.need, score=hits / len(self.words))


class Longer:
    """Blocks texts longer than ``limit`` characters (a poor defense, many false positives)."""

    name = "longer"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def check(self, text: str) -> Verdict:
        return Verdict(blocked=len(text) > self.limit, score=min(1.0, len(text) / (2 * self.limit)))


def _defenses() -> list[tuple[str, Any]]:
    """Twelve cheap defenses with realistic, some long, spec strings."""
    return [
        ("pattern", build_defense("pattern")),
        ("pattern(threshold=0.9)", build_defense("pattern(threshold=0.9)")),
        ("keyword", Keyword()),
        ("strict", Strict()),
        ("python:tests.words:ignore_instructions", Words("ignore", "instructions")),
        (
            "any(pattern, pattern(threshold=0.9))",
            build_defense("any(pattern, pattern(threshold=0.9))"),
        ),
        ("python:tests.words:system_prompt", Words("system prompt", "reveal", "secret")),
        (
            "python:tests.words:roleplay_two_of_four",
            Words("pretend", "roleplay", "game", "act as", need=2),
        ),
        ("pattern(threshold=0.3)", build_defense("pattern(threshold=0.3)")),
        ("python:tests.longer:over_120_characters", Longer(120)),
        ("python:tests.words:dan", Words("dan", "jailbreak", "mode", "unrestricted")),
        ("python:tests.words:never", Words("\x00")),
    ]


@pytest.fixture(scope="module")
def smoke_runs() -> list[Run]:
    data = load_dataset("builtin:smoke")
    config = RunConfig(warmup=0, concurrency=1)
    return [
        run_defense(defense, data, config=config, defense_spec=spec, run_id=f"layout-{i:02d}")
        for i, (spec, defense) in enumerate(_defenses())
    ]


@pytest.mark.parametrize("n", [2, 6, 12])
def test_reports_of_many_defenses_fit_a_1280_px_window(
    chromium: str, smoke_runs: list[Run], n: int, tmp_path: Path
) -> None:
    report = build_report(smoke_runs[:n], max_fpr=0.05)
    paths = write_reports(report, tmp_path / f"n{n}", formats=("html",))
    m = measure_layout(chromium, paths["html"], tmp_path / "profile")
    # The page never scrolls sideways, and nothing but a table's own container does.
    assert m["width"] == WINDOW
    assert m["scrollWidth"] <= WINDOW, m
    assert m["outside"] == [], m["outside"]
    assert m["scrollers"] == [], m["scrollers"]  # the containers themselves fit
    assert m["tables"] == m["tablesInScroll"]
    # The summary fits without scrolling even its own containers.
    assert not [s for s in m["scrolling"] if s.startswith("summary")], m["scrolling"]
    assert m["sticky"] > 0  # sticky header ...
    assert m["stickyFirst"] > 0  # ... and first column
    # No word is broken: cells do not break inside words; ids and codes stay on one line.
    assert m["breaking"] == [], m["breaking"][:5]
    assert m["wrapped"] == [], m["wrapped"][:5]
    # Short hashes and ids, the full value in the title (and a copy button).
    content_hash = smoke_runs[0].dataset.content_hash
    assert [content_hash[:17] + "…", content_hash] in m["idents"]
    assert all(
        len(short) <= 20 and full.startswith(short.rstrip("…")[:8]) for short, full in m["idents"]
    )
    # The plane (overall + per category), and the per-category comparison matrix.
    assert m["planes"] == 2
    assert m["matrices"] == 2  # every pair x metric; every pair x category
    # Summary cards for a few defenses; a compact table with interval bars for many.
    if n <= 3:
        assert (m["cards"], m["sparks"]) == (5 * n, 0)
    else:
        assert (m["cards"], m["sparks"]) == (0, 3 * n)
    # Our own script still ran beside the measuring one, and a screenshot renders.
    dom = _dom(dump_dom(chromium, paths["html"], tmp_path / "profile"))
    assert dom.html_attrs.get("data-report-script") == "ran"
    assert dom.title == report.title
    shot = screenshot(chromium, paths["html"], tmp_path / "profile", tmp_path / f"layout-{n}.png")
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    keep = os.environ.get("SHIELDBENCH_SCREENSHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / f"report-{n}-defenses.png")
