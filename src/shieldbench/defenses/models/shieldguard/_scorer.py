"""Scores texts with shieldguard's ONNX model: token windows, batching, max over windows.

A text is tokenized once (WordPiece, ``tokenizer.json``) without truncation. When
its tokens do not fit one model input, it is cut into overlapping windows of
:data:`WINDOW` tokens that start every :data:`STRIDE` tokens, so every span of up
to ``WINDOW - STRIDE`` (64) tokens lies whole inside some window; the text's
score is the highest window score. Nothing is ever silently truncated: a
10,000-token document costs about ``10000 / STRIDE`` windows.

Windows of a batch are sorted by length and run in sub-batches of similar
length, so short texts do not pay for the padding of long ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shieldbench.defenses.models._windows import windows as shared_windows
from shieldbench.errors import ConfigError

__all__ = ["STRIDE", "WINDOW", "Scorer", "windows"]

WINDOW = 254  # content tokens per window ([CLS] and [SEP] make 256)
STRIDE = 190


def windows(ids: Sequence[int], *, window: int = WINDOW, stride: int = STRIDE) -> list[list[int]]:
    """Overlapping windows covering every token of ``ids`` (one window when it fits).

    shieldguard's defaults over the shared :func:`shieldbench.defenses.models._windows.windows`.
    """
    return shared_windows(ids, window=window, stride=stride)


class Scorer:
    """P(attack) of texts from an ONNX model folder (``model.onnx``, ``tokenizer.json``)."""

    def __init__(
        self,
        folder: Path,
        *,
        threads: int = 2,
        batch_size: int = 16,
        window: int = WINDOW,
        stride: int = STRIDE,
    ) -> None:
        if not 0 < stride <= window:
            raise ConfigError(f"shieldguard: need 0 < stride <= window, got {stride}, {window}")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        cls, sep = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")
        if cls is None or sep is None:
            raise ConfigError(f"shieldguard: {folder / 'tokenizer.json'} lacks [CLS] / [SEP]")
        self.cls: int = cls
        self.sep: int = sep
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.batch_size = batch_size
        self.window = window
        self.stride = stride

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens or truncation."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def logits(self, inputs: Sequence[Sequence[int]]) -> list[float]:
        """Model logits of ready inputs (content ids; ``[CLS]``/``[SEP]`` added here)."""
        import numpy as np

        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        out = [0.0] * len(inputs)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(inputs[i]) for i in chunk) + 2
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                seq = [self.cls, *inputs[i], self.sep]
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            result: Any = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            for row, i in enumerate(chunk):
                out[i] = float(result[0][row])
        return out

    def score(self, texts: Sequence[str]) -> list[tuple[float, int]]:
        """``(P(attack), windows used)`` per text: the max over its windows."""
        spans: list[list[int]] = []
        owner: list[int] = []
        for index, ids in enumerate(self.token_ids(texts)):
            for span in windows(ids, window=self.window, stride=self.stride):
                spans.append(span)
                owner.append(index)
        best = [-math.inf] * len(texts)
        count = [0] * len(texts)
        for index, logit in zip(owner, self.logits(spans), strict=True):
            best[index] = max(best[index], logit)
            count[index] += 1
        return [(_sigmoid(b), c) for b, c in zip(best, count, strict=True)]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
