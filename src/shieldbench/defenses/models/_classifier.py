"""The defense behind ``hf:`` and ``onnx:``: tokens, windows, batches, labels, verdicts.

:class:`SequenceClassifier` turns any sequence-classification backend, a function
from padded ``(input_ids, attention_mask)`` arrays to ``(n, labels)`` logits, into a
defense. The two adapters differ only in that function (PyTorch through
``transformers``, or an ONNX Runtime session) and in how they find their files.

How a batch of texts is scored:

1. each text is tokenized once, without special tokens or truncation
   (:class:`TokenFrame`, over a Hugging Face ``tokenizers`` tokenizer);
2. its tokens are cut into windows of ``max_length`` minus the special tokens,
   overlapping (:mod:`._windows`; the stride is recorded), or only the first window
   is kept (``window=truncate``; the verdict says whether anything was cut);
3. the windows of all texts are sorted by length and run ``batch_size`` at a
   time, each sub-batch padded only to its own longest window;
4. each window's score is the probability of the attack labels (:class:`Labels`),
   and a text's score the highest over its windows.

Nothing is cached: every call runs the model, so a repeated text costs what a new
one does (what a latency figure must measure). A text's score does not depend on
its batch companions beyond float rounding of padded inputs (well below 1e-4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shieldbench.defenses.models._model_files import (
    ClassifierOptions,
    Labels,
    id2label,
    model_limit,
    resolve_labels,
)
from shieldbench.defenses.models._windows import default_stride, windows
from shieldbench.errors import ConfigError
from shieldbench.types import Verdict

__all__ = [
    "Backend",
    "SequenceClassifier",
    "TokenFrame",
    "Windowing",
    "build_classifier",
    "make_windowing",
    "version_string",
]

IntArray = npt.NDArray[np.int64]
Backend = Callable[[IntArray, IntArray], npt.NDArray[Any]]
"""``(input_ids, attention_mask) -> logits``: int64 arrays ``(n, width)`` to ``(n, labels)``."""


class TokenFrame:
    """Content token ids of texts, and the special tokens a model input wraps them in.

    ``tokenizer`` is a ``tokenizers.Tokenizer`` (the fast tokenizer behind every
    ``tokenizer.json``). It is copied, with truncation and padding turned off on the
    copy, so encoding never changes shared state and threads may encode at once.
    The special tokens are read from the tokenizer's own template (``[CLS] x [SEP]``,
    ``<s> x </s>``, ...) by encoding one word with and without them.
    """

    def __init__(self, tokenizer: Any, *, pad_id: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        probe = self.tokenizer.encode("a", add_special_tokens=True)
        content = [i for i, special in enumerate(probe.special_tokens_mask) if not special]
        first, last = (content[0], content[-1]) if content else (len(probe.ids), len(probe.ids))
        self.prefix: tuple[int, ...] = tuple(probe.ids[:first])
        self.suffix: tuple[int, ...] = tuple(probe.ids[last + 1 :])
        self.pad_id = self._pad_id(tokenizer) if pad_id is None else pad_id

    @staticmethod
    def _pad_id(tokenizer: Any) -> int:
        padding = tokenizer.padding
        if padding and isinstance(padding.get("pad_id"), int):
            return int(padding["pad_id"])
        for token in ("[PAD]", "<pad>", "<|pad|>"):
            found = tokenizer.token_to_id(token)
            if found is not None:
                return int(found)
        return 0  # padded positions are masked out: any valid id does

    @property
    def specials(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids of each text (no special tokens, nothing cut)."""
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [list(e.ids) for e in encoded]


@dataclass(frozen=True, slots=True)
class Windowing:
    """How long texts are handled: windows of ``content`` tokens every ``stride``, or cut.

    ``max_length`` counts the special tokens too; ``stride`` ``None`` truncates
    (keeps the first ``content`` tokens).
    """

    max_length: int
    content: int
    stride: int | None

    def __post_init__(self) -> None:
        if self.content < 1:
            raise ConfigError(
                f"max_length {self.max_length} leaves no room for text after the special tokens"
            )
        if self.stride is not None and not 0 < self.stride <= self.content:
            raise ConfigError(
                f"window stride {self.stride} must be between 1 and the window's"
                f" {self.content} content tokens (max_length {self.max_length} less special"
                " tokens); or window=truncate"
            )

    def spans(self, ids: Sequence[int]) -> tuple[list[list[int]], bool]:
        """The windows of one text's ids, and whether any token was dropped."""
        if self.stride is None:
            return [list(ids[: self.content])], len(ids) > self.content
        return windows(ids, window=self.content, stride=self.stride), False

    def describe(self) -> str:
        """``stride:190`` or ``truncate`` (for the version and ``defenses inspect``)."""
        return "truncate" if self.stride is None else f"stride:{self.stride}"


