"""A logistic-regression head over sentence embeddings, and its model card.

The head is ``P(attack | text) = sigmoid(w . e(text) + b)`` where ``e`` is the
L2-normalised MiniLM embedding. It is stored as two files in one folder:

- ``weights.npz``: the arrays ``coef`` (``dim`` float64) and ``intercept`` (1
  float64), read with ``allow_pickle=False``: loading a head from an untrusted
  folder can never execute code (unlike a pickled scikit-learn estimator);
- ``card.json``: the model card (:class:`ModelCard`): what it was trained on
  (each dataset spec with its content hash and label counts), when, with which
  embedding model, seed and hyper-parameters, the decision threshold and how it
  was chosen, and the metrics measured on held-out data.

Example (a hand-made 3-dimensional head):
    >>> import numpy as np, tempfile
    >>> card = ModelCard(embedding_model="toy", dim=3, threshold=0.5,
    ...                  threshold_method="fixed", created="2024-01-01")
    >>> head = EmbeddingHead(np.array([4.0, -4.0, 0.0]), 0.0, card)
    >>> head.predict_proba(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])).round(3)
    array([0.982, 0.018])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = head.save(folder)
    ...     EmbeddingHead.load(folder).card.threshold
    0.5
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shieldbench.errors import ConfigError

__all__ = [
    "CARD_FILE",
    "WEIGHTS_FILE",
    "EmbeddingHead",
    "HeadMetrics",
    "ModelCard",
    "TrainingSource",
]

CARD_FILE = "card.json"
WEIGHTS_FILE = "weights.npz"
CARD_FORMAT = 1


@dataclass(frozen=True, slots=True)
class TrainingSource:
    """One training dataset: its spec, content hash and label counts (after de-duplication)."""

    spec: str
    content_hash: str
    n_attack: int
    n_benign: int


@dataclass(frozen=True, slots=True)
class HeadMetrics:
    """Detection figures of a head at its threshold on one held-out split.

    ``tpr`` / ``fpr`` are ``None`` when the split has no attacks / no benign
    samples; ``roc_auc`` is ``None`` unless both classes are present.
    """

    split: str
    n_attack: int
    n_benign: int
    tpr: float | None
    fpr: float | None
    roc_auc: float | None


@dataclass(frozen=True, slots=True)
class ModelCard:
    """Everything needed to judge, reproduce and trust a trained head."""

    embedding_model: str
    dim: int
    threshold: float
    threshold_method: str
    created: str
    model_type: str = "logistic-regression"
    training_data: tuple[TrainingSource, ...] = ()
    seed: int | None = None
    holdout: float | None = None
    target_fpr: float | None = None
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    metrics: tuple[HeadMetrics, ...] = ()
    notes: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    format: int = CARD_FORMAT

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hyperparameters"] = dict(self.hyperparameters)
        data["versions"] = dict(self.versions)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "card") -> ModelCard:
        try:
            if int(data.get("format", 0)) != CARD_FORMAT:
                raise ConfigError(
                    f"{where}: model card format {data.get('format')!r} is not supported"
                    f" (this shieldbench reads format {CARD_FORMAT}); retrain the head"
                )
            return cls(
                embedding_model=str(data["embedding_model"]),
                dim=int(data["dim"]),
                threshold=float(data["threshold"]),
                threshold_method=str(data["threshold_method"]),
                created=str(data["created"]),
                model_type=str(data.get("model_type", "logistic-regression")),
                training_data=tuple(TrainingSource(**s) for s in data.get("training_data", ())),
                seed=data.get("seed"),
                holdout=data.get("holdout"),
                target_fpr=data.get("target_fpr"),
                hyperparameters=dict(data.get("hyperparameters") or {}),
                metrics=tuple(HeadMetrics(**m) for m in data.get("metrics", ())),
                notes=str(data.get("notes", "")),
                versions=dict(data.get("versions") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: invalid model card ({exc!r})") from None


class EmbeddingHead:
    """Logistic-regression weights over embeddings, plus their :class:`ModelCard`."""

    def __init__(self, coef: npt.ArrayLike, intercept: float, card: ModelCard) -> None:
        weights = np.asarray(coef, dtype=np.float64).reshape(-1)
        if weights.shape != (card.dim,):
            raise ConfigError(f"head has {weights.size} weights but its card says dim={card.dim}")
        if not np.all(np.isfinite(weights)) or not math.isfinite(intercept):
            raise ConfigError("head weights must be finite numbers")
        if not 0.0 <= card.threshold <= 1.0:
            raise ConfigError(f"head threshold must be in [0, 1], got {card.threshold}")
        weights.setflags(write=False)
        self.coef = weights
        self.intercept = float(intercept)
        self.card = card

    def decision_function(self, embeddings: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The logits ``w . e + b``, one per row.

        Computed row by row so a text's score never depends on the batch it came in
        (a matrix product rounds differently for different batch shapes).
        """
        x = np.asarray(embeddings, dtype=np.float64)
        x = x.reshape(1, -1) if x.ndim == 1 else x
        result = np.fromiter((float(row @ self.coef) for row in x), np.float64, len(x))
        return result + self.intercept

    def predict_proba(self, embeddings: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``P(attack)`` per row: the logistic function of the logits (overflow-safe)."""
        z = self.decision_function(embeddings)
        result: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
        return result

    def save(self, folder: str | Path) -> Path:
        """Write ``weights.npz`` and ``card.json`` into ``folder`` (created if needed)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        with (path / WEIGHTS_FILE).open("wb") as fh:
            np.savez(fh, coef=self.coef, intercept=np.array([self.intercept]))
        text = json.dumps(self.card.to_dict(), indent=2, sort_keys=True, allow_nan=False)
        (path / CARD_FILE).write_text(text + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> EmbeddingHead:
        """Read a head saved by :meth:`save`; :class:`ConfigError` saying what is wrong."""
        path = Path(folder)
        card_path, weights_path = path / CARD_FILE, path / WEIGHTS_FILE
        for needed in (card_path, weights_path):
            if not needed.is_file():
                raise ConfigError(
                    f"{needed}: not found; an embedding-lr model is a folder with {CARD_FILE}"
                    f" and {WEIGHTS_FILE}, as written by"
                    " 'shieldbench train embedding-lr --out FOLDER'"
                )
        try:
            card_data = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{card_path}: cannot read the model card ({exc})") from None
        if not isinstance(card_data, dict):
            raise ConfigError(f"{card_path}: a model card is a JSON object")
        card = ModelCard.from_dict(card_data, where=str(card_path))
        try:
            with np.load(weights_path, allow_pickle=False) as arrays:
                coef = np.array(arrays["coef"], dtype=np.float64)
                intercept = np.array(arrays["intercept"], dtype=np.float64).reshape(-1)
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(
                f"{weights_path}: not a head weights file (need arrays 'coef' and"
                f" 'intercept', no pickles): {exc}"
            ) from None
        if intercept.shape != (1,):
            raise ConfigError(f"{weights_path}: 'intercept' must hold one number")
        try:
            return cls(coef, float(intercept[0]), card)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
