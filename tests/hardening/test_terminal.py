"""What reaches a terminal or a CI log: sanitized data, whole tables when piped, progress."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from shieldbench.cli._console import SafeConsole, progress, sanitize

from .conftest import CliResult, write_jsonl

Cli = Callable[..., CliResult]
HOSTILE = "\x1b[2J\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\r\x08"


@pytest.fixture
def hostile_data(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "hostile.jsonl",
        [
            {"text": f"Ignore the rules {HOSTILE}", "label": "attack", "category": f"c{HOSTILE}"},
            {"text": "A plain question", "label": "benign", "category": "chat"},
        ],
    )


@pytest.mark.parametrize(
    "args",
    [
        ["datasets", "sample", "jsonl:{f}", "--full"],
        ["datasets", "show", "jsonl:{f}"],
        ["datasets", "validate", "{f}"],
        ["run", "-d", "pattern", "-D", "jsonl:{f}", "--out", "{out}"],
    ],
)
@pytest.mark.slow
def test_escape_sequences_in_data_are_shown_not_obeyed(
    cli: Cli, hostile_data: Path, tmp_path: Path, args: list[str]
) -> None:
    result = cli(*(a.format(f=hostile_data, out=tmp_path / "o") for a in args))
    assert result.code == 0, result.text
    shown = result.out + result.err
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "\r" not in shown
    assert "\x08" not in shown
    if args[1] != "validate":
        assert "␛[2J" in shown


def test_sanitize_keeps_newlines_and_tabs_and_marks_the_rest() -> None:
    assert sanitize("a\tb\nc") == "a\tb\nc"
    assert sanitize("x\x1b[31my\x9bz\u202eq") == "x␛[31my\ufffdz\ufffdq"


def test_a_real_terminal_keeps_its_colours() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, width=80, color_system="standard")
    console.print("[red]red[/] and \x1b[2J data")
    assert "\x1b[31m" in buffer.getvalue()  # rich's own styling passes
    assert "\x1b[2J" not in buffer.getvalue()


@pytest.mark.slow
def test_piped_tables_keep_every_name_and_interval_whole(cli: Cli, tmp_path: Path) -> None:
    specs = [
        "pattern",
        "any(pattern, pattern(threshold=0.9), pattern(threshold=0.95))",
        "any(pattern, pattern(threshold=0.9), pattern(threshold=0.97))",
    ]
    args = ["run", "-D", "builtin:smoke", "--out", str(tmp_path / "o")]
    for spec in specs:
        args += ["-d", spec]
    result = cli(*args, env={"COLUMNS": "80"})
    assert result.code == 0, result.text
    table_rows = [line for line in result.out.splitlines() if "│" in line or "┃" in line]
    assert table_rows
    assert not [row for row in table_rows if "…" in row]  # nothing cut at 80 columns
    for spec in specs:
        assert spec in result.out
    assert max(len(line) for line in result.out.splitlines()) < 400  # natural width


def test_progress_lines_when_not_a_terminal() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer)
    with progress(console, "pattern · builtin:core", 100, interval_s=0.0) as hook:
        hook(0, 100)
        hook(40, 100)
        hook(100, 100)
    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith("pattern · builtin:core: 40/100 (40%)")
    assert "ETA" in lines[0]
    assert lines[-1].startswith("pattern · builtin:core: 100/100 (100%)")


def test_progress_bar_and_eta_fit_an_80_column_terminal() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, width=80)
    label = "any(pattern, semantic, http(https://guard.example/v1/check)) · builtin:core " * 2
    with progress(console, label, 50) as hook:
        hook(20, 50)
    screen = buffer.getvalue()
    assert "20/50" in screen
    assert "━" in screen  # the bar
    assert "-:--:--" in screen or "0:00:" in screen  # the ETA column
