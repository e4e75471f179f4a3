"""Reports of many defenses: the security / utility plane, per-category paired
comparisons, and layouts that fit (HTML structure here, Markdown widths; the browser
test measures the HTML in Chromium)."""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.errors import ConfigError
from shieldbench.metrics import compare_pairs_by_group, rate, summarize
from shieldbench.metrics._testing import make_run as simple_run
from shieldbench.reports import Report, build_report, render_json, render_markdown
from shieldbench.reports._html import render_page
from shieldbench.reports._plane import frontier_points, tradeoff_planes
from shieldbench.runio import load_run, save_run
from shieldbench.types import Run, Sample

from .conftest import make_run

MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
# Spec strings as long as real ones get (python: factories, compositions).
SPECS = (
    "pattern",
    "pattern(threshold=0.9)",
    "python:acme.guards.prompt_injection:factory",
    "any(pattern, semantic(threshold=0.8))",
    "keyword",
    "http://127.0.0.1:8080/v1/screen",
    "python:tests.words:roleplay_two_of_four",
    "vote(pattern, keyword, strict)",
    "strict",
    "embedding-lr(threshold=0.35)",
    "tiered(pattern, embedding-lr)",
    "python:acme.guards.very_long_module_name.detector:build",
)


def _runs(samples: list[Sample], n: int) -> list[Run]:
    return [
        make_run(
            samples,
            spec=spec,
            run_id=f"20260101T000000Z-abcdef-{i:02d}",
            strength=0.3 + 0.6 * i / len(SPECS),
            seed=i,
        )
        for i, spec in enumerate(SPECS[:n])
    ]


@pytest.fixture(scope="module")
def many(samples: list[Sample]) -> dict[int, Report]:
    return {n: build_report(_runs(samples, n), max_fpr=0.05) for n in (2, 6, 12)}


# --- the plane ------------------------------------------------------------------------


def test_frontier_keeps_exactly_the_undominated_defenses() -> None:
    points = frontier_points(
        [
            ("low-fpr", rate(1, 100), rate(50, 100)),
            ("dominated", rate(3, 100), rate(40, 100)),  # worse than low-fpr on both
            ("high-block", rate(9, 100), rate(95, 100)),
            ("tie", rate(1, 100), rate(50, 100)),  # equal to low-fpr: neither dominates
            ("no-benign", rate(0, 0), rate(99, 100)),  # FPR undefined: not placed
        ],
        max_fpr=0.02,
    )
    got = {p.label: (p.on_frontier, p.within_policy) for p in points}
    assert got == {
        "low-fpr": (True, True),
        "dominated": (False, False),
        "high-block": (True, False),
        "tie": (True, True),
        "no-benign": (False, None),
    }
    assert all(p.within_policy is None for p in frontier_points([("a", rate(1, 9), rate(2, 9))]))


def test_planes_per_category_use_the_categorys_fpr_only_when_it_has_benign(
    many: dict[int, Report],
) -> None:
    report = many[6]
    (group,) = report.groups
    overall, *per_category = group.planes
    assert overall.group is None
    assert [p.label for p in overall.points] == list(group.runs)
    summaries = {r.label: r.summary for r in report.runs}
    for p in overall.points:
        assert p.block_rate == summaries[p.label].rates.block_rate
        assert p.within_policy == ((p.false_positive_rate.value or 0) <= 0.05)
    attack_categories = sorted(
        {g.group for r in report.runs for g in r.summary.breakdowns.by["category"]}
        - {"benign_chat", "hard_negative"}
    )
    assert [p.group for p in per_category] == attack_categories
    assert {p.fpr_scope for p in per_category} == {"overall"}  # no benign in them
    # The frontier is non-empty and sorted by FPR, and nothing on it is dominated.
    front = overall.frontier
    assert front
    fprs = [p.false_positive_rate.value for p in front]
    assert fprs == sorted(fprs)


