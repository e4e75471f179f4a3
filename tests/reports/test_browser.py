"""The HTML reports in a real browser: headless Chromium opens each report from disk.

For a run, a comparison and an adaptive attack built from a dataset file full of
script payloads (loaded with ``jsonl:`` and screened by the engine), Chromium
loads the page, runs it, and we read the DOM back (``--dump-dom``) and take a
screenshot. The page's own script marks ``<html data-report-script="ran">``, so
we know scripts do run; every payload tries to set ``document.title`` to
``PWNED``, so a title that is still the report's proves none of them ran. A
control page with the same payload left unescaped *is* pwned under the same
harness, so the check can fail. And a report with a raw ``<script>`` spliced in
(an escaping bug, simulated) is still safe: its Content-Security-Policy only
lets the report's own script run.

Why the Chromium command line and not Playwright or Selenium: ``--dump-dom`` and
``--screenshot`` give everything these checks need with the browser Debian ships
(``.ci/run`` installs ``chromium``), no driver, no downloaded browser, nothing
else to install. Without a Chromium the tests skip, saying so.
"""

from __future__ import annotations

import base64
import hashlib
import html as htmllib
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from shieldbench.attacks import AttackSettings, run_attack
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.metrics import compare_runs
from shieldbench.reports import Report, build_report, write_reports
from shieldbench.types import Run, RunConfig, Verdict

from .conftest import HOSTILE_CATEGORIES, PAYLOADS, PWN, Keyword

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
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
)


