"""``run --shard I/N`` + ``merge``: the merged run is the unsplit run; misfits are refused."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import run_defense
from shieldbench.engine._shards import mark_shard, merge_runs, parse_shard, shard_dataset
from shieldbench.errors import ConfigError, RunError
from shieldbench.metrics import summarize
from shieldbench.runio import load_run
from shieldbench.types import Run, RunConfig

runner = CliRunner()
CFG = RunConfig(warmup=0)


def _shards(n: int, *, spec: str = "pattern", cfg: RunConfig = CFG) -> list[Run]:
    data = load_dataset("builtin:smoke")
    defense = build_defense(spec)
    return [
        mark_shard(
            run_defense(defense, shard_dataset(data, i, n), config=cfg, defense_spec=spec),
            i,
            n,
            len(data),
        )
        for i in range(1, n + 1)
    ]


def test_merged_shards_equal_the_unsplit_run() -> None:
    data = load_dataset("builtin:smoke")
    whole = run_defense(build_defense("pattern"), data, config=CFG, defense_spec="pattern")
    merged = merge_runs(list(reversed(_shards(4))))  # order of the inputs does not matter
    assert merged.dataset == whole.dataset
    assert merged.samples == whole.samples
    assert [(o.sample_id, o.verdict, o.status) for o in merged.outcomes] == [
        (o.sample_id, o.verdict, o.status) for o in whole.outcomes
    ]
    a, b = summarize(merged), summarize(whole)
    assert a.rates == b.rates
    assert merged.environment["merged_shards"] == "4"


def test_merge_refuses_shards_that_do_not_fit() -> None:
    shards = _shards(3)
    with pytest.raises(RunError, match=r"incomplete set: shard\(s\) 2 of 3 missing"):
        merge_runs([shards[0], shards[2]])
    with pytest.raises(RunError, match="given twice"):
        merge_runs([shards[0], shards[1], shards[1], shards[2]])
    other = _shards(3, spec="python(shieldbench.defenses.pattern:PatternDefense, threshold=0.9)")
    with pytest.raises(RunError, match=r"defense .* differs"):
        merge_runs([shards[0], other[1], shards[2]])
    slow = _shards(3, cfg=RunConfig(warmup=0, timeout_s=5.0))
    with pytest.raises(RunError, match=r"run settings differ .*timeout_s=5\.0"):
        merge_runs([shards[0], slow[1], shards[2]])
    four = _shards(4)
    with pytest.raises(RunError, match="number of shards"):
        merge_runs([shards[0], four[1]])
    plain = dataclasses.replace(shards[0], environment={})
    with pytest.raises(RunError, match="not a shard"):
        merge_runs([plain])
    bent = dataclasses.replace(shards[1], samples=shards[1].samples, outcomes=shards[1].outcomes)
    swapped = dataclasses.replace(
        bent, samples=tuple(reversed(bent.samples)), outcomes=tuple(reversed(bent.outcomes))
    )
    with pytest.raises(RunError, match="hash to"):
        merge_runs([shards[0], swapped, shards[2]])


@pytest.mark.parametrize("bad", ["0/3", "4/3", "1", "a/b", ""])
def test_bad_shard_options_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="--shard"):
        parse_shard(bad)


@pytest.mark.slow
def test_cli_shard_and_merge_round_trip(tmp_path: Path) -> None:
    files = []
    for i in (1, 2):
        out = tmp_path / f"shard{i}"
        result = runner.invoke(
            app,
            ["run", "-d", "pattern", "-D", "builtin:smoke", "--warmup", "0",
             "--shard", f"{i}/2", "--out", str(out)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        (run_file,) = (out / "runs").glob("*.json")
        files.append(run_file)
    merged = tmp_path / "merged.json"
    result = runner.invoke(app, ["merge", *map(str, files), "--out", str(merged)])
    assert result.exit_code == 0, result.output
    whole = tmp_path / "whole"
    result = runner.invoke(
        app, ["run", "-d", "pattern", "-D", "builtin:smoke", "--warmup", "0", "--out", str(whole)]
    )
    assert result.exit_code == 0, result.output
    (whole_file,) = (whole / "runs").glob("*.json")
    a, b = load_run(merged), load_run(whole_file)
    assert a.dataset.content_hash == b.dataset.content_hash
    assert [o.verdict for o in a.outcomes] == [o.verdict for o in b.outcomes]
    bad = _cli("merge", str(files[0]), "--out", str(tmp_path / "x.json"))
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "incomplete set: shard(s) 2 of 2 missing" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "x.json").exists()
    again = _cli("merge", *map(str, files), "--out", str(merged))
    assert again.returncode == 2
    assert "already exists" in again.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from shieldbench.cli import main; sys.argv[0] = 'shieldbench'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def _e2e_shards(n: int, *, canary: str = "CANARY-1") -> list[Run]:
    from shieldbench.engine import EndToEnd
    from shieldbench.judges import build_judge
    from shieldbench.targets import build_target

    data = load_dataset("builtin:smoke")
    plan = EndToEnd(
        build_target("python(shieldbench.targets._examples:echo)"),
        (build_judge("leak"),),
        canary=canary,
        target_spec="python(shieldbench.targets._examples:echo)",
    )
    defense = build_defense("pattern")
    return [
        mark_shard(
            run_defense(defense, shard_dataset(data, i, n), config=CFG, defense_spec="pattern",
                        end_to_end=plan),
            i, n, len(data),
        )
        for i in range(1, n + 1)
    ]  # fmt: skip


def test_merged_end_to_end_shards_keep_the_plan_and_profile_all_answers(tmp_path: Path) -> None:
    from shieldbench.engine import EndToEnd
    from shieldbench.judges import behaviour_profile, build_judge
    from shieldbench.targets import build_target

    shards = _e2e_shards(3)
    merged = merge_runs(shards)
    plan = {k: v for k, v in shards[0].end_to_end.items() if k != "profile"}
    assert {k: v for k, v in merged.end_to_end.items() if k != "profile"} == plan
    whole = run_defense(
        build_defense("pattern"),
        load_dataset("builtin:smoke"),
        config=CFG,
        defense_spec="pattern",
        end_to_end=EndToEnd(
            build_target("python(shieldbench.targets._examples:echo)"),
            (build_judge("leak"),),
            canary="CANARY-1",
        ),
    )
    assert merged.end_to_end["profile"] == whole.end_to_end["profile"]
    expected = behaviour_profile(merged.samples, merged.outcomes, canary="CANARY-1")
    assert merged.end_to_end["profile"] == expected.to_dict()
    other = _e2e_shards(3, canary="CANARY-2")
    with pytest.raises(RunError, match="end-to-end settings differ"):
        merge_runs([shards[0], other[1], shards[2]])
