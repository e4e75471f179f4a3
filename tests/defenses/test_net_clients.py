"""The clients under ``http:`` / ``llm:``: one aiohttp session per event loop, closing, parity.

Sessions must never leak: pytest runs with warnings as errors, so an unclosed
aiohttp session or connector found by the garbage collector (``gc.collect()`` at
the end of these tests) fails the test that leaked it.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from shieldbench.defenses import build_defense
from shieldbench.defenses.remote._clients import ClientPool, env_proxy
from shieldbench.defenses.remote._http import HTTPDefense
from shieldbench.engine import screen
from shieldbench.errors import TransientDefenseError
from shieldbench.types import RunConfig

OK = {"blocked": True, "score": 0.75}


@pytest.fixture
def guard(loopback: Any) -> Any:
    return loopback.serve(lambda r: loopback.Reply(body=OK))


@pytest.fixture(autouse=True)
def opened() -> Any:
    """Every defense a test builds, closed afterwards (even when it fails), then a GC pass."""
    defenses: list[Any] = []
    yield defenses
    for d in defenses:
        d.close()
    gc.collect()


@pytest.fixture
def build(opened: list[Any]) -> Any:
    def make(spec: str) -> Any:
        d = build_defense(spec)
        opened.append(d)
        return d

    return make


@pytest.fixture
def http(build: Any) -> Any:
    def make(url: str) -> HTTPDefense:
        d = build(f"http:{url}")
        assert isinstance(d, HTTPDefense)
        return d

    return make


def pool(d: HTTPDefense) -> ClientPool:
    return d._pool


def test_one_session_per_loop_reused_then_closed_when_the_loop_ends(guard: Any, http: Any) -> None:
    d = http(f"{guard.url}/c")
    seen: list[Any] = []

    async def twice() -> None:
        await d.acheck("a")
        first = pool(d)._sessions[asyncio.get_running_loop()]
        await asyncio.gather(d.acheck("b"), d.acheck("c"))
        assert pool(d)._sessions[asyncio.get_running_loop()] is first, "reused on this loop"
        assert pool(d).open_sessions() == 1
        seen.append(first)

    asyncio.run(twice())
    asyncio.run(twice())
    first, second = seen
    assert first is not second, "a new loop gets a new session"
    assert first.closed, "asyncio.run closed it at loop shutdown"
    assert second.closed
    assert pool(d).open_sessions() == 0


def test_the_engine_leaves_no_session_open(guard: Any, http: Any) -> None:
    d = http(f"{guard.url}/c")
    config = RunConfig(concurrency=8, warmup=2, timeout_s=10)
    outcomes = screen(d, [f"t{i}" for i in range(40)], config=config)
    assert [o.verdict.blocked for o in outcomes if o.verdict] == [True] * 40
    assert pool(d).open_sessions() == 0
    assert len(guard.requests) == 42  # warm-up calls included


def test_close_closes_the_session_of_an_open_idle_loop(guard: Any, http: Any) -> None:
    d = http(f"{guard.url}/c")
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(d.acheck("x")).blocked
        session = pool(d)._sessions[loop]
        d.close()
        assert session.closed
        assert pool(d).open_sessions() == 0
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def test_close_from_another_thread_closes_a_running_loops_session(guard: Any, http: Any) -> None:
    d = http(f"{guard.url}/c")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        verdict = asyncio.run_coroutine_threadsafe(d.acheck("x"), loop).result(timeout=10)
        assert verdict.blocked
        session = pool(d)._sessions[loop]
        d.close()  # waits for the session to close on its own loop
        assert session.closed
    finally:
        asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def test_close_inside_the_running_loop(guard: Any, http: Any) -> None:
    d = http(f"{guard.url}/c")

    async def main() -> Any:
        await d.acheck("x")
        session = pool(d)._sessions[asyncio.get_running_loop()]
        d.close()  # sync close() from loop code: schedules the close on this loop
        await asyncio.sleep(0.05)
        return session

    assert asyncio.run(main()).closed


def test_both_paths_send_the_same_request(
    loopback: Any, build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NET_TEST_KEY", "k-123")
    server = loopback.serve(lambda r: loopback.Reply(body=OK))
    spec = f"http({server.url}/c?t=1, field=a.b, header.X-Api-Key=env:NET_TEST_KEY)"
    d = build(spec)
    text = "é \ud800 x"  # non-ASCII and a lone surrogate
    assert d.check(text) == asyncio.run(d.acheck(text))  # type: ignore[attr-defined]
    sync, aio = server.requests
    assert sync.body == aio.body == '{"a":{"b":"é ? x"}}'.encode()
    assert (sync.path, aio.path) == ("/c?t=1", "/c?t=1")
    for request in (sync, aio):
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["content-type"] == "application/json"
        assert headers["x-api-key"] == "k-123"


def test_get_query_on_both_paths(loopback: Any, build: Any) -> None:
    server = loopback.serve(lambda r: loopback.Reply(body=OK))
    d = build(f"http({server.url}/c?tenant=a, method=GET, field=q)")
    d.check("a b&c=ü")
    asyncio.run(d.acheck("a b&c=ü"))  # type: ignore[attr-defined]
    for request in server.requests:
        assert request.method == "GET"
        assert parse_qs(urlsplit(request.path).query) == {"tenant": ["a"], "q": ["a b&c=ü"]}
        assert "content-type" not in {k.lower() for k in request.headers}


def test_async_status_errors_and_unreachable_hosts_are_transient(
    loopback: Any, http: Any, build: Any
) -> None:
    busy = loopback.Reply(status=503, body="later", headers={"Retry-After": "4"})
    server = loopback.serve(loopback.script(busy))
    d = http(f"{server.url}/c")
    with pytest.raises(TransientDefenseError, match="HTTP 503") as info:
        asyncio.run(d.acheck("x"))
    assert info.value.retry_after_s == 4.0
    refused = build("http(http://127.0.0.1:9/c, timeout=2)")
    with pytest.raises(TransientDefenseError, match="Cannot connect") as info:
        asyncio.run(refused.acheck("x"))  # type: ignore[attr-defined]
    assert info.value.retry_after_s is None


def test_redirects_are_not_followed_on_either_path(loopback: Any, http: Any) -> None:
    moved = loopback.Reply(status=307, headers={"Location": "/elsewhere"})
    server = loopback.serve(loopback.script(moved))
    d = http(f"{server.url}/c")
    with pytest.raises(Exception, match="redirect to '/elsewhere'"):
        d.check("x")
    with pytest.raises(Exception, match="redirect to '/elsewhere'"):
        asyncio.run(d.acheck("x"))
    assert [r.path for r in server.requests] == ["/c", "/c"]


def _clear_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_env_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_proxy_env(monkeypatch)
    assert env_proxy("http://guard.example/c") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.local:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert env_proxy("http://guard.example/c") == "http://proxy.local:3128"
    assert env_proxy("http://internal.example/c") is None
    assert env_proxy("https://guard.example/c") is None
    monkeypatch.setenv("ALL_PROXY", "http://all.local:8080")
    assert env_proxy("https://guard.example/c") == "http://all.local:8080"


def test_both_paths_go_through_the_environments_proxy(
    loopback: Any, http: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_proxy_env(monkeypatch)
    proxy = loopback.serve(lambda r: loopback.Reply(body=OK))  # answers like the guard would
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    d = http("http://guard.invalid/v1/check")
    assert d.check("x").blocked
    assert asyncio.run(d.acheck("x")).blocked
    assert [r.path for r in proxy.requests] == ["http://guard.invalid/v1/check"] * 2