@dataclass(frozen=True, slots=True)
class _Scored:
    score: float
    probs: tuple[float, ...]
    windows: int
    truncated: bool


class SequenceClassifier:
    """Blocks a text when the probability of the attack labels reaches ``threshold``.

    The verdict's ``score`` is that probability (the highest over the text's
    windows); its ``label`` is the most likely attack label when blocked, else the
    most likely other label (``SAFE`` for a model whose every label is an attack);
    ``details`` carry the window count, whether the text was truncated, and the
    label probabilities of the deciding window. ``facts`` are what the adapter
    knows of the model (path, device, ...; a callable is evaluated only by
    :meth:`describe`); ``distribution`` the package that runs it (``transformers``,
    ``onnxruntime``), whose version the run's environment then records.
    """

    def __init__(
        self,
        *,
        name: str,
        version: str,
        backend: Backend,
        tokens: TokenFrame,
        labels: Labels,
        windowing: Windowing,
        threshold: float,
        batch_size: int,
        facts: Mapping[str, Any],
        distribution: str | None = None,
    ) -> None:
        self.name = name
        if distribution is not None:
            self.distribution = distribution  # the run's environment names its version
        self.version = version
        self.backend = backend
        self.tokens = tokens
        self.labels = labels
        self.windowing = windowing
        self.threshold = threshold
        self.batch_size = batch_size
        self.facts = dict(facts)

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        return [self._verdict(s) for s in self.score(texts)]

    def score(self, texts: Sequence[str]) -> list[_Scored]:
        """Each text's score, label probabilities, window count and truncation."""
        spans: list[list[int]] = []
        owner: list[int] = []
        truncated = [False] * len(texts)
        counts = [0] * len(texts)
        for index, ids in enumerate(self.tokens.encode(texts)):
            parts, cut = self.windowing.spans(ids)
            truncated[index] = cut
            counts[index] = len(parts)
            spans.extend(parts)
            owner.extend([index] * len(parts))
        probs = self._probabilities(spans)
        scores = self._attack_scores(probs)
        best = [-1] * len(texts)
        for row, index in enumerate(owner):
            if best[index] < 0 or scores[row] > scores[best[index]]:
                best[index] = row
        return [
            _Scored(
                score=min(1.0, max(0.0, float(scores[row]))),
                probs=tuple(float(p) for p in probs[row]),
                windows=counts[index],
                truncated=truncated[index],
            )
            for index, row in enumerate(best)
        ]

    def _probabilities(self, spans: Sequence[Sequence[int]]) -> npt.NDArray[np.float64]:
        """Label probabilities of each window, run in length-sorted sub-batches."""
        out = np.zeros((len(spans), len(self.labels.names)), dtype=np.float64)
        order = sorted(range(len(spans)), key=lambda i: len(spans[i]))
        prefix, suffix = list(self.tokens.prefix), list(self.tokens.suffix)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(spans[i]) for i in chunk) + self.tokens.specials
            ids = np.full((len(chunk), width), self.tokens.pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                seq = [*prefix, *spans[i], *suffix]
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            logits = np.asarray(self.backend(ids, mask), dtype=np.float64)
            if logits.shape != (len(chunk), len(self.labels.names)):
                raise ConfigError(
                    f"{self.name}: the model returned logits of shape {logits.shape}, expected"
                    f" ({len(chunk)}, {len(self.labels.names)}) for labels"
                    f" {', '.join(self.labels.names)}"
                )
            out[chunk] = _activate(logits, multi=self.labels.multi_label)
        return out

    def _attack_scores(self, probs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        positive = probs[:, list(self.labels.positive)]
        if self.labels.multi_label or len(self.labels.names) == 1:
            return np.asarray(positive.max(axis=1), dtype=np.float64)
        return np.asarray(positive.sum(axis=1), dtype=np.float64)

    def _verdict(self, scored: _Scored) -> Verdict:
        blocked = scored.score >= self.threshold
        names = self.labels.names
        pool = [i for i in range(len(names)) if (i in self.labels.positive) == blocked]
        label = names[max(pool, key=lambda i: scored.probs[i])] if pool else "SAFE"
        details: dict[str, Any] = {
            "windows": scored.windows,
            "probabilities": {n: round(p, 6) for n, p in zip(names, scored.probs, strict=True)},
        }
        if self.windowing.stride is None:
            details["truncated"] = scored.truncated
        return Verdict(
            blocked=blocked,
            score=scored.score,
            label=label,
            reasons=(label,) if blocked else (),
            details=details,
        )

    def describe(self) -> dict[str, Any]:
        """What this spec resolved to (``shieldbench defenses inspect`` prints it)."""
        names = self.labels.names
        return {
            "name": self.name,
            **{key: value() if callable(value) else value for key, value in self.facts.items()},
            "labels": {
                str(i): n + (" (attack)" if i in self.labels.positive else "")
                for i, n in enumerate(names)
            },
            "score": self.labels.describe_score()
            + ("" if self.windowing.stride is None else ", the highest over the text's windows"),
            "threshold": self.threshold,
            "max_length": self.windowing.max_length,
            "long_texts": (
                f"truncated to the first {self.windowing.content} tokens"
                if self.windowing.stride is None
                else f"windows of {self.windowing.content} tokens every"
                f" {self.windowing.stride} tokens, max over windows"
            ),
            "batch_size": self.batch_size,
            "version": self.version,
        }


def _activate(logits: npt.NDArray[np.float64], *, multi: bool) -> npt.NDArray[np.float64]:
    """Softmax over labels, or an independent sigmoid per label (multi-label, one logit)."""
    if multi or logits.shape[1] == 1:
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(logits, -700, 700))), dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return np.asarray(exp / exp.sum(axis=1, keepdims=True), dtype=np.float64)


