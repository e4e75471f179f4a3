"""The Markdown report: structure, tables that parse, hostile text shown as text.

Parsed with markdown-it-py (CommonMark + GFM tables, raw HTML enabled as on
GitHub), the way a Markdown viewer would.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml as mdit_escape
from markdown_it.token import Token

from shieldbench.attacks import AttackResult
from shieldbench.metrics import compare_runs
from shieldbench.reports import build_report, render_markdown
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.types import Run, Sample, Verdict

from .conftest import HOSTILE_CATEGORIES, PAYLOADS, make_run

MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
UNSAFE_INLINE = {
    "html_inline",
    "link_open",
    "image",
    "code_inline",
    "em_open",
    "strong_open",
    "s_open",
    "softbreak",
    "hardbreak",
}


def _tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            assert row is not None
            row.append(inline.content if inline.type == "inline" else "")
        elif tok.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    return tables


def _normalized(text: str) -> str:
    text = re.sub(r"\r\n|[\r\n\u2028\u2029\u0085]", " ↵ ", text)
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "\ufffd", text).replace("\t", " ")
    return text.strip()


def _cell_text(inline: Token) -> str:
    children = inline.children or []
    kinds = {c.type for c in children}
    assert not kinds & UNSAFE_INLINE, kinds
    return "".join(c.content for c in children)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_any_text_stays_one_cell_and_renders_as_itself(text: str) -> None:
    tokens = MD.parse(md_table(["a", "b"], [[text, "end"]]))
    types = [t.type for t in tokens]
    assert types.count("table_open") == 1
    assert types.count("tr_open") == 2  # header + the one row
    assert types.count("td_open") == 2
    assert "html_block" not in types
    inlines = [tokens[i + 1] for i, t in enumerate(tokens) if t.type == "td_open"]
    assert _cell_text(inlines[0]) == _normalized(text)
    assert _cell_text(inlines[1]) == "end"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("<>|`*_[]()!&$~\\#:/\"' \nabc=;-."), max_size=40))
def test_markdown_metacharacters_never_make_markup(text: str) -> None:
    tokens = MD.parse(f"- {md_text(text)}\n\n## {md_text(text)}\n")
    for tok in tokens:
        assert tok.type not in ("html_block", "fence", "code_block", "table_open")
        if tok.type == "inline":
            _cell_text(tok)


def test_md_table_checks_row_width() -> None:
    with pytest.raises(ValueError, match="2 cells"):
        md_table(["a", "b", "c"], [["x", "y"]])
    assert md_table(["a"], [[Md("**bold**")]]).endswith("| **bold** |")


@pytest.fixture(scope="module")
def documents(
    run_a: Run, run_b: Run, samples: list[Sample], attack_result: AttackResult
) -> dict[str, str]:
    return {
        "run": render_markdown(build_report([run_a])),
        "comparison": render_markdown(
            build_report([run_a, run_b], comparison=compare_runs([run_a, run_b], margin=0.05))
        ),
        "attack": render_markdown(build_report([], attack=attack_result)),
        "composite": render_markdown(
            build_report([make_run(samples, details="tiered", error_every=11)])
        ),
    }


def _headings(doc: str) -> list[str]:
    tokens = MD.parse(doc)
    return [
        tokens[i + 1].content
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag in ("h1", "h2")
    ]


def test_run_report_structure(documents: dict[str, str]) -> None:
    headings = _headings(documents["run"])
    expected = [
        "Recommendations",
        "Configuration",
        "Summary (Wilson 95% intervals)",
        "Per category: keyword",
        "Per difficulty tier: keyword",
        "Latency and throughput",
        "Errors",
        "Worst case",
    ]
    assert "Sample-size warnings" not in headings  # said once, as the sample_size card
    positions = [headings.index(h) for h in expected]
    assert positions == sorted(positions), headings
    doc = documents["run"]
    assert "### Example bypasses" in doc
    assert "### Example false positives" in doc
    assert "### Highest attack success rate categories" in doc
    assert "Dataset version (content hash) | sha256:hostile" in doc


def test_comparison_and_attack_sections(documents: dict[str, str]) -> None:
    cmp = _headings(documents["comparison"])
    assert "Comparison on jsonl:hostile.jsonl" in cmp
    assert "Non-inferiority against the baseline keyword" in documents["comparison"]
    att = _headings(documents["attack"])
    assert att[0].startswith("shieldbench adaptive attack")
    assert "Adaptive attack on keyword" in att
    doc = documents["attack"]
    for figure in ("Static ASR", "Adaptive ASR (after the search)", "Queries to first bypass"):
        assert figure in doc
    assert "Mutators (bypasses / queries whose chain used them" in doc
    assert "Compositions that bypassed" in doc
    assert "Transfer of the bypasses" in doc
    assert "## Composite defenses" in documents["composite"]


@pytest.mark.parametrize("name", ["run", "comparison", "attack", "composite"])
def test_every_table_is_rectangular_and_no_markup_leaks(
    documents: dict[str, str], name: str
) -> None:
    tokens = MD.parse(documents[name])
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    for tok in tokens:
        if tok.type == "inline":
            assert not [c for c in tok.children or [] if c.type in ("html_inline", "image")]
    tables = _tables(tokens)
    assert tables
    for table in tables:
        widths = {len(row) for row in table}
        assert len(widths) == 1, table


def _all_payloads_run() -> Run:
    """Every payload as a bypass (one sample each), a false positive in a hostile category."""
    samples = [
        Sample(f"<b>id</b>|{i}", p, "attack", category=HOSTILE_CATEGORIES[0], tier="novel")
        for i, p in enumerate(PAYLOADS)
    ]
    samples += [Sample("id-fp", PAYLOADS[0], "benign", category=HOSTILE_CATEGORIES[1])]
    samples += [Sample("id-ok", "fine", "attack", category=HOSTILE_CATEGORIES[2])]
    run = make_run(samples, spec="<script>spec</script>")
    verdicts = [Verdict(False, 0.1, reasons=("<i>r</i>",)) for _ in PAYLOADS]
    verdicts += [Verdict(True, 0.9), Verdict(True, 0.8)]
    return replace(
        run,
        outcomes=tuple(
            replace(o, verdict=v, status="ok", error=None)
            for o, v in zip(run.outcomes, verdicts, strict=True)
        ),
    )


def test_hostile_payloads_appear_as_text() -> None:
    doc = render_markdown(build_report([_all_payloads_run()], examples=len(PAYLOADS)))
    html = MD.render(doc)
    for tag in (
        "<script",
        "<img",
        "<iframe",
        "<svg",
        "<object",
        "<meta",
        "<style",
        "<link",
        "<b>",
        "<i>",
    ):
        assert tag not in html, tag
    assert 'href="javascript:' not in html
    # The payloads are there, as text: every payload's HTML-escaped form is in the page.
    for payload in PAYLOADS:
        shown = " ".join(payload.replace("\r\n", " ↵ ").replace("\n", " ↵ ").split())
        escaped = html.replace("\n", " ")
        assert mdit_escape(shown) in " ".join(escaped.split()), payload
    for category in HOSTILE_CATEGORIES:
        assert mdit_escape(category) in html


def test_examples_limited_to_the_setting(run_b: Run) -> None:
    doc = render_markdown(build_report([run_b], examples=2))
    section = doc.split("### Example bypasses", 1)[1].split("###", 1)[0]
    (table,) = _tables(MD.parse(section))
    assert len(table) - 1 == 2  # header + the 2 worst examples of the run
    assert "Showing 2 of" in section


def test_attack_markdown_has_the_asr_curve(attack_result: AttackResult) -> None:
    doc = render_markdown(build_report([], attack=attack_result))
    section = doc.split("ASR against search queries spent", 1)[1]
    (table, *_) = _tables(MD.parse(section.split("\n\n", 1)[1]))
    assert table[0] == ["Queries", "Attacks through", "ASR"]
    queries = [int(row[0]) for row in table[1:]]
    assert len(queries) >= 2
    assert queries == sorted(queries)
    assert queries[-1] == max(p.queries for p in attack_result.figures.curve)
