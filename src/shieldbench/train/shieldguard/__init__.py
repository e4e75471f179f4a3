"""Retraining ``shieldguard``: its data writers, data mixes, fine-tuning loop and export.

The run-time model (the defense, the windowed scorer, ``model/`` and its cards) is
:mod:`shieldbench.defenses.models.shieldguard`; this package makes a new one and is
imported by nothing at run time. Retrain from a source checkout with::

    shieldbench train shieldguard OUT_DIR            # seeded, CPU, ~21 min on 2 cores
    shieldbench train shieldguard --prepare data.jsonl.gz   # then _fit.py on a GPU

How the pieces fit:

- ``_data`` assembles the examples (:func:`assemble`): installed corpora, the train
  split of ``../shared/datasets`` (:func:`split_of`, :data:`SHARED`, :data:`FOLDS`)
  and the written families of ``_written``, ``_augment`` (mix 1) or ``_mix`` (mix 2:
  ``_documents``, ``_frames``, ``_overdefense``, ``_overdefense_i18n``, ``_jailbreaks``,
  ``_installed``, ``_variety``);
- the written banks those modules read are JSON in ``train/data/shieldguard/`` of the
  checkout, not in the wheel (:func:`data_dir`; ``--data-dir`` elsewhere);
- ``_fit`` is the fine-tuning loop, standard library plus torch only, so it runs on a
  machine without shieldbench; ``_train`` exports 8-bit ONNX, calibrates
  (:func:`calibrate`) and writes the card; ``_cli`` is the command's options.

Names are imported on first use: importing the package reads no bank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shieldbench._lazy import lazy_attributes

if TYPE_CHECKING:
    from shieldbench.train.shieldguard._cli import main
    from shieldbench.train.shieldguard._data import (
        FOLDS,
        GROUPS,
        SHARED,
        assemble,
        shared_rows,
        split_of,
    )
    from shieldbench.train.shieldguard._fit import TrainConfig, head_tail
    from shieldbench.train.shieldguard._paths import data_dir, use_data_dir
    from shieldbench.train.shieldguard._train import calibrate, prepare, train
    from shieldbench.train.shieldguard._variety import FAMILIES, passages
    from shieldbench.train.shieldguard._written import INJECTIONS
else:
    _HOMES = {
        "main": "_cli",
        "FOLDS": "_data",
        "GROUPS": "_data",
        "SHARED": "_data",
        "assemble": "_data",
        "shared_rows": "_data",
        "split_of": "_data",
        "TrainConfig": "_fit",
        "head_tail": "_fit",
        "data_dir": "_paths",
        "use_data_dir": "_paths",
        "calibrate": "_train",
        "prepare": "_train",
        "train": "_train",
        "FAMILIES": "_variety",
        "passages": "_variety",
        "INJECTIONS": "_written",
    }
    __getattr__ = lazy_attributes(
        globals(), {name: f"{__name__}.{home}" for name, home in _HOMES.items()}
    )

__all__ = [
    "FAMILIES",
    "FOLDS",
    "GROUPS",
    "INJECTIONS",
    "SHARED",
    "TrainConfig",
    "assemble",
    "calibrate",
    "data_dir",
    "head_tail",
    "main",
    "passages",
    "prepare",
    "shared_rows",
    "split_of",
    "train",
    "use_data_dir",
]