def test_a_category_with_benign_samples_uses_its_own_fpr() -> None:
    run = simple_run(
        [("c", True, True), ("c", False, True), ("c", False, False), ("d", True, False)]
        + [("chat", False, False)] * 6
    )
    overall, c, d = tradeoff_planes(["a"], [summarize(run)], max_fpr=None)
    assert (c.group, c.fpr_scope, c.points[0].false_positive_rate.value) == ("c", "group", 0.5)
    assert (d.group, d.fpr_scope) == ("d", "overall")
    assert d.points[0].false_positive_rate == overall.points[0].false_positive_rate
    assert overall.max_fpr is None


def test_max_fpr_is_checked_and_sets_the_target(samples: list[Sample]) -> None:
    runs = _runs(samples, 2)
    for bad in (0, 1, 1.5, -0.1, True, "0.1"):
        with pytest.raises(ConfigError, match="max_fpr"):
            build_report(runs, max_fpr=bad)  # type: ignore[arg-type]
    report = build_report(runs, max_fpr=0.03)
    assert (report.settings.max_fpr, report.settings.target_fpr) == (0.03, 0.03)
    data = json.loads(render_json(report))
    assert data["settings"]["max_fpr"] == 0.03
    assert data["groups"][0]["planes"][0]["max_fpr"] == 0.03
    assert build_report(runs).settings.max_fpr is None


# --- per-category paired comparisons --------------------------------------------------------


def test_by_category_is_compare_pairs_by_group_of_the_runs(
    samples: list[Sample], many: dict[int, Report]
) -> None:
    runs = _runs(samples, 6)
    report = many[6]
    (group,) = report.groups
    assert group.by_category is not None
    expected = compare_pairs_by_group(runs, [r.label for r in report.runs])
    assert group.by_category.to_dict() == expected.to_dict()
    assert len(group.by_category.pairs) == 15
    assert group.by_category.correction == "holm"
    data = json.loads(render_json(report))["groups"][0]["by_category"]
    assert data["tests_in_family"] == expected.tests
    # One run: nothing to compare.
    assert build_report(runs[:1]).groups[0].by_category is None


@pytest.mark.slow
def test_compare_by_category_and_the_report_agree(tmp_path: Path) -> None:
    n = 30
    rows = {
        "strong": [("jb", True, True)] * n + [("chat", False, False)] * n,
        "weak": [("jb", True, i % 3 == 0) for i in range(n)]
        + [("chat", False, i % 6 == 0) for i in range(n)],
        "mid": [("jb", True, i % 2 == 0) for i in range(n)] + [("chat", False, False)] * n,
    }
    paths = [
        save_run(simple_run(r, run_id=spec, spec=spec), tmp_path / f"{spec}.json")
        for spec, r in rows.items()
    ]
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            *map(str, paths),
            "--by",
            "category",
            "--json",
            str(tmp_path / "cmp.json"),
            "--out",
            str(out),
            "--max-fpr",
            "0.02",
        ],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads((tmp_path / "cmp.json").read_text())["by_group"]
    reported = json.loads((out / "report.json").read_text())
    assert reported["groups"][0]["by_category"] == printed
    assert reported["settings"]["max_fpr"] == 0.02
    md = (out / "report.md").read_text()
    assert "Per category, every pair" in md
    bad = CliRunner().invoke(app, ["report", str(paths[0]), "--max-fpr", "2"])
    assert isinstance(bad.exception, ConfigError)  # main() prints it, exit code 2
    assert "--max-fpr" in str(bad.exception)
    assert load_run(paths[0]).id == "strong"


# --- HTML structure -------------------------------------------------------------------------


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tables_outside_scroll = 0
        self.classes: Counter[str] = Counter()
        self.copies: list[str] = []
        self.titles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        self.classes.update(classes)
        if tag == "table" and (not self.stack or self.stack[-1] != "scroll"):
            self.tables_outside_scroll += 1
        if "copy" in classes:
            self.copies.append(a.get("data-copy") or "")
        if tag == "code" and a.get("title"):
            self.titles.append(a["title"] or "")
        if tag == "div":
            self.stack.append("scroll" if "scroll" in classes else "div")

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.stack:
            self.stack.pop()