def version_string(
    kind: str,
    *,
    digest: str,
    labels: Labels,
    threshold: float,
    windowing: Windowing,
    extra: Sequence[str] = (),
) -> str:
    """The identity a run records: weights hash, label map, threshold, windowing, extras."""
    parts = [
        f"{kind} sha256:{digest[:16]}",
        f"labels={labels.label_map()}",
        f"attack={'|'.join(labels.positive_names)}",
        f"threshold={threshold:g}",
        f"max_length={windowing.max_length}",
        f"window={windowing.describe()}",
        *extra,
    ]
    return " ".join(parts)


def make_windowing(
    options: ClassifierOptions, *, limit: int | None, specials: int, where: str
) -> Windowing:
    """The windowing a spec asks for, within the model's input ``limit``.

    ``max_length`` defaults to 512 or the model's limit when smaller; one above the
    limit is an error (the model has no positions for it).
    """
    if options.max_length is not None and limit is not None and options.max_length > limit:
        raise ConfigError(
            f"{where}: max_length={options.max_length} is more than the model takes ({limit})"
        )
    max_length = options.max_length or min(512, limit or 512)
    content = max_length - specials
    if options.window == 0:
        stride: int | None = None
    elif options.window is None:
        stride = default_stride(max(1, content))
    else:
        stride = options.window
    try:
        return Windowing(max_length, content, stride)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def build_classifier(
    kind: str,
    *,
    where: str,
    name: str,
    config: Mapping[str, Any],
    tokenizer_config: Mapping[str, Any],
    tokens: TokenFrame,
    options: ClassifierOptions,
    backend: Backend,
    digest: str,
    facts: Mapping[str, Any],
    extra: Sequence[str] = (),
    distribution: str | None = None,
) -> SequenceClassifier:
    """The defense over a loaded model: labels, windowing and version from its files.

    ``config`` and ``tokenizer_config`` are the model's ``config.json`` and
    ``tokenizer_config.json`` (as dictionaries); ``extra`` adds facts to the version
    (``dtype=float16``, ``trust_remote_code=true``).
    """
    multi = config.get("problem_type") == "multi_label_classification"
    labels = resolve_labels(
        id2label(config, where=where), options.label, where=where, multi_label=multi
    )
    windowing = make_windowing(
        options, limit=model_limit(config, tokenizer_config), specials=tokens.specials, where=where
    )
    version = version_string(
        kind,
        digest=digest,
        labels=labels,
        threshold=options.threshold,
        windowing=windowing,
        extra=extra,
    )
    return SequenceClassifier(
        name=name,
        version=version,
        backend=backend,
        tokens=tokens,
        labels=labels,
        windowing=windowing,
        threshold=options.threshold,
        batch_size=options.batch_size,
        facts={**facts, "weights_sha256": digest},
        distribution=distribution,
    )
