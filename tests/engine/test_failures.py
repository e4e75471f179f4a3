"""Timeouts, retries, errors, wrong return types and batch fallback: never a dropped outcome."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.engine import _calls, screen
from shieldbench.errors import RunError, TransientDefenseError
from shieldbench.types import RunConfig, Verdict

ALLOW = Verdict(blocked=False, score=0.1)

SYNC_CONFIGS = {
    "inline": RunConfig(warmup=0, retry_backoff_s=0.0, concurrency=1, timeout_s=None),
    "one-worker": RunConfig(warmup=0, retry_backoff_s=0.0, concurrency=1, timeout_s=5),
    "threads": RunConfig(warmup=0, retry_backoff_s=0.0, concurrency=4, timeout_s=5),
}


class Scripted:
    """Behaves as each text says: ``ok``, ``boom`` (ValueError), ``flaky-N`` (N transient
    failures, then ok), ``dict`` (returns a dict), ``none`` (returns None)."""

    name = "scripted"

    def __init__(self) -> None:
        self.failures: dict[str, int] = {}
        self.lock = threading.Lock()

    def _decide(self, text: str) -> object:
        if text.startswith("boom"):
            raise ValueError(f"cannot screen {text}")
        if text.startswith("flaky-"):
            wanted = int(text.split("-")[1])
            with self.lock:
                seen = self.failures.get(text, 0)
                self.failures[text] = seen + 1
            if seen < wanted:
                raise TransientDefenseError("503 from upstream")
        if text.startswith("dict"):
            return {"blocked": True}
        if text.startswith("none"):
            return None
        return ALLOW

    def check(self, text: str) -> Verdict:
        return self._decide(text)  # type: ignore[return-value]


class AsyncScripted(Scripted):
    name = "async-scripted"

    async def acheck(self, text: str) -> Verdict:
        await asyncio.sleep(0)
        return self._decide(text)  # type: ignore[return-value]


def expected(text: str, retries: int) -> tuple[str, str | None, int]:
    """(status, error, attempts) the engine must record for a Scripted text."""
    if text.startswith("boom"):
        return "error", f"ValueError: cannot screen {text}", 1
    if text.startswith("flaky-"):
        wanted = int(text.split("-")[1])
        if wanted > retries:
            return "error", "TransientDefenseError: 503 from upstream", retries + 1
        return "ok", None, wanted + 1
    if text.startswith("dict"):
        return "error", "TypeError: the defense returned dict, not a Verdict", 1
    if text.startswith("none"):
        return "error", "TypeError: the defense returned NoneType, not a Verdict", 1
    return "ok", None, 1


KINDS = st.sampled_from(["ok", "boom", "flaky-1", "flaky-2", "flaky-3", "dict", "none"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(KINDS, max_size=25),
    path=st.sampled_from(["inline", "one-worker", "threads", "async"]),
    retries=st.integers(0, 2),
)
def test_every_text_gets_exactly_its_outcome_on_every_path(
    kinds: list[str], path: str, retries: int
) -> None:
    texts = [f"{kind}-{i}" for i, kind in enumerate(kinds)]  # unique: flaky counts per text
    if path == "async":
        defense: Scripted = AsyncScripted()
        config = RunConfig(warmup=0, retry_backoff_s=0.0, retries=retries, concurrency=3)
    else:
        defense = Scripted()
        config = RunConfig(**{**SYNC_CONFIGS[path].to_dict(), "retries": retries})
    out = screen(defense, texts, config=config)
    assert [o.sample_id for o in out] == [str(i) for i in range(len(texts))]
    for text, outcome in zip(texts, out, strict=True):
        status, error, attempts = expected(text, retries)
        assert (outcome.status, outcome.error, outcome.attempts) == (status, error, attempts), text
        assert (outcome.verdict is not None) == (status == "ok")


@pytest.mark.parametrize("path", ["one-worker", "threads"])
def test_a_stuck_sync_call_times_out_without_hanging_the_run(path: str) -> None:
    release = threading.Event()

    class Stuck:
        name = "stuck"

        def check(self, text: str) -> Verdict:
            if text == "stuck":
                release.wait(30)  # far longer than the test may take
            return ALLOW

    config = RunConfig(**{**SYNC_CONFIGS[path].to_dict(), "timeout_s": 0.2})
    texts = ["a", "b", "stuck", "c", "d", "e"]
    try:
        t0 = time.perf_counter()
        out = screen(Stuck(), texts, config=config)
        elapsed = time.perf_counter() - t0
    finally:
        release.set()
    assert elapsed < 3.0
    assert [o.status for o in out] == ["ok", "ok", "timeout", "ok", "ok", "ok"]
    stuck = out[2]
    assert stuck.verdict is None
    assert stuck.error == (
        "check of this one text returned no verdict within the 0.2 s per-text time limit"
    )
    assert stuck.latency_ms is not None
    assert stuck.latency_ms >= 200


def test_a_slow_call_that_returns_after_its_timeout_is_still_a_timeout() -> None:
    class Slow:
        name = "slow"

        def check(self, text: str) -> Verdict:
            time.sleep(0.15)
            return ALLOW

    # The supervisor may not look in time; the worker itself must not record "ok".
    out = screen(Slow(), ["x", "y"], config=RunConfig(warmup=0, concurrency=2, timeout_s=0.05))
    assert [o.status for o in out] == ["timeout", "timeout"]


def test_an_async_call_past_its_timeout_is_cancelled_and_recorded() -> None:
    cancelled = []

    class SlowAsync:
        name = "slow-async"

        def check(self, text: str) -> Verdict:
            raise AssertionError("acheck must be used")

        async def acheck(self, text: str) -> Verdict:
            try:
                await asyncio.sleep(10 if text == "slow" else 0)
            except asyncio.CancelledError:
                cancelled.append(text)
                raise
            return ALLOW

    t0 = time.perf_counter()
    out = screen(SlowAsync(), ["a", "slow", "b"], config=RunConfig(warmup=0, timeout_s=0.1))
    assert time.perf_counter() - t0 < 2.0
    assert [o.status for o in out] == ["ok", "timeout", "ok"]
    assert out[1].error == (
        "acheck of this one text returned no verdict within the 0.1 s per-text time limit"
    )
    assert cancelled == ["slow"]


def test_a_batch_past_its_per_text_limit_is_split_and_its_texts_retried_alone() -> None:
    """Defect 2 of issue 30: a slow batch is not a failure of every text in it."""
    calls: list[str] = []

    class SlowBatch:
        name = "slow-batch"

        def check(self, text: str) -> Verdict:
            calls.append(text)
            return ALLOW

        def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
            if "slow" in texts:
                time.sleep(1.0)  # 3 texts x 0.2 s = a 0.6 s limit for this batch
            return [ALLOW] * len(texts)

    texts = ["a", "b", "slow", "c", "d", "e"]
    config = RunConfig(warmup=0, batch_size=3, timeout_s=0.2, latency_sample=0)
    out = screen(SlowBatch(), texts, config=config)
    assert [o.status for o in out] == ["ok"] * 6
    assert sorted(calls) == ["a", "b", "slow"]  # retried alone, each within its own limit


def test_a_slow_but_answering_batch_gets_n_times_the_per_text_limit() -> None:
    class Slow:
        name = "slow"

        def check(self, text: str) -> Verdict:
            raise AssertionError("the batch answered within 4 x 0.1 s: no text is retried")

        def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
            time.sleep(0.05 * len(texts))  # 0.05 s a text: over 0.1 s a batch, under 0.1 s a text
            return [ALLOW] * len(texts)

    config = RunConfig(warmup=0, batch_size=4, timeout_s=0.1, latency_sample=0)
    out = screen(Slow(), [f"t{i}" for i in range(8)], config=config)
    assert [o.status for o in out] == ["ok"] * 8


def test_a_text_that_hangs_alone_still_times_out_after_its_batch_is_split() -> None:
    release = threading.Event()

    class HangsOnOne:
        name = "hangs-on-one"

        def check(self, text: str) -> Verdict:
            if text == "stuck":
                release.wait(30)
            return ALLOW

        def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
            return [self.check(t) for t in texts]

    config = RunConfig(warmup=0, batch_size=3, timeout_s=0.1, latency_sample=0)
    try:
        out = screen(HangsOnOne(), ["a", "stuck", "b", "c"], config=config)
    finally:
        release.set()
    assert [o.status for o in out] == ["ok", "timeout", "ok", "ok"]
    assert out[1].error == (
        "check of this one text returned no verdict within the 0.1 s per-text time limit"
    )


def test_a_hung_defense_stops_the_run_with_a_clear_error() -> None:
    release = threading.Event()

    class Hung:
        name = "hung"

        def check(self, text: str) -> Verdict:
            release.wait(30)
            return ALLOW

    try:
        with pytest.raises(RunError, match="the defense appears to hang"):
            screen(Hung(), ["x"] * 200, config=RunConfig(warmup=0, concurrency=8, timeout_s=0.02))
    finally:
        release.set()


def test_backoff_doubles_from_retry_backoff_s(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(_calls.time, "sleep", sleeps.append)
    config = RunConfig(warmup=0, concurrency=1, timeout_s=None, retries=3, retry_backoff_s=0.1)
    out = screen(Scripted(), ["flaky-5"], config=config)
    assert sleeps == pytest.approx([0.1, 0.2, 0.4])
    assert (out[0].status, out[0].attempts) == ("error", 4)


def test_retry_after_s_from_the_server_is_honoured() -> None:
    class RateLimited:
        name = "rate-limited"

        def __init__(self) -> None:
            self.calls: list[float] = []

        def check(self, text: str) -> Verdict:
            self.calls.append(time.perf_counter())
            if len(self.calls) == 1:
                raise TransientDefenseError("429 slow down", retry_after_s=0.3)
            return ALLOW

    defense = RateLimited()
    out = screen(defense, ["x"], config=RunConfig(warmup=0, retry_backoff_s=0.0, concurrency=1))
    assert (out[0].status, out[0].attempts) == ("ok", 2)
    assert defense.calls[1] - defense.calls[0] >= 0.3


def test_async_retries_back_off_and_count_attempts() -> None:
    config = RunConfig(warmup=0, retries=2, retry_backoff_s=0.05)
    t0 = time.perf_counter()
    out = screen(AsyncScripted(), ["flaky-2", "flaky-3"], config=config)
    assert time.perf_counter() - t0 >= 0.05 + 0.1
    assert [(o.status, o.attempts) for o in out] == [("ok", 3), ("error", 3)]


def test_permanent_errors_are_not_retried() -> None:
    calls = []

    class Broken:
        name = "broken"

        def check(self, text: str) -> Verdict:
            calls.append(text)
            raise KeyError("model file")

    out = screen(Broken(), ["x"], config=RunConfig(warmup=0, retries=5, concurrency=1))
    assert calls == ["x"]
    assert (out[0].status, out[0].error, out[0].attempts) == ("error", "KeyError: 'model file'", 1)


class FragileBatch:
    """check_batch fails on any batch holding a 'boom' text; check fails only on it."""

    name = "fragile-batch"

    def __init__(self, *, wrong_length: bool = False) -> None:
        self.checked: list[str] = []
        self.wrong_length = wrong_length

    def check(self, text: str) -> Verdict:
        self.checked.append(text)
        if text == "boom":
            raise ValueError("bad text")
        return ALLOW

    def check_batch(self, texts: Sequence[str]) -> list[object]:
        if "boom" in texts:
            if self.wrong_length:
                return [ALLOW]
            raise RuntimeError("batch failed")
        return [ALLOW if t != "dict" else {"x": 1} for t in texts]


@pytest.mark.parametrize("wrong_length", [False, True], ids=["raises", "wrong-length"])
def test_a_failed_batch_falls_back_to_check_for_that_batch_only(wrong_length: bool) -> None:
    defense = FragileBatch(wrong_length=wrong_length)
    texts = ["a", "b", "c", "d", "boom", "e", "f", "g", "h"]
    config = RunConfig(warmup=0, batch_size=4, concurrency=1, latency_sample=0)
    out = screen(defense, texts, config=config)
    assert sorted(defense.checked) == ["boom", "e", "f", "g"]
    assert [o.status for o in out] == ["ok"] * 4 + ["error"] + ["ok"] * 4
    assert out[4].error == "ValueError: bad text"
    assert [o.sample_id for o in out] == [str(i) for i in range(len(texts))]


def test_a_non_verdict_inside_a_batch_fails_only_that_text() -> None:
    out = screen(FragileBatch(), ["a", "dict", "b"], config=RunConfig(warmup=0, latency_sample=0))
    assert [o.status for o in out] == ["ok", "error", "ok"]
    assert out[1].error == "TypeError: the defense returned dict, not a Verdict"


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_defense_calling_sys_exit_is_an_error_outcome_not_the_end_of_the_run(
    concurrency: int,
) -> None:
    class Exits:
        name = "exits"

        def check(self, text: str) -> Verdict:
            if text == "x":
                raise SystemExit(3)
            return Verdict(blocked=False)

    out = screen(Exits(), ["x", "y"], config=RunConfig(warmup=0, concurrency=concurrency))
    assert [o.status for o in out] == ["error", "ok"]
    assert out[0].error == "DefenseError: the defense raised SystemExit(3)"
