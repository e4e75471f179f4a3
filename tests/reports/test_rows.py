"""One row model, two views: the tables built once (reports/_rows.py) read the same in
Markdown and HTML, and each view escapes the data's text its own way."""

from __future__ import annotations

import dataclasses
import html as htmllib
import re

import pytest

from shieldbench.attacks import AttackResult
from shieldbench.reports import build_report, render_markdown
from shieldbench.reports._attack_section import chains_table, rounds_table, transfer_table
from shieldbench.reports._html import render_page
from shieldbench.reports._mdescape import md_text
from shieldbench.reports._rows import Table, number, table_markdown, text
from shieldbench.reports._run_tables import composite_table, group_table
from shieldbench.types import DefenseInfo, Run, Sample

from .conftest import make_run

_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S)


def _html_rows(page: str) -> list[list[str]]:
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S):
        cells = [htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in _CELL.findall(tr)]
        if cells:
            rows.append(cells)
    return rows


def _expected(table: Table) -> list[list[str]]:
    return [[c.text for c in row] for row in table.rows]


def test_the_attack_tables_read_the_same_in_markdown_and_html(
    attack_result: AttackResult,
) -> None:
    hostile = "<img src=x onerror=alert(1)> | *x*"
    result = dataclasses.replace(
        attack_result,
        transfer=tuple(
            dataclasses.replace(t, defense=DefenseInfo(hostile, "evil"))
            for t in attack_result.transfer
        ),
    )
    report = build_report([], attack=result)
    md, page = render_markdown(report), render_page(report, charts=False)
    rows = _html_rows(page)
    tables = (rounds_table(result), chains_table(result), transfer_table(result))
    assert all(t.rows for t in tables)
    for table in tables:
        assert table_markdown(table) in md
        for expected in _expected(table):
            assert any(r[: len(expected)] == _strip_n(expected, r) for r in rows), expected
    assert "<img" not in page
    assert hostile not in md  # escaped there: the pipe and the stars are text


def _strip_n(expected: list[str], row: list[str]) -> list[str]:
    """A rate cell of HTML may add its n ("... n=12"): compare the interval part."""
    out = []
    for want, got in zip(expected, row, strict=False):
        out.append(got if got.startswith(want) else want)
    return out


def test_a_number_cell_is_only_made_of_numbers() -> None:
    assert number(3).ours
    assert number(0.25, ".3f").text == "0.250"
    for bad in ("<b>3</b>", None, True, [1]):
        cell = number(bad)
        assert not cell.ours  # shown as text, escaped by both views
    assert text(None).text == "–"


@pytest.mark.parametrize("details", ["tiered", "dual"])
def test_the_composite_table_reads_the_same_in_markdown_and_html(
    samples: list[Sample], details: str
) -> None:
    report = build_report([make_run(samples, details=details)])
    table = composite_table(report.runs)
    assert table is not None
    assert table.rows
    md, page = render_markdown(report), render_page(report, charts=False)
    assert table_markdown(table) in md
    rows = _html_rows(page)
    for expected in _expected(table):
        assert expected in rows
    fact = "tiered paths" if details == "tiered" else "dual: warner would add"
    assert fact in md.replace("\\", "")


def test_the_breakdown_tables_read_the_same_in_markdown_and_html(run_a: Run) -> None:
    report = build_report([run_a])
    md, page = render_markdown(report), render_page(report, charts=False)
    rows = _html_rows(page)
    section = report.runs[0]
    target = section.summary.settings.coverage_target
    shown = 0
    for dim, groups in section.summary.breakdowns.by.items():
        table = group_table(groups, target, dim)
        for row in table.rows:
            cells = [c.text for c in row]
            assert any(r[: len(cells)] == cells for r in rows), cells
            head = f"| {md_text(cells[0])} | {cells[1]} | {cells[2]} |"
            assert head in md, head
            shown += 1
        missed = [row[4] for row in table.rows if row[4].mark == "bad"]
        assert all(f"**{c.text}**" in md for c in missed)
        assert all(c.mark is None or c.text in ("yes", "no") for c in (r[4] for r in table.rows))
    assert shown > 0
    assert '<span class="bad">no</span>' in page or '<span class="good">yes</span>' in page
