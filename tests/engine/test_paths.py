"""Which capability the engine uses, in which thread, in which order, how concurrently."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

from shieldbench.engine import screen
from shieldbench.engine._execute import execute
from shieldbench.engine._latency import BatchTally, called_alone
from shieldbench.types import Outcome, RunConfig, Verdict

ALLOW = Verdict(blocked=False, score=0.0)


def verdict_for(text: str) -> Verdict:
    """A verdict that depends on the text, so ordering mistakes show."""
    return Verdict(blocked=text.startswith("a"), score=len(text) / 100, label=text)


class SyncDefense:
    name = "sync"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.threads: set[int] = set()
        self.calls = 0
        self.lock = threading.Lock()

    def check(self, text: str) -> Verdict:
        with self.lock:
            self.calls += 1
            self.threads.add(threading.get_ident())
        if self.delay_s:
            time.sleep(self.delay_s)
        return verdict_for(text)


class AsyncDefense(SyncDefense):
    name = "async"

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(delay_s)
        self.acalls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def acheck(self, text: str) -> Verdict:
        self.acalls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        return verdict_for(text)


class BatchDefense(SyncDefense):
    name = "batch"

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.batch_delay_s = delay_s
        self.batches: list[int] = []

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        self.batches.append(len(texts))
        time.sleep(self.batch_delay_s)
        return [verdict_for(t) for t in texts]


TEXTS = [f"{'a' if i % 3 == 0 else 'b'}-text-{i}" for i in range(50)]


def assert_in_order(
    outcomes: list, texts: list[str], ids: list[str] | None = None, *, timed: bool = True
) -> None:
    """Outcomes in order, ok; ``timed``: each with a latency (not a text in a batch)."""
    assert len(outcomes) == len(texts)
    for i, (outcome, text) in enumerate(zip(outcomes, texts, strict=True)):
        assert outcome.sample_id == (str(i) if ids is None else ids[i])
        assert outcome.status == "ok"
        assert outcome.verdict == verdict_for(text)
        assert outcome.attempts == 1
        if timed:
            assert outcome.latency_ms is not None
            assert outcome.latency_ms >= 0


def test_concurrency_one_without_timeout_runs_inline_in_the_callers_thread() -> None:
    defense = SyncDefense()
    out = screen(defense, TEXTS, config=RunConfig(concurrency=1, timeout_s=None, warmup=0))
    assert_in_order(out, TEXTS)
    assert defense.threads == {threading.get_ident()}


def test_concurrency_one_with_timeout_uses_one_worker_thread() -> None:
    defense = SyncDefense()
    out = screen(defense, TEXTS, config=RunConfig(concurrency=1, timeout_s=5, warmup=0))
    assert_in_order(out, TEXTS)
    assert len(defense.threads) == 1
    assert threading.get_ident() not in defense.threads


def test_threads_keep_dataset_order_and_really_run_concurrently() -> None:
    defense = SyncDefense(delay_s=0.02)
    texts = TEXTS[:40]
    t0 = time.perf_counter()
    out = screen(defense, texts, config=RunConfig(concurrency=8, warmup=0))
    elapsed = time.perf_counter() - t0
    assert_in_order(out, texts)
    assert len(defense.threads) > 1
    assert elapsed < 40 * 0.02 / 2  # serial would take 0.8 s; 8 threads ideally 0.1 s


def test_async_defense_uses_acheck_with_bounded_concurrency() -> None:
    defense = AsyncDefense(delay_s=0.05)
    texts = TEXTS[:40]
    t0 = time.perf_counter()
    out = screen(defense, texts, config=RunConfig(concurrency=10, warmup=0))
    elapsed = time.perf_counter() - t0
    assert_in_order(out, texts)
    assert defense.calls == 0
    assert defense.acalls == 40
    assert defense.max_in_flight == 10
    assert elapsed < 40 * 0.05 / 3  # serial 2 s; ideal 0.2 s


def test_async_concurrency_one_is_serial() -> None:
    defense = AsyncDefense(delay_s=0.001)
    screen(defense, TEXTS[:10], config=RunConfig(concurrency=1, warmup=0))
    assert defense.max_in_flight == 1


def test_async_defense_called_from_inside_a_running_event_loop() -> None:
    defense = AsyncDefense(delay_s=0.001)

    async def caller() -> list:
        return screen(defense, TEXTS[:20], config=RunConfig(concurrency=4, warmup=0))

    out = asyncio.run(caller())
    assert_in_order(out, TEXTS[:20])
    assert defense.acalls == 20


def test_batch_defense_uses_check_batch_in_batches_of_batch_size() -> None:
    defense = BatchDefense()
    out = screen(defense, TEXTS, config=RunConfig(batch_size=16, warmup=0, latency_sample=0))
    assert_in_order(out, TEXTS, timed=False)
    assert defense.batches == [16, 16, 16, 2]
    assert defense.calls == 0


def test_texts_in_a_batch_get_no_latency_only_the_run_s_amortised_cost() -> None:
    """Defect 1 of issue 30: a batch's wall time divided by its size is not a latency."""
    defense = BatchDefense(delay_s=0.08)
    tally = BatchTally()
    results: list[Outcome | None] = [None] * 8
    execute(
        defense, TEXTS[:8], [str(i) for i in range(8)], range(8), results=results, tally=tally,
        config=RunConfig(batch_size=4, warmup=0, latency_sample=0),
    )  # fmt: skip
    assert [o.latency_ms for o in results if o is not None] == [None] * 8
    assert tally.texts == 8
    assert 2 * 0.08 <= tally.seconds < 1.0


