"""Training an :class:`~shieldbench.defenses.EmbeddingHead` on labelled datasets.

:func:`train_embedding_head` is what ``shieldbench train embedding-lr`` runs:

1. **Pool and de-duplicate.** Samples of every dataset are pooled in order; a
   text seen twice is kept once (the first time), and a text labelled both
   attack and benign is dropped (it cannot teach anything and would leak across
   splits). The card records, per dataset, what was kept.
2. **Split, stratified and seeded.** For each label, a ``numpy`` generator
   seeded with ``seed`` permutes the samples; ``holdout`` of them are held out
   and divided in two halves: *calibration* (chooses the threshold) and *test*
   (measures it). The rest trains the head.
3. **Embed and fit.** Texts are embedded once (MiniLM, L2-normalised) and a
   scikit-learn ``LogisticRegression`` (L2 penalty, ``C``, balanced class
   weights, lbfgs) is fit on the training part. Balanced weights make the head
   insensitive to the attack / benign ratio of whatever data it is given.
4. **Calibrate.** The threshold is the smallest score at which the false
   positive rate on the calibration benign samples is at most ``target_fpr``
   (:func:`threshold_for_fpr`): a deployment knob stated in the unit a security
   team budgets in, instead of an arbitrary 0.5.
5. **Measure.** TPR and FPR at that threshold and ROC-AUC on the calibration
   and the untouched test half go into the card; the calibration figures are
   optimistic by construction, the test ones are not.

Everything is deterministic for a given input, seed and machine: the split
uses its own generator, lbfgs has no randomness, texts are embedded in a fixed
order. Across machines, float rounding in the embedding model can move the
weights in the last digits (see the reproduction test for the tolerance).

Held-out figures measure the head on the *training distribution*; near
duplicates across splits make them optimistic. Benchmark on other data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata

import numpy as np
import numpy.typing as npt

from shieldbench.datasets import Dataset
from shieldbench.defenses import (
    Embedder,
    EmbeddingHead,
    HeadMetrics,
    ModelCard,
    TrainingSource,
    minilm_embedder,
)
from shieldbench.errors import ConfigError

__all__ = ["threshold_for_fpr", "train_embedding_head"]


def threshold_for_fpr(benign_scores: npt.ArrayLike, target_fpr: float) -> float:
    """The smallest threshold whose false positive rate is at most ``target_fpr``.

    A text is blocked when ``score >= threshold``. With ``n`` benign scores, at
    most ``k = floor(target_fpr * n)`` of them may reach the threshold, so it is
    placed just above the ``(k+1)``-th highest benign score (ties all fall
    below it). With ``target_fpr = 0`` it sits just above the highest benign
    score. The result is clamped to [0, 1]; scores saturated at exactly 1.0 can
    then exceed the target, which the measured FPR in the card shows.

    >>> threshold_for_fpr([0.1, 0.2, 0.3, 0.9], 0.25) > 0.3
    True
    >>> threshold_for_fpr([0.1, 0.2, 0.3, 0.9], 0.0) > 0.9
    True
    """
    scores = np.sort(np.asarray(benign_scores, dtype=np.float64).reshape(-1))[::-1]
    if scores.size == 0:
        raise ConfigError("cannot choose a threshold without benign samples to calibrate on")
    if not 0.0 <= target_fpr <= 1.0:
        raise ConfigError(f"target FPR must be in [0, 1], got {target_fpr}")
    allowed = math.floor(target_fpr * scores.size + 1e-9)
    if allowed >= scores.size:
        return float(min(1.0, max(0.0, scores[-1])))
    return float(min(1.0, max(0.0, np.nextafter(scores[allowed], np.inf))))


def _pool(
    datasets: Sequence[Dataset],
) -> tuple[list[str], npt.NDArray[np.int8], list[TrainingSource], int]:
    first_label: dict[str, int] = {}
    conflicted: set[str] = set()
    for ds in datasets:
        for s in ds.samples:
            label = int(s.is_attack)
            previous = first_label.setdefault(s.text, label)
            if previous != label:
                conflicted.add(s.text)
    texts: list[str] = []
    labels: list[int] = []
    sources: list[TrainingSource] = []
    kept: set[str] = set()
    for ds in datasets:
        counts = [0, 0]
        for s in ds.samples:
            if s.text in conflicted or s.text in kept or not s.text.strip():
                continue
            kept.add(s.text)
            texts.append(s.text)
            labels.append(int(s.is_attack))
            counts[int(s.is_attack)] += 1
        sources.append(TrainingSource(ds.name, ds.content_hash, counts[1], counts[0]))
    return texts, np.asarray(labels, dtype=np.int8), sources, len(conflicted)


def _split(
    labels: npt.NDArray[np.int8], *, seed: int, holdout: float
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    rng = np.random.default_rng(seed)
    train, calibration, test = [], [], []
    for value, name in ((0, "benign"), (1, "attack")):
        members = np.flatnonzero(labels == value)
        n_out = round(holdout * members.size)
        if members.size < 4 or n_out < 2 or members.size - n_out < 1:
            raise ConfigError(
                f"too few {name} samples ({members.size}) to hold out {holdout:g} of them"
                " for calibration and test; add data or change --holdout"
            )
        shuffled = members[rng.permutation(members.size)]
        n_cal = (n_out + 1) // 2
        calibration.append(shuffled[:n_cal])
        test.append(shuffled[n_cal:n_out])
        train.append(shuffled[n_out:])
    return tuple(np.sort(np.concatenate(part)) for part in (train, calibration, test))  # type: ignore[return-value]


def _metrics(
    split: str,
    probabilities: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int8],
    threshold: float,
) -> HeadMetrics:
    from sklearn.metrics import roc_auc_score

    attack, benign = probabilities[labels == 1], probabilities[labels == 0]
    tpr = float(np.mean(attack >= threshold)) if attack.size else None
    fpr = float(np.mean(benign >= threshold)) if benign.size else None
    auc = float(roc_auc_score(labels, probabilities)) if attack.size and benign.size else None
    return HeadMetrics(split, int(attack.size), int(benign.size), tpr, fpr, auc)


def _versions() -> dict[str, str]:
    found = {}
    for dist in ("shieldbench", "scikit-learn", "numpy", "torch", "sentence-transformers"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def train_embedding_head(
    datasets: Sequence[Dataset],
    *,
    embedder: Embedder | None = None,
    seed: int = 0,
    target_fpr: float = 0.01,
    holdout: float = 0.2,
    c: float = 0.5,
    created: datetime | None = None,
    notes: str = "",
) -> EmbeddingHead:
    """Fit a logistic-regression head on the embedded ``datasets`` (see the module doc).

    ``c`` is scikit-learn's inverse regularisation strength ``C``; ``created``
    defaults to now (UTC). Raises :class:`ConfigError` when the data cannot
    support a held-out calibration (no datasets, a missing class, too few
    samples) or an option is out of range.
    """
    from sklearn.linear_model import LogisticRegression

    if not datasets:
        raise ConfigError("train: give at least one labelled dataset")
    if not 0.0 < holdout < 1.0:
        raise ConfigError(f"holdout must be strictly between 0 and 1, got {holdout}")
    if not 0.0 <= target_fpr < 1.0:
        raise ConfigError(f"target FPR must be in [0, 1), got {target_fpr}")
    if not c > 0:
        raise ConfigError(f"C must be > 0, got {c}")
    texts, labels, sources, n_conflicts = _pool(datasets)
    train, calibration, test = _split(labels, seed=seed, holdout=holdout)
    embedder = embedder if embedder is not None else minilm_embedder(cache_size=0)
    vectors = embedder.encode(texts).astype(np.float64)
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=10_000, tol=1e-8)
    model.fit(vectors[train], labels[train])
    if [int(k) for k in model.classes_] != [0, 1]:
        raise ConfigError(f"unexpected classes {model.classes_!r} after fitting")
    method = (
        f"smallest threshold with FPR <= {target_fpr:g} on the calibration half of the"
        f" held-out split ({calibration.size} samples); block when P(attack) >= threshold"
    )
    draft = ModelCard(
        embedding_model=embedder.model_name,
        dim=vectors.shape[1],
        threshold=0.5,
        threshold_method=method,
        created=(created or datetime.now(UTC)).isoformat(timespec="seconds"),
    )
    head = EmbeddingHead(model.coef_[0], float(model.intercept_[0]), draft)
    probabilities = head.predict_proba(vectors)
    threshold = threshold_for_fpr(probabilities[calibration][labels[calibration] == 0], target_fpr)
    card = ModelCard(
        embedding_model=draft.embedding_model,
        dim=draft.dim,
        threshold=threshold,
        threshold_method=method,
        created=draft.created,
        training_data=tuple(sources),
        seed=seed,
        holdout=holdout,
        target_fpr=target_fpr,
        hyperparameters={
            "C": c,
            "penalty": "l2",
            "class_weight": "balanced",
            "solver": "lbfgs",
            "n_train": int(train.size),
            "n_conflicting_labels_dropped": n_conflicts,
        },
        metrics=tuple(
            _metrics(name, probabilities[part], labels[part], threshold)
            for name, part in (("calibration", calibration), ("test", test))
        ),
        notes=notes,
        versions=_versions(),
    )
    return EmbeddingHead(head.coef, head.intercept, card)
