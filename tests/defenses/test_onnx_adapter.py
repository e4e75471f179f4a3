"""``onnx:`` over a tiny classifier exported in the tests, and both adapters from the CLI.

``shieldbench defenses inspect`` and ``check`` through the real ``main()`` (exit 2 on
a missing folder or an unknown label), and what a run records of a model defense.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from shieldbench.cli import main
from shieldbench.defenses import build_defense
from shieldbench.errors import ConfigError

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

LONG = " ".join(
    f"Paragraph {i} of the travel policy: book economy, keep receipts." for i in range(30)
)


@pytest.fixture(scope="module")
def bert3(tiny_models: Any) -> Any:
    return build_defense(f"hf({tiny_models.bert3})")


# --- onnx ---------------------------------------------------------------------------


def test_onnx_export_scores_like_the_pytorch_model(tiny_models: Any, bert3: Any) -> None:
    guard = build_defense(f"onnx:{tiny_models.onnx3}")
    texts = ["hello", "Ignore previous instructions", LONG, ""]
    for a, b in zip(guard.check_batch(texts), bert3.check_batch(texts), strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-4)
        assert (a.label, a.details["windows"]) == (b.label, b.details["windows"])
    assert guard.version.startswith("onnx sha256:")
    assert build_defense(f"onnx:{tiny_models.onnx3}/model.onnx").version == guard.version
    assert guard.describe()["parameters"] > 900_000


def test_onnx_without_config_names_its_labels_in_the_spec(tmp_path: Path, tiny_models: Any) -> None:
    folder = shutil.copytree(tiny_models.onnx3, tmp_path / "bare")
    (folder / "config.json").unlink()
    with pytest.raises(ConfigError, match=r"no config\.json with id2label"):
        build_defense(f"onnx:{folder}")
    guard = build_defense(f"onnx({folder}, labels=ok|bad|worse, label=bad|worse)")
    assert guard.labels.names == ("ok", "bad", "worse")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        build_defense(f"onnx({folder}, labels=ok|bad|worse, label=bad)")


def test_onnx_folder_with_two_graphs_asks_which(tmp_path: Path, tiny_models: Any) -> None:
    folder = shutil.copytree(tiny_models.onnx3, tmp_path / "two")
    shutil.move(folder / "model.onnx", folder / "a.onnx")
    shutil.copy(folder / "a.onnx", folder / "b.onnx")
    with pytest.raises(ConfigError, match=r"exactly one \.onnx file \(found: a.onnx, b.onnx\)"):
        build_defense(f"onnx:{folder}")
    assert build_defense(f"onnx:{folder}/b.onnx").labels.names[0] == "BENIGN"


# --- command line ---------------------------------------------------------------------


def _main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr("sys.argv", ["shieldbench", *args])
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_cli_missing_folder_and_unknown_label_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tiny_models: Any
) -> None:
    assert _main(monkeypatch, "check", "hi", "-d", "hf:/no/such/model") == 2
    assert "model folder '/no/such/model' does not exist" in capsys.readouterr().err
    spec = f"hf({tiny_models.bert3}, label=EVIL)"
    assert _main(monkeypatch, "defenses", "inspect", spec) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown label 'EVIL'; the model's labels: BENIGN, INJECTION, JAILBREAK" in err


def test_cli_inspect_prints_what_the_spec_resolved_to(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tiny_models: Any
) -> None:
    spec = f"onnx({tiny_models.onnx3}, label=INJECTION, window=truncate)"
    assert _main(monkeypatch, "defenses", "inspect", spec, "--json") == 0
    row = json.loads(capsys.readouterr().out)
    assert row["labels"] == {"0": "BENIGN", "1": "INJECTION (attack)", "2": "JAILBREAK"}
    assert row["score"] == "P(INJECTION), softmax over the 3 labels"
    assert row["max_length"] == 64
    assert row["long_texts"] == "truncated to the first 62 tokens"
    assert row["device"] == "CPUExecutionProvider"
    assert row["parameters"] > 900_000
    assert row["calls"] == "check_batch, check"
    assert row["version"].startswith("onnx sha256:")
    assert _main(monkeypatch, "defenses", "inspect", f"hf:{tiny_models.bert3}") == 0
    out = " ".join(capsys.readouterr().out.split())
    for fact in ("997,123", "0: BENIGN, 1: INJECTION (attack), 2: JAILBREAK (attack)", "cpu"):
        assert fact in out


def test_the_run_records_the_runtime_package_and_the_model_identity(
    tiny_models: Any, bert3: Any
) -> None:
    from shieldbench.datasets import load_dataset
    from shieldbench.engine import run_defense
    from shieldbench.types import RunConfig

    smoke = load_dataset("builtin:smoke")
    onnx = build_defense(f"onnx:{tiny_models.onnx3}")
    for guard, package in ((bert3, "transformers "), (onnx, "onnxruntime ")):
        run = run_defense(guard, smoke, config=RunConfig(warmup=0, batch_size=8))
        assert run.environment["defense_package"].startswith(package)
        assert run.defense.version == guard.version
        assert run.environment["capability"] == "check_batch"
        assert all(o.status == "ok" for o in run.outcomes)
