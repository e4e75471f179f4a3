"""Training ``embedding-lr`` heads: a logistic regression over MiniLM embeddings.

- :func:`train_embedding_head` pools labelled datasets, splits them (seeded,
  stratified), fits the head and calibrates its threshold for a target false
  positive rate; ``shieldbench train embedding-lr --dataset ... --out DIR`` runs it.
- :func:`build_default_head` rebuilds the head shipped in the package
  (``shieldbench train embedding-lr --shipped --out DIR``).

The run-time side (loading a head, scoring) is :mod:`shieldbench.defenses`
(``EmbeddingHead``, ``EmbeddingLRDefense``), which never imports this package.
"""

from __future__ import annotations

from shieldbench.train.embedding_lr._default_head import (
    SAMPLE_SIZE,
    SOURCES,
    build_default_head,
    default_training_data,
)
from shieldbench.train.embedding_lr._fit import threshold_for_fpr, train_embedding_head

__all__ = [
    "SAMPLE_SIZE",
    "SOURCES",
    "build_default_head",
    "default_training_data",
    "threshold_for_fpr",
    "train_embedding_head",
]
