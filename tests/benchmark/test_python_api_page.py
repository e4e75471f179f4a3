"""The "Python API: running a benchmark" page's examples run, in order, as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"
_PYTHON = re.compile(r"```python\n(.*?)\n```", re.S)


def test_the_page_is_in_the_navigation() -> None:
    assert "python-api.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _PYTHON.findall(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, str(PAGE), "exec"), namespace)  # the page's own code
    out = printed.getvalue()
    assert "BenchmarkConfig: margin must be a number in (0, 0.5], got 2" in out
    assert "reports/smoke/report.html" in out
    assert (tmp_path / "reports" / "smoke" / "runs" / "00-pattern--builtin-smoke.json").is_file()
    assert (tmp_path / "reports" / "nightly" / "benchmark.json").is_file()
