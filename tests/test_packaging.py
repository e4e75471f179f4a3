"""The wheel ships what the run time reads, and no training data (issue 32).

``[tool.setuptools.package-data]`` in ``pyproject.toml`` lists the data files of the
package folder by folder. Read here the way setuptools reads it (globs relative to
``src/shieldbench``), the list must

- cover every data file under ``src/shieldbench`` (a file it misses would be absent
  from an installed package, and the run time reads them all), and
- ship nothing of :mod:`shieldbench.train` and none of the training banks of
  ``train/data/`` (compared by content, so a copy under another name is caught too).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "shieldbench"
TRAINING_DATA = ROOT / "train" / "data"


def _patterns() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns: list[str] = config["tool"]["setuptools"]["package-data"]["shieldbench"]
    return patterns


def _data_files(package: Path) -> set[Path]:
    """Every file under ``package`` that is not Python source or a byte-code cache."""
    return {
        path
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }


def _shipped(package: Path, patterns: Iterable[str]) -> set[Path]:
    """The files ``patterns`` select (globs relative to the package folder, as setuptools)."""
    return {path for pattern in patterns for path in package.glob(pattern) if path.is_file()}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _training_leaks(package: Path, shipped: Iterable[Path], training: Sequence[Path]) -> list[str]:
    """Shipped files that are training code's data or copies of a training bank."""
    banks = {_digest(path) for path in training}
    return sorted(
        str(path.relative_to(package))
        for path in shipped
        if path.relative_to(package).parts[0] == "train" or _digest(path) in banks
    )


def test_every_data_file_of_the_package_is_shipped() -> None:
    missing = _data_files(PACKAGE) - _shipped(PACKAGE, _patterns())
    assert not missing, "not in package-data: " + ", ".join(
        sorted(str(p.relative_to(PACKAGE)) for p in missing)
    )


def test_no_training_data_is_shipped() -> None:
    training = sorted(TRAINING_DATA.rglob("*.json"))
    assert len(training) >= 4  # shieldguard's written banks are where the trainer looks
    leaks = _training_leaks(PACKAGE, _shipped(PACKAGE, _patterns()), training)
    assert not leaks, f"package-data would ship training data: {leaks}"
    assert not any(pattern.startswith("**") for pattern in _patterns()), (
        "a pattern over the whole package ships whatever is put anywhere in it"
    )


def test_the_model_and_its_cards_are_shipped() -> None:
    shipped = {p.relative_to(PACKAGE).as_posix() for p in _shipped(PACKAGE, _patterns())}
    folder = "defenses/models/shieldguard"
    expected = {f"{folder}/{n}" for n in ("model/model.onnx", "model/tokenizer.json")}
    expected |= {f"{folder}/model/card.json", f"{folder}/DATACARD.md"}
    expected |= {"defenses/models/weights/embedding-lr/card.json", "py.typed"}
    assert expected <= shipped


@pytest.mark.parametrize("where", ["train/bank.json", "defenses/models/shieldguard/written/x.json"])
def test_the_checks_catch_training_data_a_broad_pattern_would_ship(
    tmp_path: Path, where: str
) -> None:
    bank = tmp_path / "data" / "documents.json"
    bank.parent.mkdir()
    bank.write_text('{"kinds": {}}', encoding="utf-8")
    package = tmp_path / "shieldbench"
    leaked = package / where
    leaked.parent.mkdir(parents=True)
    leaked.write_bytes(bank.read_bytes())
    (package / "reports.json").write_text("{}", encoding="utf-8")
    assert _training_leaks(package, _shipped(package, ["**/*.json"]), [bank]) == [where]
    assert _training_leaks(package, _shipped(package, ["*.json"]), [bank]) == []
    assert _data_files(package) - _shipped(package, ["*.json"]) == {leaked}
