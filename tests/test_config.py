"""Benchmark config files: valid files parse, every mistake names file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from shieldbench.config import load_config, parse_config
from shieldbench.errors import ConfigError


def test_full_config(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(
        "defenses: [pattern, 'any(pattern, semantic)']\n"
        "datasets: builtin:core\n"
        "run: {error_policy: exclude, timeout_s: 2, concurrency: 4, retries: 0, warmup: 0,"
        " batch_size: 8, retry_backoff_s: 0.1}\n"
        "margin: 0.05\nout: reports/x\n",
        encoding="utf-8",
    )
    cfg = load_config(path)
    assert cfg.defenses == ("pattern", "any(pattern, semantic)")
    assert cfg.datasets == ("builtin:core",)
    assert cfg.run.error_policy == "exclude"
    assert cfg.run.batch_size == 8
    assert cfg.margin == 0.05
    assert cfg.out == tmp_path / "reports/x"  # relative to the config file, not the cwd


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "data.jsonl").write_text('{"text": "hi", "label": "benign"}\n', encoding="utf-8")
    path = folder / "b.yaml"
    path.write_text(
        "defenses: [pattern]\n"
        "datasets: [jsonl:data.jsonl, 'csv(more.csv, text=prompt)', builtin:smoke,"
        f" 'jsonl:{tmp_path}/abs.jsonl']\nout: out\n",
        encoding="utf-8",
    )
    cfg = load_config(path)
    assert cfg.datasets == (
        f"jsonl:{folder}/data.jsonl",
        f"csv({folder}/more.csv, text=prompt)",
        "builtin:smoke",
        f"jsonl:{tmp_path}/abs.jsonl",
    )
    assert cfg.out == folder / "out"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "holds a mapping"),
        ({"datasets": ["x"]}, "missing 'defenses:'"),
        ({"defenses": [], "datasets": ["x"]}, "non-empty list"),
        ({"defenses": ["p", 3], "datasets": ["x"]}, "defenses[1] must be a spec string"),
        ({"defenses": ["p"], "datasets": ["x"], "defence": 1}, "unknown key(s) defence"),
        ({"defenses": ["p"], "datasets": ["x"], "run": {"timeout": 1}}, "unknown run setting"),
        ({"defenses": ["p"], "datasets": ["x"], "run": {"concurrency": 1.5}}, "run.concurrency"),
        ({"defenses": ["p"], "datasets": ["x"], "run": {"concurrency": 0}}, "concurrency must"),
        ({"defenses": ["p"], "datasets": ["x"], "run": {"error_policy": "x"}}, "error_policy"),
        ({"defenses": ["p"], "datasets": ["x"], "margin": 2}, "margin must be"),
        ({"defenses": ["p"], "datasets": ["x"], "out": 3}, "out must be"),
    ],
)
def test_mistakes_are_named(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.yaml: ") as info:
        parse_config(data, source="cfg.yaml")
    assert message in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("defenses: [pattern\ndatasets: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml:\d+: invalid YAML"):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
