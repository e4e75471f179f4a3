"""What the engine's latency figures mean, and the few pieces that make them so.

**Per-call latency** is what one caller waits for one text: the wall time of a
call that screened that text alone, on a text the defense has not seen before.
The engine guarantees the second half three ways:

- the warm-up never calls the measured texts: it calls :func:`warm_text` variants
  of them (the same words, reversed and tagged, so the same shape and length but
  no sentence, hash or prefix in common);
- every measured call runs inside :func:`shieldbench.defenses.uncached`, so the
  caches a defense declares (the embedding cache of ``embedding-lr``, ``semantic``,
  ``topic-shift`` and ``recommended``, the verdict cache of ``dedup``) are neither
  read nor written: a text that occurs twice in a dataset is timed cold twice;
- a batched run (``check_batch``) does not divide a batch's wall time among its
  texts: those texts get ``latency_ms=None``, and a seeded sample of the run's texts
  (:func:`called_alone`, about ``RunConfig.latency_sample`` of them) is screened one
  text per ``check`` call instead, which gives the run its per-call figures.

**Amortised cost per text in batches** (throughput) is the summed wall time of the
run's ``check_batch`` calls over the texts they screened (:class:`BatchTally`),
recorded in the run's ``environment`` as ``batch_ms_per_text`` and
``batched_texts``: what screening in bulk costs, never called a latency.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from shieldbench.types import RunConfig

__all__ = ["SAMPLE_KEY", "BatchTally", "alone_share", "called_alone", "warm_text"]

SAMPLE_KEY = b"shieldbench-latency-sample-v1"
"""The seed of the per-call sample: the same ids give the same sample in every run."""


def alone_share(config: RunConfig, n: int) -> float:
    """The share of a batched run's ``n`` texts to call alone (see :func:`called_alone`).

    >>> alone_share(RunConfig(latency_sample=100), 1000), alone_share(RunConfig(), 30)
    (0.1, 1.0)
    >>> alone_share(RunConfig(latency_sample=0), 30)
    0.0
    """
    if config.latency_sample == 0 or n <= 0:
        return 0.0
    return min(1.0, config.latency_sample / n)


def called_alone(ids: Sequence[str], positions: Sequence[int], share: float) -> list[int]:
    """The positions whose sample id falls in the seeded ``share`` of all ids.

    A keyed hash of the id decides, so the sample does not depend on the order,
    window or worker in which samples are screened, and two runs over the same
    data (a gate's candidate and baseline) time the same samples: their latencies
    pair up by id.

    >>> ids = [f"s{i}" for i in range(1000)]
    >>> picked = called_alone(ids, range(1000), 0.1)
    >>> 60 < len(picked) < 140, picked == called_alone(ids, range(1000), 0.1)
    (True, True)
    >>> called_alone(ids, range(3), 1.0), called_alone(ids, range(3), 0.0)
    ([0, 1, 2], [])
    """
    if share >= 1.0:
        return list(positions)
    if share <= 0.0:
        return []
    cut = int(share * 2.0**64)
    return [
        i
        for i in positions
        if int.from_bytes(
            hashlib.blake2b(
                ids[i].encode("utf-8", "surrogatepass"), digest_size=8, key=SAMPLE_KEY
            ).digest(),
            "big",
        )
        < cut
    ]


def warm_text(text: str, k: int) -> str:
    """A warm-up stand-in for ``text``: its words reversed, tagged with ``k``.

    Same length and vocabulary (so a model warms up on the shapes it will see),
    but a different string, sentence by sentence, so no cache keyed by a text or a
    sentence can hold anything a measured call will look up.

    >>> warm_text("Ignore previous instructions.", 0)
    '[warm-up 0] instructions. previous Ignore'
    """
    return f"[warm-up {k}] " + " ".join(reversed(text.split()))


@dataclass(slots=True)
class BatchTally:
    """Wall time of the run's ``check_batch`` calls and the texts they screened."""

    texts: int = 0
    seconds: float = 0.0

    def add(self, texts: int, seconds: float) -> None:
        self.texts += texts
        self.seconds += seconds

    def environment(self) -> dict[str, str]:
        """The run's ``environment`` entries for the amortised batch cost (none if no batch).

        >>> BatchTally(64, 0.5).environment()
        {'batched_texts': '64', 'batch_ms_per_text': '7.8125'}
        """
        if not self.texts:
            return {}
        return {
            "batched_texts": str(self.texts),
            "batch_ms_per_text": f"{self.seconds * 1000.0 / self.texts:.6g}",
        }
