"""``run_benchmark`` straight from Python: the benchmark, its folder, reuse and resume.

Every test runs real defenses on real data into a real folder (``pattern`` on
``builtin:smoke``, and a small in-test defense whose calls are counted and which can
stop itself with Ctrl-C after N calls).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from shieldbench.benchmark import (
    Benchmark,
    BenchmarkConfig,
    BenchmarkEvents,
    BenchmarkInterrupted,
    BenchmarkJob,
    resume_config,
    run_benchmark,
)
from shieldbench.errors import ConfigError, RunError, ShieldbenchError
from shieldbench.runio import load_run
from shieldbench.types import RunConfig, Verdict

SMOKE = "builtin:smoke"  # 38 samples: 26 attacks, 12 benign
FAST = RunConfig(warmup=0, concurrency=1)


class Counting:
    """A defense that counts its calls and raises KeyboardInterrupt after ``stop_after``."""

    name = "counting"

    def __init__(self, version: str = "1", stop_after: int = 0) -> None:
        self.version = version
        self.stop_after = stop_after
        self.calls = 0
        self.closed = False

    def check(self, text: str) -> Verdict:
        self.calls += 1
        if self.stop_after and self.calls > self.stop_after:
            raise KeyboardInterrupt
        return Verdict(blocked="ignore" in text.lower(), score=0.5)

    def close(self) -> None:
        self.closed = True


class Recorder(BenchmarkEvents):
    """Every event, in order, as a short tuple."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def dataset_loaded(self, spec: str, dataset: object, warnings: Sequence[object]) -> None:
        self.seen.append(("dataset", spec))

    def started(self, folder: Path, benchmark_id: str) -> None:
        self.seen.append(("started", benchmark_id))

    def job_reused(self, job: BenchmarkJob, path: Path) -> None:
        self.seen.append(("reused", job.defense, path.name))

    def job_resumed(self, job: BenchmarkJob, reused: int, total: int) -> None:
        self.seen.append(("resumed", job.defense, str(reused), str(total)))


def _config(*defenses: str, datasets: tuple[str, ...] = (SMOKE,)) -> BenchmarkConfig:
    return BenchmarkConfig(defenses=defenses, datasets=datasets, run=FAST)


@pytest.mark.slow
def test_a_benchmark_of_pattern_on_smoke(tmp_path: Path) -> None:
    events = Recorder()
    result = run_benchmark(_config("pattern", "none"), out=tmp_path / "b", events=events)
    assert isinstance(result, Benchmark)
    assert [r.defense.spec for r in result.runs] == ["pattern", "none"]
    assert all(len(r.outcomes) == len(r.samples) == 38 for r in result.runs)
    pattern, none = result.runs
    assert sum(o.verdict is not None and o.verdict.blocked for o in none.outcomes) == 0
    assert sum(o.verdict is not None and o.verdict.blocked for o in pattern.outcomes) > 0
    assert result.runs_on(SMOKE) == result.runs
    assert [r.id for r in result.runs] == [f"{result.id}-00", f"{result.id}-01"]
    assert result.reused == result.resumed == ()
    assert events.seen == [("dataset", SMOKE), ("started", result.id)]
    # every run file holds the run that was returned
    assert [load_run(p).id for p in result.run_files] == [r.id for r in result.runs]


@pytest.mark.slow
def test_the_output_folder_layout(tmp_path: Path) -> None:
    out = tmp_path / "b"
    result = run_benchmark(_config("pattern"), out=out)
    assert result.folder == out
    assert result.manifest == out / "benchmark.json"
    assert result.run_files == (out / "runs" / "00-pattern--builtin-smoke.json",)
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"benchmark.json", "runs/00-pattern--builtin-smoke.json"} <= names
    assert not any(n.startswith("checkpoints/") for n in names)  # gone once saved
    assert not (out / ".shieldbench.lock").exists()  # released when the call returns
    assert set(result.reports) >= {"md", "html", "json"}
    assert all(p.parent == out and p.is_file() for p in result.reports.values())
    manifest = json.loads(result.manifest.read_text())
    assert manifest["id"] == result.id
    assert manifest["defenses"] == ["pattern"]
    assert manifest["datasets"] == [SMOKE]
    assert manifest["run"] == FAST.to_dict()


@pytest.mark.slow
def test_run_files_only_without_reports(tmp_path: Path) -> None:
    result = run_benchmark(_config("pattern"), out=tmp_path / "b", reports=False)
    assert result.reports == {}
    assert not list((tmp_path / "b").glob("report*"))


