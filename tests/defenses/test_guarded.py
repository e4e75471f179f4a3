"""The guarded-call mechanism's guarantees, attacked (shieldbench.defenses._guarded).

Each guarantee its docstring states gets a property test: a time limit holds, the fail
policy blocks or allows and records the error, concurrent identical keys run once,
retries stop at the limit; and the three users (the ``fail_closed`` / ``dedup``
wrappers, the service's screen, the engine) get the same guarantees through it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.defenses import (
    AsyncSingleFlight,
    Dedup,
    FailSafe,
    SingleFlight,
    TtlCache,
    call_with_timeout,
    fail_verdict,
    retry_call,
)
from shieldbench.errors import DefenseError, TransientDefenseError
from shieldbench.service._screen import Screen
from shieldbench.types import Verdict

SLACK_S = 0.5  # scheduling slack on a loaded machine; the limits below are far smaller
THREADED = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALLOW = Verdict(blocked=False, score=0.0)


# --- a time limit holds ------------------------------------------------------------


@THREADED
@given(
    timeout_s=st.floats(0.01, 0.1),
    takes_s=st.floats(0.0, 0.3),
)
def test_a_timeout_never_answers_later_than_its_limit_plus_slack(
    timeout_s: float, takes_s: float
) -> None:
    release = threading.Event()

    def slow(text: str) -> str:
        release.wait(takes_s)
        return text

    t0 = time.perf_counter()
    answer: object
    try:
        answer = call_with_timeout(slow, "x", timeout_s)
    except TimeoutError as exc:
        answer = exc
    finally:
        took = time.perf_counter() - t0
        release.set()
    assert took <= timeout_s + SLACK_S
    assert answer == "x" or f"within {timeout_s:g} s" in str(answer)


def test_a_timeout_passes_on_what_the_call_raised() -> None:
    def broken(text: str) -> str:
        raise KeyError(text)

    with pytest.raises(KeyError, match="x"):
        call_with_timeout(broken, "x", 1.0)


@THREADED
@given(timeout_s=st.floats(0.01, 0.08), mode=st.sampled_from(["closed", "open"]))
def test_fail_safe_answers_a_hung_defense_within_its_limit(timeout_s: float, mode: str) -> None:
    release = threading.Event()

    class Hung:
        name = "hung"

        def check(self, text: str) -> Verdict:
            release.wait(10)
            return ALLOW

    guard = FailSafe(Hung(), mode=mode, timeout_s=timeout_s)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    try:
        verdict = guard.check("x")
    finally:
        took = time.perf_counter() - t0
        release.set()
    assert took <= timeout_s + SLACK_S
    assert verdict.blocked is (mode == "closed")
    assert verdict.reasons == (f"fail_{mode}:timeout",)


# --- fail-closed blocks, fail-open allows, the error recorded ----------------------

_ERRORS = st.sampled_from([RuntimeError, ValueError, TimeoutError, DefenseError, OSError])


@given(mode=st.sampled_from(["closed", "open"]), kind=_ERRORS, message=st.text(max_size=40))
def test_fail_verdict_blocks_when_closed_allows_when_open_and_records_the_error(
    mode: str, kind: type[Exception], message: str
) -> None:
    exc = kind(message)
    verdict = fail_verdict(mode, exc)  # type: ignore[arg-type]
    assert verdict.blocked is (mode == "closed")
    assert (verdict.label, verdict.score) == ("ERROR", None)
    what = "timeout" if isinstance(exc, TimeoutError) else "error"
    assert verdict.reasons == (f"fail_{mode}:{what}",)
    assert verdict.details == {"fail_mode": mode, "error": f"{kind.__name__}: {exc}"}


@given(mode=st.sampled_from(["closed", "open"]), message=st.text(min_size=1, max_size=40))
def test_fail_safe_turns_any_error_into_the_policys_verdict(mode: str, message: str) -> None:
    class Broken:
        name = "broken"

        def check(self, text: str) -> Verdict:
            raise RuntimeError(message)

    verdict = FailSafe(Broken(), mode=mode).check("x")  # type: ignore[arg-type]
    assert verdict.blocked is (mode == "closed")
    assert verdict.details["error"] == f"RuntimeError: {message}"


# --- concurrent identical texts run once ------------------------------------------


def _wait_for(condition: object, limit_s: float = 5.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.002)


@THREADED
@given(texts=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=24))
def test_single_flight_runs_concurrent_identical_keys_once(texts: list[str]) -> None:
    flight: SingleFlight[str] = SingleFlight()
    lock = threading.Lock()
    arrived: list[str] = []
    calls: list[str] = []
    answers: list[tuple[str, str, bool]] = []

    def call(text: str) -> None:
        def fn() -> str:
            calls.append(text)
            # still in flight until every caller arrived (and a little longer)
            _wait_for(lambda: len(arrived) == len(texts))
            time.sleep(0.05)
            return text.upper()

        with lock:
            arrived.append(text)
        value, shared = flight.run(text, fn)
        with lock:
            answers.append((text, value, shared))

    threads = [threading.Thread(target=call, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert sorted(calls) == sorted(set(texts))
    assert sorted(a[:2] for a in answers) == sorted((t, t.upper()) for t in texts)
    assert sum(not shared for _, _, shared in answers) == len(set(texts))


def test_single_flight_shares_the_error_and_forgets_the_key() -> None:
    flight: SingleFlight[str] = SingleFlight()
    started, release, waiting = threading.Event(), threading.Event(), threading.Event()
    raised: dict[str, BaseException] = {}

    def fn() -> str:
        started.set()
        release.wait(5)
        raise RuntimeError("down")

    def run(who: str, call: object) -> None:
        try:
            flight.run("k", call)  # type: ignore[arg-type]
        except RuntimeError as exc:
            raised[who] = exc

    leader = threading.Thread(target=run, args=("leader", fn))
    leader.start()
    started.wait(5)

    def waiter() -> None:
        waiting.set()
        run("waiter", lambda: "never called")

    follower = threading.Thread(target=waiter)
    follower.start()
    waiting.wait(5)
    time.sleep(0.1)
    release.set()
    leader.join(5)
    follower.join(5)
    assert {who: str(e) for who, e in raised.items()} == {"leader": "down", "waiter": "down"}
    assert "k" not in flight
    assert flight.run("k", lambda: "again") == ("again", False)


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=30))
def test_async_single_flight_runs_concurrent_identical_keys_once(texts: list[str]) -> None:
    calls: list[str] = []

    async def main() -> list[tuple[str, bool]]:
        flight: AsyncSingleFlight[str] = AsyncSingleFlight()

        async def fresh(text: str) -> str:
            calls.append(text)
            await asyncio.sleep(0.01)
            return text.upper()

        async def one(text: str) -> tuple[str, bool]:
            return await flight.run(text, lambda: fresh(text))

        return await asyncio.gather(*(one(t) for t in texts))

    answers = asyncio.run(main())
    assert sorted(calls) == sorted(set(texts))
    assert [value for value, _ in answers] == [t.upper() for t in texts]
    assert sum(not shared for _, shared in answers) == len(set(texts))


@THREADED
@given(texts=st.lists(st.sampled_from(["0.1", "0.2", "0.3"]), min_size=2, max_size=16))
def test_dedup_screens_concurrent_identical_texts_once(texts: list[str]) -> None:
    lock = threading.Lock()
    arrived: list[str] = []
    seen: list[str] = []

    class Slow:
        name = "slow"

        def check(self, text: str) -> Verdict:
            seen.append(text)
            _wait_for(lambda: len(arrived) == len(texts))
            time.sleep(0.05)
            return Verdict(blocked=False, score=float(text))

    d = Dedup(Slow())

    def arrive(text: str) -> Verdict:
        with lock:
            arrived.append(text)
        return d.check(text)

    with ThreadPoolExecutor(len(texts)) as pool:
        verdicts = list(pool.map(arrive, texts))
    assert sorted(seen) == sorted(set(texts))
    assert [v.score for v in verdicts] == [float(t) for t in texts]
    assert d.misses == len(set(texts))
    assert d.hits == len(texts) - len(set(texts))


def test_the_service_screen_runs_concurrent_identical_texts_once() -> None:
    calls: list[str] = []

    class Slow:
        name = "slow"

        async def acheck(self, text: str) -> Verdict:
            calls.append(text)
            await asyncio.sleep(0.05)
            return ALLOW

        def check(self, text: str) -> Verdict:
            raise AssertionError("the async path is taken")

    async def main() -> list[str]:
        with ThreadPoolExecutor(1) as pool:
            screen = Screen(Slow(), timeout_s=5, window_s=60, executor=pool)
            results = await asyncio.gather(*(screen.screen(t) for t in ["a", "a", "b", "a"]))
            again = await screen.screen("a")
        return [r.dedup for r in [*results, again]]

    assert asyncio.run(main()) == ["miss", "hit", "miss", "hit", "hit"]
    assert sorted(calls) == ["a", "b"]


# --- retries stop at the limit ---------------------------------------------------


@given(
    retries=st.integers(0, 6),
    failures=st.integers(1, 10),
    base_s=st.floats(0.0, 2.0),
    retry_after=st.none() | st.floats(0.0, 5.0),
)
def test_retries_stop_at_the_limit_with_doubling_backoff(
    retries: int, failures: int, base_s: float, retry_after: float | None
) -> None:
    calls: list[str] = []
    sleeps: list[float] = []

    def flaky(text: str) -> str:
        calls.append(text)
        if len(calls) < failures:  # the first attempt was the caller's
            raise TransientDefenseError("503", retry_after_s=retry_after)
        return "ok"

    first = TransientDefenseError("503", retry_after_s=retry_after)
    done = retry_call(
        flaky,
        "x",
        first_error=first,
        first_elapsed_s=0.0,
        retries=retries,
        backoff_s=base_s,
        sleep=sleeps.append,
    )
    assert len(calls) <= retries
    assert done.attempts == 1 + len(calls)
    if failures <= retries:
        assert (done.value, done.error, done.attempts) == ("ok", None, failures + 1)
    else:
        assert done.value is None
        assert isinstance(done.error, TransientDefenseError)
        assert done.attempts == retries + 1
    expected = [
        retry_after if retry_after is not None else base_s * 2**k for k in range(len(sleeps))
    ]
    assert sleeps == pytest.approx(expected)


@given(retries=st.integers(0, 5), kind=st.sampled_from([RuntimeError, DefenseError, KeyError]))
def test_only_transient_errors_are_retried(retries: int, kind: type[Exception]) -> None:
    calls: list[str] = []

    def call(text: str) -> str:
        calls.append(text)
        return "ok"

    done = retry_call(
        call, "x", first_error=kind("no"), first_elapsed_s=0.25, retries=retries, backoff_s=1.0
    )
    assert calls == []
    assert (done.attempts, done.elapsed_s) == (1, 0.25)
    assert isinstance(done.error, kind)


def test_a_stopped_watch_ends_the_retries_after_the_sleep() -> None:
    class Watch:
        def __init__(self) -> None:
            self.events: list[str] = []

        def backing_off(self) -> None:
            self.events.append("sleep")

        def attempt_started(self, attempt: int, started: float) -> None:
            self.events.append(f"attempt {attempt}")

        @property
        def stopped(self) -> bool:
            return len(self.events) >= 3

    def always(text: str) -> str:
        raise TransientDefenseError("503")

    watch = Watch()
    done = retry_call(
        always,
        "x",
        first_error=TransientDefenseError("503"),
        first_elapsed_s=0.0,
        retries=10,
        backoff_s=0.0,
        watch=watch,
        sleep=lambda s: None,
    )
    assert watch.events == ["sleep", "attempt 2", "sleep"]
    assert done.attempts == 2


# --- the verdict cache ---------------------------------------------------------------


@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["put", "get"]), st.sampled_from("abcde"), st.floats(0, 30)),
        max_size=40,
    ),
    window_s=st.floats(1.0, 60.0),
    max_entries=st.integers(1, 6),
)
def test_the_cache_answers_only_within_the_window_and_keeps_at_most_max_entries(
    steps: list[tuple[str, str, float]], window_s: float, max_entries: int
) -> None:
    now = [0.0]
    cache: TtlCache[str] = TtlCache(window_s, max_entries, clock=lambda: now[0])
    stored: dict[str, float] = {}
    for op, key, advance in steps:
        now[0] += advance
        if op == "put":
            cache.put(key, key.upper())
            stored[key] = now[0]
        else:
            got = cache.get(key)
            if got is not None:
                value, age = got
                assert value == key.upper()
                assert age == pytest.approx(now[0] - stored[key])
                assert age < window_s
            elif key in stored and now[0] - stored[key] < window_s and max_entries >= 5:
                pytest.fail("a fresh entry was lost though nothing could evict it")
        assert len(cache) <= max_entries
