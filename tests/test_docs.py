"""The documentation cannot rot: the getting-started page's shell examples run against
the real command line, and the CLI reference lists every command and option.

The site itself is built with ``mkdocs build --strict`` by ``make docs`` (part of
``make test``); a broken link or reference fails that build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from shieldbench.cli import app
from shieldbench.cli._reference import cli_reference_markdown

ROOT = Path(__file__).resolve().parents[1]
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
SKIP = "<!-- docs-test: skip"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.S)


def shell_blocks(markdown: str) -> list[str]:
    """The ```bash blocks of a page, in order, without those marked ``docs-test: skip``."""
    return [
        m["body"]
        for m in _BLOCK.finditer(markdown)
        if m["lang"] == "bash" and not m["before"].startswith(SKIP)
    ]


def test_the_page_has_examples_and_one_jsonl_line() -> None:
    text = GETTING_STARTED.read_text(encoding="utf-8")
    blocks = shell_blocks(text)
    assert len(blocks) >= 3
    assert any("-D builtin:smoke" in b for b in blocks)
    assert any("python:myguard:MyGuard" in b for b in blocks)
    json_lines = [m["body"] for m in _BLOCK.finditer(text) if m["lang"] == "json"]
    assert len(json_lines) == 1
    assert len(json_lines[0].splitlines()) == 1  # ONE example data line


@pytest.mark.slow
def test_getting_started_examples_run_against_the_real_cli(tmp_path: Path) -> None:
    """Every example, in order, in one fresh folder, as a reader would type them."""
    bin_dir = Path(sys.executable).parent
    if shutil.which("shieldbench", path=str(bin_dir)) is None:
        pytest.skip(f"no shieldbench script beside {sys.executable} (install the package)")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update(HF_HUB_OFFLINE="1", COLUMNS="120", SHIELDBENCH_DB=str(tmp_path / "h.db"))
    for block in shell_blocks(GETTING_STARTED.read_text(encoding="utf-8")):
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, (
            f"{block}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    for folder in ("first", "mine", "data"):
        assert (tmp_path / "reports" / folder / "report.html").is_file()


def _commands(command: object, path: str) -> list[tuple[str, object]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


def test_the_cli_reference_lists_every_command_and_option() -> None:
    text = cli_reference_markdown()
    root = typer.main.get_command(app)
    commands = _commands(root, "shieldbench")
    assert len(commands) > 20
    for path, command in commands:
        if path != "shieldbench":
            assert f"`{path}`" in text, path
        for param in getattr(command, "params", []):
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}" in text or f", {opt}" in text, (path, opt)
    assert "`fail_closed`" in text  # defaults bare, as in --help
    assert "<list[" not in text


# --- The old README's sections all have a home (issue 33) -------------------------------

README_MAP = ROOT / "docs" / "development" / "readme-map.md"
OLD_HEADINGS = ROOT / "tests" / "readme_headings_b9474d3.txt"
_MAP_ROW = re.compile(r"^\| `` (?P<heading>.+?) `` \| \[[^\]]*\]\((?P<link>[^)#]+)(#[^)]*)?\) \|$")


def readme_map() -> dict[str, Path]:
    """Each old heading in the map, with the docs page its row links to."""
    rows = (_MAP_ROW.match(line) for line in README_MAP.read_text(encoding="utf-8").splitlines())
    return {m["heading"]: (README_MAP.parent / m["link"]).resolve() for m in rows if m}


def test_every_old_readme_heading_has_a_page_that_holds_it() -> None:
    """Every ``#``..``#####`` heading of the README at b9474d3 (outside code blocks) is in
    the map, its page exists, and the page holds the heading's text (the section moved
    whole) or, for the two sections the home page rewrote, is the home page."""
    old = OLD_HEADINGS.read_text(encoding="utf-8").splitlines()
    assert len(old) == 43
    assert old[0] == "# shieldbench"
    mapped = readme_map()
    assert [h for h in old if h not in mapped] == []
    for heading, page in mapped.items():
        assert heading in old, f"the map names a heading the old README lacks: {heading}"
        assert page.is_file(), (heading, page)
        assert page.is_relative_to(ROOT / "docs"), (heading, page)
        text = heading.lstrip("#").strip()
        holds = any(
            line.lstrip("#").strip() == text for line in page.read_text("utf-8").splitlines()
        )
        assert holds or page == ROOT / "docs" / "index.md", (heading, page)


def test_the_map_row_pattern_is_strict() -> None:
    """The row pattern is strict enough that a missing or mistyped row is noticed."""
    assert _MAP_ROW.match("| `` ## Datasets `` | [guides/datasets.md](../guides/datasets.md) |")
    assert not _MAP_ROW.match("| ## Datasets | guides/datasets.md |")
    assert "## No such section" not in readme_map()


def test_the_readme_is_a_landing_page() -> None:
    """At most ~200 lines; the two commands, a data line, a defense, the service, links."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for needle in (
        "make demo",
        "make test",
        '"label": "attack"',
        "def check(self, text: str)",
        "shieldbench serve",
        "(docs/getting-started.md)",
        "(docs/reference/cli.md)",
    ):
        assert needle in text, needle  # fmt: skip
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link


def test_pages_include_their_benchmark_results_rather_than_copies() -> None:
    """Each results file a page names under benchmarks/results/ exists, and each include
    (``--8<--``) points at a file that exists (mkdocs --strict checks it too)."""
    for page in (ROOT / "docs").rglob("*.md"):
        for path in re.findall(r'--8<-- "([^"]+)"', page.read_text(encoding="utf-8")):
            assert (ROOT / path).is_file(), (page, path)
    benchmarks = (ROOT / "docs" / "development" / "benchmarks.md").read_text("utf-8")
    assert '--8<-- "benchmarks/results/startup.txt"' in benchmarks