@pytest.mark.parametrize("n", [2, 6, 12])
@pytest.mark.slow
def test_html_layout_for_n_defenses(many: dict[int, Report], n: int) -> None:
    report = many[n]
    html = render_page(report, charts=False)
    page = _Page()
    page.feed(html)
    assert page.tables_outside_scroll == 0  # every table scrolls in its own container
    # Cards for a few defenses, a compact table with interval bars for many.
    if n <= 3:
        assert (page.classes["card"], page.classes["spark"]) == (5 * n, 0)
    else:
        assert (page.classes["card"], page.classes["spark"]) == (0, 3 * n)
    # Short ids with the full value in the title and a copy button.
    full_ids = {r.run_id for r in report.runs} | {report.runs[0].dataset.content_hash}
    assert full_ids <= set(page.copies)
    assert full_ids <= set(page.titles)
    assert "20260101T000000Z-abcdef-00" not in re.sub(r'"[^"]*"', "", html)  # only in attributes
    # The plane section comes right after the summary; both comparison matrices exist.
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids[ids.index("summary") + 1] == "tradeoff"
    assert page.classes["matrix"] == 2
    pairs = n * (n - 1) // 2
    matrix = html.split('class="matrix"', 2)[2].split("</table>", 1)[0]
    assert matrix.count("<tr>") == 1 + pairs
    # The metric x defense table is split so that no table holds more than six defenses.
    for table in html.split('<table class="metrics">')[1:]:
        header = table.split("</tr>", 1)[0]
        assert 2 <= header.count("<th") <= 7


# --- Markdown within a pull-request comment ---------------------------------------------------

PR_COMMENT_PX = 860  # GitHub's comment column on a desktop browser
FREE_TEXT = {"Text", "Reasons", "Original text", "Mutated text"}


def _md_tables(doc: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    tokens = MD.parse(doc)
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif (
            tok.type == "inline"
            and row is not None
            and tokens[i - 1].type in ("th_open", "td_open")
        ):
            row.append(re.sub(r"\\(.)", r"\1", tok.content).replace("**", ""))  # as shown
        elif tok.type == "tr_close" and row is not None:
            tables[-1].append(row)
            row = None
    return tables


def _narrowest_px(table: list[list[str]]) -> float:
    """A rendered table's narrowest width: cells wrap only between words; 7.5 px per
    character of a cell's longest word plus 26 px of padding, summed over columns."""
    return sum(
        max(26 + 7.5 * max((len(w) for w in row[j].split()), default=0) for row in table)
        for j in range(len(table[0]))
    )


@pytest.mark.parametrize("n", [2, 6, 12])
@pytest.mark.slow
def test_markdown_tables_fit_a_pull_request_comment(many: dict[int, Report], n: int) -> None:
    doc = render_markdown(many[n])
    tables = _md_tables(doc)
    assert tables
    for table in tables:
        if FREE_TEXT & set(table[0]):
            continue  # example texts are data: their words are theirs
        assert _narrowest_px(table) <= PR_COMMENT_PX, table[0]
    # Every defense's summary is there, in some table, once.
    summary = doc.split("## Summary", 1)[1].split("\n## ", 1)[0]
    heads = [h for t in _md_tables(summary) for h in t[0][1:]]
    assert sorted(heads) == sorted(r.label for r in many[n].runs)
    # The per-category paired comparison: every pair, in every category chunk.
    section = doc.split("Per category, every pair", 1)[1].split("\n## ", 1)[0]
    pairs = n * (n - 1) // 2
    for table in _md_tables(section):
        assert len(table) == 1 + pairs
        assert table[0][0] == "a vs b"


@pytest.mark.slow
def test_run_max_fpr_reaches_the_reports(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    args = ["run", "-d", "pattern", "-d", "pattern(threshold=0.9)", "-D", "builtin:smoke"]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--max-fpr", "0.05"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "report.json").read_text())
    assert data["settings"]["max_fpr"] == 0.05
    (group,) = data["groups"]
    assert group["planes"][0]["max_fpr"] == 0.05
    assert {p["label"] for p in group["planes"][0]["points"]} == {
        "pattern",
        "pattern(threshold=0.9)",
    }
    assert group["by_category"]["tests_in_family"] > 0
    assert "policy: FPR ≤ 5%" in (out / "report.html").read_text()
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "bad"), "--max-fpr", "0"])
    assert isinstance(bad.exception, ConfigError)
    assert not (tmp_path / "bad").exists()  # refused before anything was written
