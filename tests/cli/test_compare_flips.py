"""``compare`` lists the samples that changed, in every output (issue 30, defect 4).

Terminal (top N of each kind, ``--flips N``), ``--json`` and the three reports carry
the samples whose verdict differs between the runs, both directions, with text,
label, category and both scores; a change to or from an error / timeout is its own
kind. Sample texts are hostile: shown literally, escaped for each medium.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.metrics import verdict_flips
from shieldbench.metrics._testing import make_run
from shieldbench.reports import report_schema
from shieldbench.runio import save_run
from shieldbench.types import Run

runner = CliRunner()
HOSTILE = "<script>alert(1)</script> [bold red]x[/] | *md* \x1b[2J\nnext line"

# (category, is_attack, blocked, score) for run a, then run b
ROWS_A = [("jb", True, True, 0.9 - i / 100) for i in range(6)] + [
    ("chat", False, False, 0.1),
    ("chat", False, False, 0.2),
    ("chat", False, False, 0.1),
    ("jb", True, True, 0.8),
    ("jb", True, None),  # an error in a
]
ROWS_B = [("jb", True, False, 0.1 + i / 100) for i in range(5)] + [
    ("jb", True, True, 0.9),
    ("chat", False, True, 0.7),  # a new false positive
    ("chat", False, False, 0.2),
    ("chat", False, False, 0.1),
    ("jb", True, "timeout"),  # answered in a, timed out in b
    ("jb", True, True, 0.95),  # recovered
]


def _hostile(run: Run) -> Run:
    samples = tuple(
        replace(s, text=f"{HOSTILE} #{i}") if i in (0, 6) else s for i, s in enumerate(run.samples)
    )
    return replace(run, samples=samples)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a = _hostile(make_run(ROWS_A, run_id="ra", spec="strong"))
    b = _hostile(make_run(ROWS_B, run_id="rb", spec="weak"))
    return save_run(a, tmp_path / "a.json"), save_run(b, tmp_path / "b.json")


def _compare(files: tuple[Path, Path], tmp_path: Path, *extra: str) -> str:
    args = ["compare", *map(str, files), "--no-store", "--out", str(tmp_path / "r"), *extra]
    done = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.slow
def test_the_terminal_lists_the_top_flips_of_each_kind(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    out = _compare(files, tmp_path, "--flips", "2")
    flat = " ".join(out.split())
    assert (
        "Samples that changed, strong (a) → weak (b), over 11 shared samples: 5 blocked →"
        " allowed, 1 allowed → blocked, 1 answered → error/timeout, 1 error/timeout → answered."
    ) in flat
    assert "blocked → allowed (5; top 2)" in flat
    assert "allowed → blocked (1; top 1)" in flat
    assert "answered → error/timeout (1; top 1)" in flat
    assert "error/timeout → answered (1; top 1)" in flat
    lines = [line for line in out.splitlines() if "│" in line]
    shown = {c.strip() for line in lines for c in line.split("│")[1:2]}
    # the largest score change first: s0 (0.9 -> 0.1) and s1 (0.89 -> 0.11)
    assert {"s0", "s1"} <= shown
    assert not {"s2", "s3", "s4"} & shown
    assert "allowed 0.100" in flat
    assert "blocked 0.900" in flat
    assert "timeout: TimeoutError: too slow" in flat
    assert "error: RuntimeError: boom" in flat
    # hostile text: literal, one line, controls visible
    assert "<script>alert(1)</script> [bold red]x[/] | *md* ␛[2J next line" in flat
    counts_only = _compare(files, tmp_path / "2", "--flips", "0")
    assert "Samples that changed" in counts_only
    assert "top 1" not in counts_only


@pytest.mark.slow
def test_json_and_the_reports_list_every_flip_escaped(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    from shieldbench.runio import load_run

    out_json = tmp_path / "cmp.json"
    _compare(files, tmp_path, "--json", str(out_json), "--flips", "1")
    expected = verdict_flips(load_run(files[0]), load_run(files[1]))
    saved = json.loads(out_json.read_text(encoding="utf-8"))
    (listed,) = saved["flips"]
    assert (listed["a"], listed["b"]) == ("strong", "weak")
    assert listed == {"a": "strong", "b": "weak", **json.loads(json.dumps(expected.to_dict()))}
    order = ["s0", "s1", "s2", "s3", "s4", "s6", "s9", "s10"]
    assert [f["sample_id"] for f in listed["flips"]] == order
    assert listed["flips"][5]["effect"] == "worse"  # a benign text newly blocked

    folder = tmp_path / "r"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, report_schema())
    (section,) = report["groups"][0]["flips"]
    assert section["counts"] == expected.to_dict()["counts"]
    assert section["flips"][0]["text"].startswith(HOSTILE)

    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Samples that changed on inline\n\n### strong → weak\n" in md
    assert "**blocked → allowed** (5; top 5: worse first, then by score change):" in md
    assert r"\<script\>alert(1)\</script\> \[bold red\]x\[/\] \| \*md\*" in md
    assert "<script>" not in md
    assert "**answered → error / timeout** (1; top 1):" in md
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "<h3>Samples that changed: strong → weak</h3>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert html.count('<details class="flips">') == 4
