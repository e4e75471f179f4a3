"""An attack result on disk (attack.json) and as a terminal figure.

The Markdown, HTML and JSON reports of an attack come from the report package, the
one renderer of results: see tests/reports/test_markdown_attack.py.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import shieldbench.attacks
from shieldbench.attacks import (
    AttackResult,
    AttackSettings,
    format_asr,
    load_attack,
    run_attack,
    save_attack,
)
from shieldbench.errors import RunError
from shieldbench.metrics import rate
from shieldbench.reports import build_report, render_markdown


@pytest.fixture(scope="module")
def result(toys: SimpleNamespace) -> AttackResult:
    return run_attack(
        toys.Keyword(),
        toys.make_dataset(),
        settings=AttackSettings(budget=80, rounds=3, seed=5),
        transfer={"allow-all": toys.Constant(False)},
    )


def test_the_attack_package_renders_no_markdown() -> None:
    """One renderer: the report package (report.md), none in the attack package."""
    names = set(shieldbench.attacks.__all__)
    assert not {"attack_to_markdown", "write_attack_reports"} & names
    assert {"save_attack", "load_attack", "format_asr"} <= names


def test_format_asr_undefined_rate() -> None:
    assert format_asr(rate(0, 0)) == "– (0/0)"
    assert format_asr(rate(1, 4)).startswith("25.0% [")


def test_attack_json_round_trips(result: AttackResult, tmp_path: Path) -> None:
    path = save_attack(result, tmp_path / "out" / "attack.json")
    assert path == tmp_path / "out" / "attack.json"
    assert load_attack(path) == result
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["kind"], data["schema_version"]) == ("shieldbench.attack", 1)
    assert {"static_asr", "adaptive_asr", "rounds", "curve", "queries_to_bypass", "chains"} <= set(
        data["figures"]
    )


def test_lone_surrogates_survive_saving(result: AttackResult, tmp_path: Path) -> None:
    odd = dataclasses.replace(result.bypasses[0], text="bad \ud800 half")
    weird = dataclasses.replace(result, bypasses=(odd,))
    path = save_attack(weird, tmp_path / "a.json")
    assert load_attack(path).bypasses[0].text == "bad \ud800 half"


def test_loading_bad_files_names_the_file(tmp_path: Path, result: AttackResult) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(RunError, match=r"nope\.json"):
        load_attack(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(RunError, match=r"broken\.json:1: not valid JSON"):
        load_attack(broken)
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps({"kind": "shieldbench.run"}), encoding="utf-8")
    with pytest.raises(RunError, match="not an attack result"):
        load_attack(run_file)
    data = result.to_dict()
    del data["figures"]["curve"]
    with pytest.raises(RunError, match="malformed"):
        AttackResult.from_dict(data)
    data = result.to_dict() | {"schema_version": 99}
    with pytest.raises(RunError, match="schema_version 99"):
        AttackResult.from_dict(data)


def test_the_report_renders_a_result_of_this_module(result: AttackResult) -> None:
    md = render_markdown(build_report([], attack=result))
    assert md.startswith("# shieldbench adaptive attack: keyword on ")
    assert f"{format_asr(result.figures.adaptive_asr).split(' (')[0]}" in md
    assert "| allow-all |" in md