class SlowCheckBatch(BatchDefense):
    def check(self, text: str) -> Verdict:
        time.sleep(self.batch_delay_s)
        return super().check(text)


def test_a_batch_defense_times_a_seeded_sample_one_text_per_check_call() -> None:
    defense = SlowCheckBatch(delay_s=0.02)
    ids = [f"s{i}" for i in range(50)]
    config = RunConfig(batch_size=8, warmup=0, latency_sample=10)
    out = screen(defense, TEXTS, ids=ids, config=config)
    timed = [o.sample_id for o in out if o.latency_ms is not None]
    assert timed == [ids[i] for i in called_alone(ids, range(50), 10 / 50)]
    assert defense.calls == len(timed) > 0  # each of them one check(text) call
    assert sum(defense.batches) == 50 - len(timed)
    assert all(o.latency_ms is not None and o.latency_ms >= 20 for o in out if o.sample_id in timed)


def test_batch_beats_acheck_beats_check() -> None:
    class Both(BatchDefense):
        async def acheck(self, text: str) -> Verdict:
            raise AssertionError("check_batch must win over acheck")

    defense = Both()
    screen(defense, TEXTS[:5], config=RunConfig(warmup=0, latency_sample=0))
    assert defense.batches == [5]


def test_custom_ids_and_empty_input() -> None:
    ids = [f"id-{i}" for i in range(len(TEXTS))]
    out = screen(SyncDefense(), TEXTS, ids=ids, config=RunConfig(warmup=0))
    assert_in_order(out, TEXTS, ids)
    assert screen(SyncDefense(), [], config=RunConfig()) == []
    assert screen(AsyncDefense(), []) == []
    assert screen(BatchDefense(), []) == []


@pytest.mark.parametrize(
    "config",
    [
        RunConfig(concurrency=1, timeout_s=None),
        RunConfig(concurrency=1),
        RunConfig(concurrency=8),
    ],
    ids=["inline", "one-worker", "threads"],
)
def test_every_sync_path_gives_every_outcome(config: RunConfig) -> None:
    texts = [f"t{i}" for i in range(500)]
    out = screen(SyncDefense(), texts, config=config)
    assert_in_order(out, texts)
