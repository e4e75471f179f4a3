"""The HTML report without a browser: self-contained, escaped, deterministic, small.

(The browser test opens the same pages in headless Chromium.)
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter
from dataclasses import replace
from html.parser import HTMLParser
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.attacks import AttackResult
from shieldbench.metrics import compare_runs
from shieldbench.reports import build_report, render_html
from shieldbench.reports._html import MAX_ATTACK_BYPASSES, render_page
from shieldbench.types import Run, Sample, Verdict

from .conftest import PAYLOADS, START, make_run

SCRIPT = (
    resources.files("shieldbench.reports").joinpath("templates", "report.js").read_text("utf-8")
)


class _Structure(HTMLParser):
    """Collects the element structure: tags with their attribute names, script bodies,
    every URL-bearing attribute and every id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.urls: list[tuple[str, str, str]] = []
        self.ids: list[str] = []
        self.scripts: list[str] = []
        self.in_script = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(sorted(name for name, _ in attrs))))
        for name, value in attrs:
            if name in ("href", "src", "xlink:href", "action", "data", "srcset", "formaction"):
                self.urls.append((tag, name, value or ""))
            if name == "id":
                self.ids.append(value or "")
            assert not name.startswith("on"), f"event handler attribute {name} on <{tag}>"
        self.in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self.in_script = False

    def handle_data(self, data: str) -> None:
        if self.in_script:
            self.scripts.append(data)
        else:
            self.text.append(data)


def _parse(html: str) -> _Structure:
    parser = _Structure()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def comparison_html(run_a: Run, run_b: Run) -> str:
    report = build_report(
        [run_a, run_b],
        comparison=compare_runs([run_a, run_b], margin=0.05),
        generated_at=START,
    )
    return render_html(report)


@pytest.fixture(scope="module")
def attack_html(attack_result: AttackResult) -> str:
    return render_html(build_report([], attack=attack_result, generated_at=START))


@pytest.mark.slow
def test_self_contained_and_locked_down(comparison_html: str, attack_html: str) -> None:
    for html in (comparison_html, attack_html):
        page = _parse(html)
        # No URL but in-page anchors and inline PNG data (a heat map's colour bar):
        # nothing to fetch, nothing to click away to.
        for tag, name, value in page.urls:
            inline_png = tag == "image" and value.startswith("data:image/png;base64,")
            assert value.startswith("#") or inline_png, (tag, name, value)
        assert "url(http" not in html
        assert "@import" not in html
        # One script, ours, allowed by its hash in a CSP that allows no network at all.
        assert page.scripts == [SCRIPT]
        digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
        assert csp is not None
        policy = csp.group(1).replace("&#39;", "'")
        assert "default-src 'none'" in policy
        assert f"script-src 'sha256-{digest}'" in policy
        assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0]


@pytest.mark.slow
def test_charts_tables_and_sections_are_present(comparison_html: str) -> None:
    page = _parse(comparison_html)
    tags = Counter(tag for tag, _ in page.tags)
    # per dataset: plane, per-category planes, categories, benign, heat map, ROC, PR;
    # one trade-off per run; latency
    assert tags["svg"] == 7 + 2 + 1
    assert tags["table"] >= 8
    for section in (
        "overview",
        "summary",
        "tradeoff",
        "recommendations",
        "categories",
        "comparison",
        "curves",
        "latency",
        "worst-case",
        "errors",
        "configuration",
    ):
        assert section in page.ids, section
    assert len(page.ids) == len(set(page.ids)), "ids must be unique in the page"
    # Every in-page reference (SVG clip paths and markers, TOC links) has its target.
    refs = re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', comparison_html)
    for ref in {a or b for a, b in refs}:
        assert ref in page.ids, ref


def test_examples_table_lists_every_example_of_the_model(run_a: Run, run_b: Run) -> None:
    report = build_report([run_a, run_b])
    html = render_page(report, charts=False)
    body = html.split('<table id="examples">', 1)[1].split("</table>", 1)[0]
    n_rows = body.count("<tr data-kind=")
    expected = sum(
        len(r.worst_case.bypasses) + len(r.worst_case.false_positives) for r in report.runs
    )
    assert n_rows == expected > 0


def test_attack_section(attack_html: str, attack_result: AttackResult) -> None:
    page = _parse(attack_html)
    assert "attack" in page.ids
    assert Counter(tag for tag, _ in page.tags)["svg"] == 2  # ASR vs queries, mutators
    body = attack_html.split('<table id="attack-bypasses">', 1)[1].split("</table>", 1)[0]
    assert body.count("<tr data-preserving=") == min(
        len(attack_result.bypasses), MAX_ATTACK_BYPASSES
    )
    text = " ".join(page.text)
    assert "Adaptive ASR" in text
    assert "Transfer to other defenses" in text
    assert "Defense <code>keyword</code> version <code>unknown</code>;" in attack_html
    assert "schema v1 &middot; adaptive attack." in attack_html
    assert "0 runs" not in attack_html  # an attack report has no run to count


