"""docs/guides/llm-attacks.md: its commands run as written, against a scripted "Ollama".

The page tells the reader to point ``--attacker`` at Ollama on
``http://127.0.0.1:11434/v1``. Here the scripted attacker of
``scripted_attacker.py`` stands in for it: every ``shieldbench`` command of the
page's shell blocks (those not marked ``docs-test: skip``) runs through the real
command line, in order, with only that base URL replaced by the scripted server's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shieldbench.attacks import load_llm_attack
from shieldbench.cli import app

HERE = Path(__file__).parent
PAGE = HERE.parents[1] / "docs" / "guides" / "llm-attacks.md"
OLLAMA = "http://127.0.0.1:11434/v1"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.S)


def _commands(markdown: str) -> list[str]:
    commands = []
    for m in _BLOCK.finditer(markdown):
        if m["lang"] != "bash" or m["before"].startswith("<!-- docs-test: skip"):
            continue
        commands += [c for c in m["body"].replace("\\\n", " ").splitlines() if c.strip()]
    return commands


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(HERE))
    from scripted_attacker import ScriptedAttacker  # type: ignore[import-not-found]

    srv = ScriptedAttacker().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.slow
def test_the_page_runs_each_strategy_against_the_ollama_address(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SHIELDBENCH_DB", str(tmp_path / "h.db"))
    commands = _commands(PAGE.read_text(encoding="utf-8"))
    assert len(commands) == 5
    strategies = set()
    for command in commands:
        assert OLLAMA in command or command.startswith("shieldbench report")
        argv = shlex.split(command.replace(OLLAMA, server.url))
        assert argv[0] == "shieldbench"
        result = CliRunner().invoke(app, argv[1:])
        assert result.exit_code == 0, f"{command}\n{result.output}\n{result.exception!r}"
        if "--strategy" in argv:
            strategies |= set(argv[argv.index("--strategy") + 1].split(","))
    assert strategies == {"pair", "tap", "crescendo"}
    for s in ("pair", "tap", "crescendo"):
        r = load_llm_attack(tmp_path / "attacks" / "all" / s / "llm_attack.json")
        assert r.comparison is not None
        assert [t.defense.spec for t in r.transfer] == ["pattern(threshold=0.9)"]
        assert r.settings.price_per_mtok == (0.15, 0.6)
    again = (tmp_path / "attacks" / "again" / "llm_attack.md").read_text(encoding="utf-8")
    assert again == (tmp_path / "attacks" / "all" / "llm_attack.md").read_text(encoding="utf-8")
