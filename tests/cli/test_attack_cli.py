"""``shieldbench attack``, ``mutators`` and ``datasets mutate`` through the real typer app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.attacks import load_attack, mutators
from shieldbench.cli import app, main
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense, registry

runner = CliRunner()


def _attack(out: Path, *extra: str) -> list[str]:
    return [
        "attack", "--defense", "pattern", "--dataset", "builtin:smoke", "--budget", "60",
        "--rounds", "3", "--seed", "4", "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_attack_writes_reports_and_a_loadable_bypass_dataset(tmp_path: Path) -> None:
    out = tmp_path / "a"
    result = runner.invoke(app, _attack(out, "--transfer", "pattern(threshold=0.9)"))
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "adaptive ASR" in flat
    assert "transfer to pattern(threshold=0.9)" in flat
    attack = load_attack(out / "attack.json")
    assert attack.defense.spec == "pattern"
    assert attack.dataset.spec == "builtin:smoke"
    assert attack.counts.search_queries <= 60
    assert attack.settings.mutators == ()  # all of them
    assert [t.defense.spec for t in attack.transfer] == ["pattern(threshold=0.9)"]
    assert sorted(p.name for p in out.iterdir()) == [
        "attack.json", "bypasses.jsonl", "report.html", "report.json", "report.md",
    ]  # fmt: skip
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# shieldbench adaptive attack: pattern on builtin:smoke")
    assert f"Attack {attack.meta.id}, started" in md
    assert "| pattern(threshold=0.9) |" in md  # the transfer table
    bypasses = load_dataset(f"jsonl:{out / 'bypasses.jsonl'}")
    assert len(bypasses) == len(attack.bypasses) > 0
    pattern = build_defense("pattern")
    assert not any(pattern.check(s.text).blocked for s in bypasses)


@pytest.mark.slow
def test_examples_sets_the_bypasses_shown_in_report_md(tmp_path: Path) -> None:
    out = tmp_path / "e"
    result = runner.invoke(app, _attack(out, "--examples", "1"))
    assert result.exit_code == 0, result.output
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "up to 1 per attack category" in md
    n_categories = len({b.category for b in load_attack(out / "attack.json").bypasses})
    assert f"Example bypasses ({n_categories} of " in md


@pytest.mark.slow
def test_the_same_seed_writes_the_same_figures(tmp_path: Path) -> None:
    for name in ("one", "two"):
        extra = ("--mutators", "encoding,noise", "--strategy", "beam", "--beam-width", "2")
        assert runner.invoke(app, _attack(tmp_path / name, *extra)).exit_code == 0
    one, two = (
        json.loads((tmp_path / n / "attack.json").read_text(encoding="utf-8"))
        for n in ("one", "two")
    )
    del one["meta"], two["meta"]
    assert one == two
    assert one["settings"]["strategy"] == "beam"
    assert {m["family"] for m in one["mutators"]} == {"encoding", "noise"}


@pytest.mark.slow
def test_bad_options_fail_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra, message in (
        (("--strategy", "smart"), "--strategy 'smart'"),
        (("--mutators", "base46"), "did you mean base64"),
        (("--error-policy", "maybe"), "--error-policy 'maybe'"),
    ):
        monkeypatch.setattr("sys.argv", ["shieldbench", *_attack(tmp_path / "x", *extra)])
        with pytest.raises(SystemExit) as info:
            main()
        assert info.value.code == 2
        assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "x").exists()


def test_mutators_lists_every_mutator() -> None:
    result = runner.invoke(app, ["mutators", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["name"] for r in rows] == [m.name for m in mutators]
    assert {"preserves_payload", "reversible", "needs_rng", "family"} <= set(rows[0])
    table = runner.invoke(app, ["mutators", "--family", "framing"])
    assert table.exit_code == 0
    assert "roleplay" in table.output
    assert "base64" not in table.output


def test_datasets_mutate_writes_a_tier(tmp_path: Path) -> None:
    out = tmp_path / "tier.jsonl"
    args = [
        "datasets", "mutate", "builtin:smoke", "--mutators", "base64,rot13", "--seed", "2",
        "--only-attacks", "--tier", "paraphrased", "--out", str(out),
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "wrote 52 variants" in " ".join(result.output.split())
    tier = load_dataset(f"jsonl:{out}")
    assert len(tier) == 52
    assert {s.tier for s in tier} == {"paraphrased"}
    assert {s.metadata["mutator"] for s in tier} == {"base64", "rot13"}
    parents = {s.id for s in load_dataset("builtin:smoke") if s.is_attack}
    assert {s.metadata["parent_id"] for s in tier} == parents
    again = tmp_path / "again.jsonl"
    assert runner.invoke(app, [*args[:-1], str(again)]).exit_code == 0
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.slow
@pytest.mark.skipif("semantic" not in registry, reason="the semantic defense is not registered")
@pytest.mark.parametrize("spec", ["semantic", "any(pattern, semantic)"])
def test_attack_runs_against_semantic_and_a_pipeline_from_the_cli(
    spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "a"
    args = [
        "attack", "--defense", spec, "--dataset", "builtin:smoke", "--budget", "24",
        "--rounds", "2", "--seed", "3", "--mutators", "encoding,framing", "--out", str(out),
    ]  # fmt: skip
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"open the HTML report: {out / 'report.html'}" in " ".join(result.output.split())
    attack = load_attack(out / "attack.json")
    assert attack.defense.spec == spec
    assert attack.meta.strategy == "beam"  # both give scores
    assert attack.counts.targets > 0
    assert 0 < attack.counts.search_queries <= 24
    assert attack.figures.adaptive_asr.k >= attack.figures.static_asr.k
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "ASR against search queries spent" in md
    assert "| Mutator | Family | Keeps payload |" in md
    defense = build_defense(spec)
    for b in attack.bypasses:  # every reported bypass really gets through
        assert not defense.check(b.text).blocked
