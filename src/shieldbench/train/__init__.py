"""Training: how the shipped models are made, apart from the code that runs them.

Two trainers, behind one command, ``shieldbench train shieldguard|embedding-lr``:

- :mod:`shieldbench.train.embedding_lr`: a logistic-regression head over MiniLM
  embeddings, trained on any labelled datasets (:func:`train_embedding_head`), and the
  recipe of the head shipped in the package (:func:`build_default_head`);
- :mod:`shieldbench.train.shieldguard`: the fine-tuned MiniLM classifier: its data
  writers and mixes, its fine-tuning loop, the 8-bit ONNX export and calibration. Its
  written data banks are in ``train/data/shieldguard/`` of a source checkout (the wheel
  ships the models and their cards, not training data).

The layers: nothing outside this package imports it (the command line's ``train``
command does, on use), and this package imports other packages' public names only
(``tests/test_layout.py`` checks both). The run-time side of each model is in
:mod:`shieldbench.defenses`.

Names are imported on first use, so ``import shieldbench.train`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shieldbench._lazy import lazy_attributes

if TYPE_CHECKING:
    from shieldbench.train.embedding_lr import (
        build_default_head,
        threshold_for_fpr,
        train_embedding_head,
    )
else:
    __getattr__ = lazy_attributes(
        globals(),
        {
            "build_default_head": "shieldbench.train.embedding_lr",
            "threshold_for_fpr": "shieldbench.train.embedding_lr",
            "train_embedding_head": "shieldbench.train.embedding_lr",
        },
    )

__all__ = ["build_default_head", "threshold_for_fpr", "train_embedding_head"]
