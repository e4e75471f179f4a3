"""The HTML report's compiled template is cached across processes (jinja's bytecode
cache in a private per-user temporary directory): a second process loads it instead
of compiling, renders the same page, and a torn or foreign cache file is not trusted.

Each render runs in a fresh interpreter with ``TMPDIR`` pointing into the test's own
directory, so the cache under test is this test's alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys
import jinja2
compiled = []
real = jinja2.Environment._compile
def counting(self, source, filename):
    compiled.append(filename)
    return real(self, source, filename)
jinja2.Environment._compile = counting
from shieldbench.metrics._testing import make_run
from shieldbench.reports import build_report
from shieldbench.reports._html import render_page
rows = [("jailbreak", True, i % 3 > 0, 0.7) for i in range(9)] + [("chat", False, False, 0.1)] * 6
from datetime import UTC, datetime
report = build_report([make_run(rows)], generated_at=datetime(2026, 1, 1, tzinfo=UTC))
html = render_page(report, charts=False)
print(json.dumps({"compiled": len(compiled), "html": html}))
"""


def _render(tmp: Path) -> dict[str, object]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _cache_files(tmp: Path) -> list[Path]:
    return sorted((tmp / f"_jinja2-cache-{os.getuid()}").glob("*.cache"))


def test_a_second_process_loads_the_compiled_template(tmp_path: Path) -> None:
    first = _render(tmp_path)
    assert first["compiled"] == 1
    files = _cache_files(tmp_path)
    assert len(files) == 1
    assert (files[0].parent.stat().st_mode & 0o777) == 0o700  # private to its owner
    second = _render(tmp_path)
    assert second["compiled"] == 0  # loaded, not compiled
    assert second["html"] == first["html"]


def test_a_torn_cache_file_is_recompiled_not_trusted(tmp_path: Path) -> None:
    first = _render(tmp_path)
    (cached,) = _cache_files(tmp_path)
    cached.write_bytes(cached.read_bytes()[:100])  # a write cut short
    again = _render(tmp_path)
    assert again["compiled"] == 1
    assert again["html"] == first["html"]
    cached.write_bytes(b"not jinja bytecode at all")
    assert _render(tmp_path)["html"] == first["html"]


def test_no_usable_temporary_directory_still_renders(tmp_path: Path) -> None:
    """A cache directory owned by someone else (here: a file in its place) is refused
    by jinja; the report is compiled in memory instead."""
    (tmp_path / f"_jinja2-cache-{os.getuid()}").write_text("not a directory")
    result = _render(tmp_path)
    assert result["compiled"] == 1
    assert "<html" in str(result["html"])
