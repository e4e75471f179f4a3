"""One :meth:`RayExecutor.execute` call's bookkeeping: which batch is where.

The driver keeps every actor slot ``in_flight`` batches deep (:meth:`Dispatch.fill`),
takes each answer as it arrives (:meth:`Dispatch.collect`), and watches for actors
that answer nothing for longer than the batch deadline (:meth:`Dispatch.unfreeze`).
A batch whose actor died or froze is sent again (``retry``), first in line; one that
froze :data:`~shieldbench.engine._ray_parts.FREEZES` workers gets ``timeout``
outcomes instead. Replacing an actor is the executor's (``respawn``); this class only
moves batches.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from time import perf_counter
from typing import Any

from shieldbench.engine._ray_local import import_ray
from shieldbench.engine._ray_parts import FREEZES, frozen_outcome
from shieldbench.engine._record import Recorder
from shieldbench.errors import RunError
from shieldbench.types import Outcome

__all__ = ["Batch", "Dispatch", "ray_cause"]


def ray_cause(exc: BaseException) -> str:
    """The worker-side error inside a Ray exception, as one readable line."""
    text = str(exc)
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not line.startswith(("File ", "^", "Traceback", "The actor", "(")):
            return line
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


@dataclasses.dataclass(slots=True)
class Batch:
    positions: tuple[int, ...]
    sent: int = 0  # how many times it was sent (resent after its actor died)
    froze: int = 0  # how many workers froze while screening it


class Dispatch:
    """The batches of one ``execute`` call: waiting, sent (per actor slot), answered."""

    def __init__(
        self,
        actors: list[Any],
        respawn: Callable[[int, BaseException], None],
        texts: Sequence[str],
        ids: Sequence[str],
        positions: Sequence[int],
        *,
        size: int,
        in_flight: int,
        deadline: float | None,
        replace_limit: int,
        config: dict[str, Any],
        recorder: Recorder,
    ) -> None:
        self.actors = actors  # the executor's list: respawn replaces entries in place
        self.respawn = respawn
        self.texts, self.ids = texts, ids
        self.batches: Iterator[Batch] = (
            Batch(tuple(positions[k : k + size])) for k in range(0, len(positions), size)
        )
        self.retry: deque[Batch] = deque()
        self.queued: dict[Any, tuple[int, Batch]] = {}  # object ref -> (actor slot, batch)
        self.load = [0] * len(actors)
        self.busy_since = [0.0] * len(actors)  # when the slot's current batch started
        self.in_flight = in_flight
        self.deadline = deadline
        self.replace_limit = replace_limit
        self.replaced = 0
        self.config = config
        self.recorder = recorder

    def send(self, slot: int, batch: Batch) -> None:
        if self.load[slot] == 0:
            self.busy_since[slot] = perf_counter()
        batch.sent += 1
        ref = self.actors[slot].screen.remote(
            [self.ids[i] for i in batch.positions],
            [self.texts[i] for i in batch.positions],
            self.config,
        )
        self.queued[ref] = (slot, batch)
        self.load[slot] += 1

    def fill(self) -> None:
        """Keep every slot ``in_flight`` batches deep (batches to retry first)."""
        for slot in range(len(self.actors)):
            while self.load[slot] < self.in_flight:
                batch = self.retry.popleft() if self.retry else next(self.batches, None)
                if batch is None:
                    break
                self.send(slot, batch)

    def collect(self, ref: Any) -> None:
        """Record the answer of ``ref``, or requeue its batch when its actor died."""
        ray = import_ray()
        if ref not in self.queued:  # requeued when its actor was found dead
            return
        slot, batch = self.queued.pop(ref)
        self.load[slot] -= 1
        self.busy_since[slot] = perf_counter()
        try:
            outcomes: list[Outcome] = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            self.retry.append(batch)
            self.replace(slot, exc)
            if self.replaced > self.replace_limit:
                raise RunError(
                    f"{self.replaced} Ray workers died during this run (last:"
                    f" {ray_cause(exc)}); finished outcomes are in the checkpoint,"
                    " resume when the cluster is healthy"
                ) from None
            return
        except ray.exceptions.RayTaskError as exc:
            raise RunError(f"a Ray worker failed: {ray_cause(exc)}") from None
        results = self.recorder.results
        for i, outcome in zip(batch.positions, outcomes, strict=True):
            if results[i] is None:  # a resent batch may come back twice
                self.recorder.put(i, outcome)

    def unfreeze(self, now: float) -> None:
        """Replace every actor busy on one batch for longer than the deadline."""
        if self.deadline is None:
            return
        for slot in range(len(self.actors)):
            if self.load[slot] and now - self.busy_since[slot] > self.deadline:
                self.frozen(slot, self.deadline)

    def frozen(self, slot: int, deadline: float) -> None:
        """Replace a frozen actor; its batches go again, but one that froze workers
        :data:`FREEZES` times gets ``timeout`` outcomes."""
        ref, head = next((r, b) for r, (s, b) in self.queued.items() if s == slot)  # sent first
        head.froze += 1
        if head.froze >= FREEZES:
            del self.queued[ref]
            for i in head.positions:
                if self.recorder.results[i] is None:
                    self.recorder.put(i, frozen_outcome(self.ids[i], deadline, head.froze))
        self.replace(slot, RuntimeError(f"the worker answered nothing for {deadline:g} s"))

    def replace(self, slot: int, exc: BaseException) -> None:
        """Requeue the slot's other batches and give it a fresh actor."""
        for ref, (s, batch) in list(self.queued.items()):
            if s == slot:
                del self.queued[ref]
                self.retry.append(batch)
        self.load[slot] = 0
        self.respawn(slot, exc)
        self.replaced += 1

    def cancel(self) -> None:
        """Cancel every batch still queued (the run is stopping)."""
        ray = import_ray()
        for ref in self.queued:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=False)
