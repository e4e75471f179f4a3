"""shieldguard's recipe: the training view, written data, the split, the command's data folder."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shieldbench.errors import ConfigError
from shieldbench.train.shieldguard import FOLDS, SHARED, data_dir, head_tail, split_of
from shieldbench.train.shieldguard._paths import BANKS, CHECKOUT_DIR, DATA_ENV, use_data_dir
from shieldbench.train.shieldguard._written import documents, indirect, notinject

ROOT = Path(__file__).resolve().parents[2]


def test_head_tail_keeps_both_ends() -> None:
    kept = head_tail(list(range(1000)), 10)
    assert kept == [0, 1, 2, 3, 4, 995, 996, 997, 998, 999]
    assert head_tail([1, 2], 10) == [1, 2]


def test_written_data_is_seeded_multilingual_and_places_injections_everywhere() -> None:
    assert notinject(random.Random(3), 50) == notinject(random.Random(3), 50)
    languages = {lang for _, lang in notinject(random.Random(0), 400)}
    assert {"en", "de", "fr", "es", "zh", "ru"} <= languages
    kinds = {kind for _, kind in documents(random.Random(0), 200)}
    assert kinds == {"code", "email", "table", "tool", "web"}
    positions = {kind.split("/")[1] for _, kind in indirect(random.Random(0), 200)}
    assert positions == {"start", "middle", "end"}


def test_split_is_a_fixed_hash_of_the_id_with_the_stated_shares() -> None:
    ids = [f"row-{i}" for i in range(5000)]
    splits = [split_of(i) for i in ids]
    assert splits == [split_of(i) for i in ids]
    share = {name: splits.count(name) / len(ids) for name in ("train", "dev", "test")}
    assert share["train"] == pytest.approx(0.6, abs=0.03)
    assert share["dev"] == pytest.approx(0.1, abs=0.02)
    assert share["test"] == pytest.approx(0.3, abs=0.03)
    assert {s for fold in FOLDS.values() for s in fold} <= set(SHARED)


@pytest.mark.slow
def test_train_cli_rejects_an_unknown_fold_with_exit_code_2(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shieldbench",
            "train",
            "shieldguard",
            str(tmp_path / "o"),
            "--fold",
            "nope",
            "--steps",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "unknown fold 'nope'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o" / "model.onnx").exists()


def test_the_written_banks_are_found_in_the_checkout_not_in_the_package() -> None:
    assert data_dir() == ROOT / CHECKOUT_DIR
    runtime = ROOT / "src" / "shieldbench" / "defenses" / "models" / "shieldguard"
    found = {p.relative_to(runtime).as_posix() for p in runtime.rglob("*.json")}
    assert found == {"model/card.json", "model/tokenizer.json"}


def test_without_a_checkout_the_error_names_the_folder_and_data_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        data_dir(start=tmp_path / "site-packages" / "shieldbench" / "train")
    assert "train/data/shieldguard/" in str(caught.value)
    assert "--data-dir" in str(caught.value)


def test_data_dir_and_the_environment_are_checked_and_override_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"frames\.json"):
        use_data_dir(tmp_path)  # an empty folder
    for name in BANKS:
        shutil.copy(ROOT / CHECKOUT_DIR / name, tmp_path / name)
    try:
        use_data_dir(tmp_path)
        assert data_dir() == tmp_path
    finally:
        use_data_dir(None)
    assert data_dir() == ROOT / CHECKOUT_DIR
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=DATA_ENV):
        data_dir()


@pytest.mark.slow
def test_the_command_refuses_a_missing_data_dir_and_both_or_neither_of_out_and_prepare(
    tmp_path: Path,
) -> None:
    env = {"PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "shieldbench", "train", "shieldguard"]
    cases = [
        ([str(tmp_path / "o"), "--data-dir", str(tmp_path / "none")], "--data-dir"),
        ([], "give OUT (train) or --prepare FILE"),
        ([str(tmp_path / "o"), "--prepare", str(tmp_path / "p.gz")], "one of them"),
    ]
    for extra, message in cases:
        done = subprocess.run(
            [*command, *extra], capture_output=True, text=True, check=False, cwd=ROOT, env=env
        )
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()