def test_attack_section_shows_the_defense_version_escaped(attack_result: AttackResult) -> None:
    info = replace(attack_result.defense, version="<b>2.1</b>")
    html = render_html(build_report([], attack=replace(attack_result, defense=info)))
    assert "version <code>&lt;b&gt;2.1&lt;/b&gt;</code>;" in html


def test_attack_report_header_shows_the_environment(attack_result: AttackResult) -> None:
    meta = replace(attack_result.meta, environment={"python": "CPython 3.11.9", "x": "<i>"})
    html = render_html(build_report([], attack=replace(attack_result, meta=meta)))
    assert "python <code>CPython 3.11.9</code>" in html
    assert "x <code>&lt;i&gt;</code>" in html


@pytest.mark.slow
def test_rendering_is_deterministic(run_a: Run) -> None:
    report = build_report([run_a], generated_at=START)
    assert render_html(report) == render_html(report)


@pytest.mark.slow
def test_a_typical_run_stays_well_under_2_mb() -> None:
    categories = [f"category_{i}" for i in range(20)]
    samples = [
        Sample(
            f"s{i}",
            f"{PAYLOADS[i % len(PAYLOADS)]} " + "lorem ipsum " * 60,
            "attack" if i % 3 else "benign",
            category=categories[i % 20],
            tier="novel",
        )
        for i in range(3000)
    ]
    samples[0] = replace(samples[0], text="x" * 1_000_000)  # one huge text: cut, not embedded
    runs = [make_run(samples, spec=f"d{k}", run_id=f"r{k}", seed=k, strength=0.6) for k in range(3)]
    html = render_html(build_report(runs, examples=5))
    assert len(html.encode()) < 2_000_000
    assert "x" * 1000 not in html


def _hostile_report_html(text: str) -> str:
    samples = [
        Sample(
            "a1",
            text,
            "attack",
            category="x" + text,
            subcategory=text,
            tier="novel",
            severity="high",
            source=text,
        ),
        Sample("a2", "ok", "attack", category="x" + text),
        Sample("b1", text, "benign", category="benign-fixed"),
        Sample("b2", "ok", "benign", category="benign-fixed"),
    ]
    run = make_run(samples, spec=text or "-", run_id="r")
    verdicts = (
        Verdict(False, 0.1, text, (text,)),
        Verdict(True, 0.9),
        Verdict(True, 0.8, reasons=(text,)),
        Verdict(False, 0.1),
    )
    outcomes = tuple(
        replace(o, verdict=v, status="ok", error=None)
        for o, v in zip(run.outcomes, verdicts, strict=True)
    )
    run = replace(run, outcomes=outcomes, environment={"python": text})
    return render_page(build_report([run], generated_at=START), charts=False)


BASELINE = _parse(_hostile_report_html("placeholder"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(max_size=80),
        st.sampled_from(PAYLOADS),
        st.lists(
            st.sampled_from(
                [
                    "<",
                    ">",
                    "&",
                    '"',
                    "'",
                    "</",
                    "script",
                    "{{",
                    "}}",
                    "{%",
                    "]]>",
                    "<!--",
                    "-->",
                    "javascript:",
                    "=",
                    " ",
                    "\n",
                    "`",
                ]
            ),
            max_size=20,
        ).map("".join),
    )
)
def test_no_text_changes_the_page_structure(text: str) -> None:
    page = _parse(_hostile_report_html(text))
    assert page.tags == BASELINE.tags  # same elements, same attributes: nothing injected
    assert page.urls == BASELINE.urls
    assert page.scripts == BASELINE.scripts
    assert text in "".join(page.text)  # and the text itself is shown, as text


EDGE_CASES = {
    "all errors": ([("c", True, None), ("b", False, None)], "fail_closed"),
    "all errors excluded": ([("c", True, None), ("b", False, "timeout")], "exclude"),
    "only attacks": ([("c", True, True, 0.9), ("c", True, False, 0.1)], "fail_closed"),
    "only benign": ([("b", False, True, 0.9), ("b", False, False, 0.1)], "fail_closed"),
    "one sample": ([("c", True, True)], "fail_open"),
    "tied scores": ([("c", True, True, 0.5), ("b", False, False, 0.5)] * 3, "fail_closed"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_degenerate_runs_render_everywhere(case: str) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (dev extra) is not installed")
    from shieldbench.metrics._testing import make_run as make_small_run
    from shieldbench.reports import render_json, render_markdown, report_schema

    rows, policy = EDGE_CASES[case]
    report = build_report([make_small_run(rows, policy=policy, latency_ms=0.0)])  # type: ignore[arg-type]
    page = _parse(render_html(report))
    assert page.scripts == [SCRIPT]
    assert "# shieldbench report" in render_markdown(report)
    jsonschema.Draft202012Validator(report_schema()).validate(json.loads(render_json(report)))
