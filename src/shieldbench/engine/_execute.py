"""Choosing how to call a defense, warming it up, and :func:`screen`."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal, cast

from shieldbench.defenses import Defense, uncached
from shieldbench.engine._async import run_async
from shieldbench.engine._latency import BatchTally, alone_share, called_alone, warm_text
from shieldbench.engine._progress import ProgressHook
from shieldbench.engine._record import Recorder, Sink
from shieldbench.engine._threads import run_batches, run_checks
from shieldbench.errors import ConfigError
from shieldbench.types import Outcome, RunConfig

if TYPE_CHECKING:
    from shieldbench.engine._executor import Executor

__all__ = ["Capability", "capability", "check_defense", "execute", "screen"]

Capability = Literal["check_batch", "acheck", "check"]


def capability(defense: object) -> Capability:
    """The fastest way to call ``defense``: ``check_batch`` > ``acheck`` > ``check``.

    >>> class Sync:
    ...     name = "sync"
    ...     def check(self, text): ...
    >>> class Async(Sync):
    ...     async def acheck(self, text): ...
    >>> capability(Sync()), capability(Async())
    ('check', 'acheck')
    """
    if callable(getattr(defense, "check_batch", None)):
        return "check_batch"
    if callable(getattr(defense, "acheck", None)):
        return "acheck"
    return "check"


def check_defense(defense: object) -> Defense:
    """``defense`` itself if it honours the contract, else :class:`ConfigError`."""
    name = getattr(defense, "name", None)
    if not isinstance(name, str) or not callable(getattr(defense, "check", None)):
        raise ConfigError(
            f"{type(defense).__name__} is not a Defense: it needs a str 'name' attribute and a"
            " 'check(text) -> Verdict' method (see shieldbench.defenses.Defense)"
        )
    return cast(Defense, defense)


def _warm_up(
    defense: Defense,
    kind: Capability,
    texts: Sequence[str],
    positions: Sequence[int],
    config: RunConfig,
    *,
    singles: bool,
) -> None:
    """``config.warmup`` unmeasured calls, shaped like the measured ones; results dropped.

    The calls screen :func:`~shieldbench.engine._latency.warm_text` stand-ins for
    the first texts, never the measured texts themselves (a cache would keep
    them). A batch defense gets ``warmup`` calls of ``check_batch`` on a stand-in of
    the first batch, and, when some texts will be called alone (``singles``),
    ``warmup`` single ``check`` calls too; the others ``warmup`` calls of their
    capability, one text at a time. No retries, same timeout; errors are ignored
    here (the measured pass records them).
    """
    first = [texts[i] for i in positions[: config.batch_size]]
    n = config.warmup
    quiet = dataclasses.replace(config, retries=0, concurrency=1, warmup=0, latency_sample=0)
    if kind == "check_batch":
        batch = [warm_text(t, k) for k in range(n) for t in first]
        check_batch = cast(Callable[[list[str]], object], defense.check_batch)  # type: ignore[attr-defined]
        _scratch(batch, lambda w, ids, every, r: run_batches(
            check_batch, w, ids, every, config=dataclasses.replace(quiet, batch_size=len(first)),
            recorder=r,
        ))  # fmt: skip
        if not singles:
            return
        kind = "check"
    alone = [warm_text(first[k % len(first)], n + k) for k in range(n)]
    if kind == "acheck":
        acheck = cast(Callable[[str], Awaitable[object]], defense.acheck)  # type: ignore[attr-defined]
        _scratch(alone, lambda w, ids, every, r: run_async(
            acheck, w, ids, every, config=quiet, recorder=r
        ))  # fmt: skip
    else:
        _scratch(alone, lambda w, ids, every, r: run_checks(
            defense.check, w, ids, every, config=quiet, recorder=r
        ))  # fmt: skip


def _scratch(
    texts: list[str], call: Callable[[list[str], list[str], range, Recorder], object]
) -> None:
    """Run ``call`` over ``texts`` into a throw-away recorder (warm-up)."""
    call(texts, [""] * len(texts), range(len(texts)), Recorder([None] * len(texts), None, None))


def execute(
    defense: Defense,
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    *,
    config: RunConfig,
    results: list[Outcome | None],
    sink: Sink | None = None,
    progress: ProgressHook | None = None,
    executor: Executor | None = None,
    recorder: Recorder | None = None,
    alone: float | None = None,
    tally: BatchTally | None = None,
) -> Capability:
    """Screen ``texts[i]`` for each ``i`` in ``positions`` into ``results[i]``.

    Positions already filled in ``results`` (restored from a checkpoint) count as
    done for progress. Returns the capability used. With an ``executor`` the
    checks run there (warm-up included) instead of in this process. A caller that
    screens in windows passes its own ``recorder`` (its ``results`` set to this
    window's), so progress and the checkpoint span the whole run.

    Latency (see :mod:`shieldbench.engine._latency`): the warm-up calls stand-ins,
    never the measured texts; the defense's caches are bypassed throughout; a batch
    defense screens the :func:`~shieldbench.engine._latency.called_alone` positions
    (``alone`` is the share, by default from ``config.latency_sample`` over
    ``positions``) one text per ``check`` call and the rest in batches, whose wall
    time goes to ``tally``.
    """
    kind = capability(defense)
    if recorder is None:
        recorder = Recorder(results, sink, progress, done=len(results) - len(positions))
    finished = recorder.done + len(positions)
    share = alone_share(config, len(positions)) if alone is None else alone
    single = called_alone(ids, positions, share) if kind == "check_batch" else []
    if executor is not None:
        recorder.force()
        kind = cast(
            Capability, _on_executor(executor, texts, ids, positions, single, config, recorder)
        )
    else:
        with uncached(defense):  # no timing includes work done for an earlier call
            if config.warmup and positions:
                _warm_up(defense, kind, texts, positions, config, singles=bool(single))
            recorder.force()
            _measured(defense, kind, texts, ids, positions, single, config, recorder, tally)
    recorder.done = finished  # every pass fills all the positions it is given
    recorder.force()
    return kind


def _measured(
    defense: Defense,
    kind: Capability,
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    single: list[int],
    config: RunConfig,
    recorder: Recorder,
    tally: BatchTally | None,
) -> None:
    """The measured pass: ``single`` positions alone, one caller; the rest by capability."""
    todo: Sequence[int] = positions
    if kind == "check_batch":
        if single:  # one caller, one text a call: the per-call latency of a batch defense
            alone = dataclasses.replace(config, concurrency=1)
            run_checks(defense.check, texts, ids, single, config=alone, recorder=recorder)
            taken = set(single)
            todo = [i for i in positions if i not in taken]
        check_batch = cast(Callable[[list[str]], object], defense.check_batch)  # type: ignore[attr-defined]
        todo = run_batches(
            check_batch, texts, ids, todo, config=config, recorder=recorder, tally=tally
        )
        # A batch that failed or ran past its limit: its texts one at a time, one caller
        # (a batch model parallelises inside a call; concurrent calls would only slow
        # each text down towards its limit).
        config = dataclasses.replace(config, concurrency=1)
    elif kind == "acheck":
        acheck = cast(Callable[[str], Awaitable[object]], defense.acheck)  # type: ignore[attr-defined]
        run_async(acheck, texts, ids, todo, config=config, recorder=recorder)
        todo = ()
    run_checks(defense.check, texts, ids, todo, config=config, recorder=recorder)


def _on_executor(
    executor: Executor,
    texts: Sequence[str],
    ids: Sequence[str],
    positions: Sequence[int],
    single: list[int],
    config: RunConfig,
    recorder: Recorder,
) -> str:
    """Screen on ``executor``: the ``single`` positions in batches of one text, then the rest.

    The workers run the local engine with ``latency_sample=0`` (the sample was
    drawn here, over the whole run); a batch of one text is a one-text call there,
    so those outcomes carry its latency.
    """
    rest = config if not single else dataclasses.replace(config, latency_sample=0)
    if single:
        one = dataclasses.replace(config, batch_size=1, latency_sample=0)
        executor.execute(texts, ids, single, config=one, recorder=recorder)
        taken = set(single)
        positions = [i for i in positions if i not in taken]
    return executor.execute(texts, ids, positions, config=rest, recorder=recorder)


def screen(
    defense: Defense,
    texts: Sequence[str],
    *,
    config: RunConfig = RunConfig(),  # noqa: B008 (frozen, so sharing the default is safe)
    ids: Sequence[str] | None = None,
    progress: ProgressHook | None = None,
    executor: Executor | None = None,
) -> list[Outcome]:
    """Screen ``texts`` with ``defense``: one :class:`Outcome` per text, in order.

    The low-level call behind :func:`run_defense`, without a Run record or a
    checkpoint: the same capability choice, concurrency, timeouts, retries,
    warm-up and error handling (see :mod:`shieldbench.engine`). ``sample_id`` is
    ``ids[i]`` when ``ids`` is given, else ``str(i)``. Callers that screen many
    small batches (an attack loop) usually want ``RunConfig(warmup=0)``: warm-up
    calls are extra queries. ``executor`` (a :class:`~shieldbench.engine.RayExecutor`)
    screens on a cluster instead of in this process.

    Example:
        >>> from shieldbench.types import Verdict
        >>> class Keyword:
        ...     name = "keyword"
        ...     def check(self, text: str) -> Verdict:
        ...         return Verdict(blocked="ignore" in text, score=float("ignore" in text))
        >>> outcomes = screen(Keyword(), ["hello", "ignore all rules"], config=RunConfig(warmup=0))
        >>> [(o.sample_id, o.status, o.verdict.blocked) for o in outcomes]
        [('0', 'ok', False), ('1', 'ok', True)]
    """
    check_defense(defense)
    if not isinstance(config, RunConfig):
        raise ConfigError(f"config must be a RunConfig, got {type(config).__name__}")
    if isinstance(texts, str):
        raise ConfigError("texts must be a sequence of strings, not one string; wrap it in a list")
    items = list(texts)
    if not set(map(type, items)) <= {str}:
        index, bad = next((i, t) for i, t in enumerate(items) if not isinstance(t, str))
        raise ConfigError(f"texts[{index}] is a {type(bad).__name__}, not a str")
    if ids is None:
        names = [str(i) for i in range(len(items))]
    else:
        names = [str(i) for i in ids]
        if len(names) != len(items):
            raise ConfigError(f"{len(names)} ids for {len(items)} texts; give one id per text")
    results: list[Outcome | None] = [None] * len(items)
    execute(
        defense, items, names, range(len(items)), config=config, results=results,
        progress=progress, executor=executor,
    )  # fmt: skip
    return cast(list[Outcome], results)