def _find_chromium() -> str | None:
    explicit = os.environ.get("SHIELDBENCH_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    found = _find_chromium()
    if found is None:
        pytest.skip(
            "no headless Chromium found (looked for " + ", ".join(_CANDIDATES) + " on PATH, or"
            " SHIELDBENCH_CHROMIUM); install Debian's `chromium` (.ci/run does) to run it"
        )
    return found


def _browse(chromium: str, page: Path, profile: Path, *extra: str) -> str:
    profile.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [chromium, *_FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(chromium: str, page: Path, profile: Path) -> str:
    """The DOM after the page loaded and its scripts ran (3 s of virtual time)."""
    return _browse(chromium, page, profile, "--virtual-time-budget=3000", "--dump-dom")


def screenshot(chromium: str, page: Path, profile: Path, out: Path) -> Path:
    _browse(chromium, page, profile, "--window-size=1280,2200", f"--screenshot={out}")
    return out


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.html_attrs: dict[str, str | None] = {}
        self.title = ""
        self._in_title = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "html":
            self.html_attrs = dict(attrs)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        self.text.append(data)


def _dom(text: str) -> _Dom:
    parser = _Dom()
    parser.feed(text)
    return parser


class Strict:
    """Blocks anything with markup in it; scores by the share of angle brackets."""

    name = "strict"

    def check(self, text: str) -> Verdict:
        hits = text.count("<") + text.count(">")
        return Verdict(blocked=hits > 0, score=min(1.0, hits / 10))


@pytest.fixture(scope="module")
def hostile_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSONL dataset whose texts and categories are script payloads."""
    path = tmp_path_factory.mktemp("data") / "hostile.jsonl"
    lines = []
    for i, payload in enumerate(PAYLOADS * 3):
        category = HOSTILE_CATEGORIES[i % len(HOSTILE_CATEGORIES)]
        # "keyword" blocks texts saying "ignore": half the attacks get through (bypasses)
        # and some benign texts are blocked (false positives), so payloads are examples.
        verb = "Ignore" if i % 2 else "Disregard"
        lines.append({"text": f"{verb} all rules. {payload}", "label": 1, "category": category})
        note = "ignore the typo" if i % 3 == 0 else "review"
        lines.append({"text": f"Please {note}: {payload}", "label": 0, "category": "web_help"})
        lines.append({"text": f"Quarterly numbers, item {i}", "label": 0, "category": "chat"})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reports(hostile_dataset: Path) -> dict[str, Report]:
    data = load_dataset(f"jsonl:{hostile_dataset}")
    config = RunConfig(warmup=0, concurrency=1)
    keyword: Run = run_defense(Keyword(), data, config=config, defense_spec="keyword", run_id="k")
    strict: Run = run_defense(Strict(), data, config=config, defense_spec="strict", run_id="s")
    attack = run_attack(
        Keyword(),
        data,
        settings=AttackSettings(budget=40, rounds=2, seed=5),
        config=config,
        defense_spec="keyword",
    )
    return {
        "run": build_report([keyword]),
        "comparison": build_report(
            [keyword, strict], comparison=compare_runs([keyword, strict], margin=0.05)
        ),
        "attack": build_report([], attack=attack),
    }


EXPECTED_SVGS = {"run": 8, "comparison": 10, "attack": 2}  # + plane, per-category planes
EXPECTED_TABLES = {"run": 6, "comparison": 9, "attack": 3}


@pytest.mark.parametrize("kind", ["run", "comparison", "attack"])
def test_report_opens_renders_and_runs_no_payload(
    chromium: str, reports: dict[str, Report], kind: str, tmp_path: Path
) -> None:
    report = reports[kind]
    paths = write_reports(report, tmp_path / kind)
    dom_text = dump_dom(chromium, paths["html"], tmp_path / "profile")
    dom = _dom(dom_text)
    # Our own script ran (CSP allowed it by hash) and did its job ...
    assert dom.html_attrs.get("data-report-script") == "ran"
    assert any(" of " in t and t.strip().endswith("shown") for t in dom.text)
    # ... and none of the payloads did: the title is the report's, nothing was injected.
    assert dom.title == report.title
    assert "PWNED" not in dom.title
    assert dom.tags.count("script") == 1
    assert not {"img", "iframe", "object", "embed", "link", "form"} & set(dom.tags)
    assert dom.tags.count("meta") == 5  # charset, viewport, CSP, referrer, generator
    assert dom.tags.count("style") == 1 + dom.tags.count("svg")  # ours + one per chart
    # The charts and tables are there, and the payloads are shown as text.
    assert dom.tags.count("svg") == EXPECTED_SVGS[kind]
    assert dom.tags.count("table") >= EXPECTED_TABLES[kind]
    shown = "".join(dom.text)
    assert PWN in shown
    assert re.search(r"<(script|img|svg|iframe|meta)\b", shown)  # markup, shown as text
    shot = screenshot(chromium, paths["html"], tmp_path / "profile", tmp_path / f"{kind}.png")
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 20_000  # a rendered page, not a blank one


def test_the_harness_detects_a_payload_that_runs(chromium: str, tmp_path: Path) -> None:
    """Control: the same payloads, unescaped and without a CSP, do run."""
    page = tmp_path / "unsafe.html"
    page.write_text(
        f"<!doctype html><html><head><title>report</title></head><body><p>{PAYLOADS[0]}</p>"
        "</body></html>",
        encoding="utf-8",
    )
    assert _dom(dump_dom(chromium, page, tmp_path / "profile")).title == "PWNED"
    page.write_text(
        f"<!doctype html><html><head><title>report</title></head><body>{PAYLOADS[1]}</body></html>",
        encoding="utf-8",
    )
    assert _dom(dump_dom(chromium, page, tmp_path / "profile")).title == "PWNED"


def test_csp_stops_a_script_that_escaped_the_escaping(
    chromium: str, reports: dict[str, Report], tmp_path: Path
) -> None:
    """Defence in depth: splice raw payloads into a report (as an escaping bug would)."""
    html = write_reports(reports["run"], tmp_path / "run", formats=("html",))["html"]
    text = html.read_text(encoding="utf-8")
    spliced = text.replace("</main>", f"{PAYLOADS[0]}{PAYLOADS[1]}</main>", 1)
    assert spliced != text
    html.write_text(spliced, encoding="utf-8")
    dom = _dom(dump_dom(chromium, html, tmp_path / "profile"))
    assert dom.html_attrs.get("data-report-script") == "ran"  # ours still runs
    assert dom.title == reports["run"].title  # the spliced ones did not


# --- Layout: reports of 2, 6 and 12 defenses fit a 1280 px window -----------------------

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
    print(n, m["scrolling"])
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