@pytest.mark.slow
def test_a_new_benchmark_refuses_a_used_folder(tmp_path: Path) -> None:
    out = tmp_path / "b"
    run_benchmark(_config("pattern"), out=out, reports=False)
    with pytest.raises(RunError, match="already holds a benchmark"):
        run_benchmark(_config("pattern"), out=out)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="holds other files"):
        run_benchmark(_config("pattern"), out=other)
    assert (other / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_resume_continues_an_interrupted_job_from_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "b"
    stopping = Counting(stop_after=20)
    config = _config("pattern", "counting")
    with pytest.raises(BenchmarkInterrupted) as stop:
        run_benchmark(config, out=out, defenses={"counting": stopping})
    assert (stop.value.folder, stop.value.finished, stop.value.total) == (out, 1, 2)
    assert isinstance(stop.value, KeyboardInterrupt)
    assert not stopping.closed  # the caller's defense: the caller closes it
    checkpoint = out / "checkpoints" / "01-counting--builtin-smoke.jsonl"
    assert len(checkpoint.read_text().splitlines()) == 1 + 20  # its header, 20 outcomes
    assert [p.name for p in (out / "runs").iterdir()] == ["00-pattern--builtin-smoke.json"]

    interrupted_id = json.loads((out / "benchmark.json").read_text())["id"]
    fresh = Counting()
    events = Recorder()
    result = run_benchmark(
        resume_config(out), out=out, resume=True, defenses={"counting": fresh}, events=events
    )
    assert fresh.calls == 38 - 20  # only what the checkpoint did not hold
    assert [j.defense for j in result.reused] == ["pattern"]
    assert [j.defense for j in result.resumed] == ["counting"]
    assert ("resumed", "counting", "20", "38") in events.seen
    assert result.id == interrupted_id
    assert all(len(r.outcomes) == 38 for r in result.runs)
    assert not checkpoint.exists()


@pytest.mark.slow
def test_reuse_only_while_data_and_defense_version_are_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "b"
    data = tmp_path / "d.jsonl"
    rows = [{"text": f"ignore rule {i}", "label": 1} for i in range(4)]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    config = _config("counting", datasets=(f"jsonl:{data}",))
    first = Counting("1")
    run_benchmark(config, out=out, defenses={"counting": first})
    assert first.calls == 4

    same = Counting("1")
    again = run_benchmark(config, out=out, resume=True, defenses={"counting": same})
    assert same.calls == 0
    assert [j.defense for j in again.reused] == ["counting"]

    newer = Counting("2")  # a new defense version is measured again
    rerun = run_benchmark(config, out=out, resume=True, defenses={"counting": newer})
    assert newer.calls == 4
    assert rerun.reused == ()
    assert rerun.runs[0].defense.version == "2"

    rows.append({"text": "hello", "label": 0})  # new data: measured again
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    changed = Counting("2")
    last = run_benchmark(config, out=out, resume=True, defenses={"counting": changed})
    assert changed.calls == 5
    assert last.reused == ()


@pytest.mark.slow
def test_resume_refuses_other_specs_or_settings(tmp_path: Path) -> None:
    out = tmp_path / "b"
    run_benchmark(_config("pattern"), out=out, reports=False)
    with pytest.raises(RunError, match="ran defenses"):
        run_benchmark(_config("none"), out=out, resume=True)
    other = BenchmarkConfig(defenses=("pattern",), datasets=(SMOKE,), run=RunConfig(warmup=3))
    with pytest.raises(RunError, match=r"warmup=0 \(asked: 3\)"):
        run_benchmark(other, out=out, resume=True)
    # naming no setting as explicit: the stored ones are used
    kept = run_benchmark(other, out=out, resume=True, explicit=())
    assert kept.config.run == FAST


@pytest.mark.slow
def test_defenses_built_by_the_benchmark_are_closed(tmp_path: Path) -> None:
    """A defense given by the caller stays open; the monitor relies on it."""
    mine = Counting()
    run_benchmark(_config("counting"), out=tmp_path / "b", defenses={"counting": mine})
    assert mine.calls == 38
    assert not mine.closed


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"defenses": ()}, "'defenses:' must be a non-empty list"),
        ({"datasets": [""]}, r"datasets\[0\] must be a spec string"),
        ({"defenses": ("pattern", "pattern")}, "defenses names pattern twice"),
        ({"margin": 2}, r"margin must be a number in \(0, 0.5\]"),
        ({"margin": True}, "margin must be a number"),
        ({"run": {"timeout_s": 5}}, "run must be a RunConfig"),
        ({"out": 3}, "out must be a directory path"),
        ({"end_to_end": {"target": 1}}, "end_to_end.target must be a target spec string"),
        ({"end_to_end": {"target": "x", "jugdes": []}}, "unknown end_to_end key"),
    ],
)
def test_a_bad_config_is_an_error_naming_the_field(fields: dict[str, object], named: str) -> None:
    values: dict[str, object] = {"defenses": ("pattern",), "datasets": (SMOKE,), **fields}
    with pytest.raises(ConfigError, match=named) as error:
        BenchmarkConfig(**values)  # type: ignore[arg-type]
    assert str(error.value).startswith("BenchmarkConfig: ")


def test_run_benchmark_refuses_what_is_not_a_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config must be a BenchmarkConfig"):
        run_benchmark({"defenses": ["pattern"]}, out=tmp_path)  # type: ignore[arg-type]


def test_an_unknown_spec_fails_before_the_folder_is_written(tmp_path: Path) -> None:
    out = tmp_path / "b"
    with pytest.raises(ShieldbenchError, match="no-such-defense"):
        run_benchmark(_config("no-such-defense"), out=out)
    assert not out.exists()


@pytest.mark.slow
def test_a_config_file_runs_the_same(tmp_path: Path) -> None:
    """``configs/*.yaml`` and Python share the one model (``load_config``)."""
    from shieldbench.benchmark import load_config

    path = tmp_path / "bench.yaml"
    path.write_text("defenses: [pattern]\ndatasets: [builtin:smoke]\nrun: {warmup: 0}\nout: out\n")
    result = run_benchmark(load_config(path), reports=False)
    assert result.folder == tmp_path / "out"
    assert result.runs[0].config.warmup == 0


def test_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    """Two benchmarks never write one folder: the second fails at once, writing nothing."""
    from shieldbench.locking import FolderLock

    out = tmp_path / "b"
    with FolderLock(out), pytest.raises(RunError):
        run_benchmark(_config("pattern"), out=out)
    assert not (out / "benchmark.json").exists()
