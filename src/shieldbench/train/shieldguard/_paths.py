"""Where shieldguard's training inputs are: the written banks and installed packages.

The written banks (``documents.json``, ``frames.json``, ``overdefense_en.json``,
``overdefense_i18n.json``: templates and sentence pools written for shieldbench)
are training data, not run-time data, so the wheel does not ship them: they live
in ``train/data/shieldguard/`` at the top of a source checkout. :func:`data_dir`
finds that folder, in this order:

1. the folder given to :func:`use_data_dir` (``shieldbench train shieldguard
   --data-dir DIR``);
2. the ``SHIELDBENCH_TRAIN_DATA`` environment variable;
3. ``train/data/shieldguard`` in a folder above this module (a checkout, installed
   editable or run with ``PYTHONPATH=src``).

When none has the banks, the error names the folder and ``--data-dir``.

    >>> from shieldbench.train.shieldguard._paths import BANKS
    >>> sorted(BANKS)[:2]
    ['documents.json', 'frames.json']
"""

from __future__ import annotations

import os
from pathlib import Path

from shieldbench.datasets import package_dir
from shieldbench.errors import ConfigError

__all__ = [
    "BANKS",
    "CHECKOUT_DIR",
    "DATA_ENV",
    "data_dir",
    "data_file",
    "package_dir",
    "use_data_dir",
]

BANKS = frozenset({"documents.json", "frames.json", "overdefense_en.json", "overdefense_i18n.json"})
CHECKOUT_DIR = Path("train", "data", "shieldguard")  # relative to the checkout's root
DATA_ENV = "SHIELDBENCH_TRAIN_DATA"

_chosen: list[Path] = []  # the folder given to use_data_dir, if any


def _has_banks(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BANKS)


def use_data_dir(folder: str | os.PathLike[str] | None) -> None:
    """Read the written banks from ``folder`` from now on (``None``: find them again).

    Raises :class:`~shieldbench.errors.ConfigError` naming the missing files when
    ``folder`` lacks any of :data:`BANKS`.
    """
    _chosen.clear()
    if folder is None:
        return
    path = Path(folder)
    missing = sorted(name for name in BANKS if not (path / name).is_file())
    if missing:
        raise ConfigError(f"--data-dir {path}: no {', '.join(missing)} there")
    _chosen.append(path)


def data_dir(*, start: Path | None = None) -> Path:
    """The folder of the written banks (see the module doc for the search order).

    ``start`` is where the search for a checkout begins (default: this module).
    """
    if _chosen:
        return _chosen[0]
    env = os.environ.get(DATA_ENV)
    if env:
        if not _has_banks(Path(env)):
            raise ConfigError(f"{DATA_ENV}={env}: not a folder with {', '.join(sorted(BANKS))}")
        return Path(env)
    for parent in (start or Path(__file__)).resolve().parents:
        if _has_banks(parent / CHECKOUT_DIR):
            return parent / CHECKOUT_DIR
    raise ConfigError(
        "shieldguard's written training data is not here: it is the folder"
        f" {CHECKOUT_DIR.as_posix()}/ of a source checkout (the wheel does not ship it);"
        " run from a checkout, or pass --data-dir DIR (or set"
        f" {DATA_ENV}) to a folder with {', '.join(sorted(BANKS))}"
    )


def data_file(name: str) -> Path:
    """One written bank, e.g. ``data_file("frames.json")``."""
    if name not in BANKS:
        raise ValueError(f"{name!r} is not one of shieldguard's written banks")
    return data_dir() / name
