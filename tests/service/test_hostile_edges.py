"""The service's edges under a hostile client (issue 31, the "Low" items), against a
real ``shieldbench serve`` on loopback with API keys configured.

- a body nested deeper than 64 levels gets the same 400 ``json_too_deep`` on every
  route, at any depth (no 503 from the audit log's serialiser, no parser's 400);
- a batch with one bad item is refused before any of its items is audited or counted;
- every route but the probes needs the key (the OpenAPI document and its pages too);
- the key is checked before the body is read: no key, no 400/413 about the body;
- no redirect is built from the ``Host`` header (a trailing slash is a 404);
- a connection that does not finish its headers within ``header_timeout_s`` is closed.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from guardtest import Server, eventually, launch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.service import MAX_JSON_DEPTH
from shieldbench.service._gate import PUBLIC_PATHS, json_too_deep

KEY = "edge-key-0d9c"
AUTH = {"authorization": f"Bearer {KEY}"}
HEADER_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("edges")
    config = tmp / "serve.yaml"
    config.write_text(f"defense: pattern\nheader_timeout_s: {HEADER_TIMEOUT_S}\n", encoding="utf-8")
    s = launch(tmp, "--config", str(config), env={"SHIELDBENCH_API_KEYS": KEY})
    yield s
    s.stop()


def nested(depth: int, shape: str = "{") -> str:
    """A JSON value ``depth`` levels deep: objects, arrays, or a mix by ``shape``."""
    opens = [shape[i % len(shape)] for i in range(depth)]
    inner = "".join('{"k":' if o == "{" else "[" for o in opens)
    close = "".join("}" if o == "{" else "]" for o in reversed(opens))
    return inner + "1" + close


# -- depth ---------------------------------------------------------------------------


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(alphabet='[]{}"\\ab\n', max_size=8)
)


@settings(max_examples=300, deadline=None)
@given(
    value=st.recursive(
        JSON_LEAVES,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=40,
    ),
    wrap=st.integers(0, 120),
    limit=st.integers(1, 80),
)
def test_the_depth_scanner_agrees_with_a_parser(value: object, wrap: int, limit: int) -> None:
    # Brackets, quotes and backslashes inside strings must not count.
    body = json.dumps(value)
    for _ in range(wrap):
        body = '{"x": [' + body + "]}" if wrap % 2 else "[" + body + "]"
    assert json_too_deep(body.encode(), limit) == (_depth(json.loads(body)) > limit)


CHECK_PATHS = ("/v1/check", "/v1/score")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 300, 1000, 5000])
@pytest.mark.slow
def test_deep_metadata_gets_one_clean_answer_everywhere(server: Server, depth: int) -> None:
    metadata = nested(depth - 1)  # the body's own object is the first level
    body = '{"text": "hello", "metadata": ' + metadata + "}"
    bodies = {
        "/v1/check": body,
        "/v1/score": body,
        "/v1/check/batch": '{"items": [' + body + "]}",
        "/beta/litellm_basic_guardrail_api": '{"texts": ["hi"], "x": ' + metadata + "}",
        "/v1/chat/completions": '{"model": "m", "messages": [], "x": ' + metadata + "}",
    }
    with server.client(headers={**AUTH, "content-type": "application/json"}) as c:
        for path, text in bodies.items():
            # the batch wraps the body in two more levels
            extra = 2 if path == "/v1/check/batch" else 0
            answer = c.post(path, content=text.encode())
            if depth + extra > MAX_JSON_DEPTH:
                assert answer.status_code == 400, (path, answer.text)
                error = answer.json()["error"]
                assert error["type"] == "json_too_deep"
                assert str(MAX_JSON_DEPTH) in error["message"]
            elif path in CHECK_PATHS:
                assert answer.status_code == 200, (path, answer.text)
        assert c.post("/v1/check", json={"text": "still up"}).status_code == 200


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 400), shape=st.sampled_from(["{", "[", "{[", "[{{"]))
@pytest.mark.slow
def test_any_nesting_is_answered_or_refused_cleanly(server: Server, depth: int, shape: str) -> None:
    body = '{"text": "hi", "metadata": {"m": ' + nested(depth, shape) + "}}"
    total = depth + 2
    with server.client(headers={**AUTH, "content-type": "application/json"}) as c:
        for path in CHECK_PATHS:
            answer = c.post(path, content=body.encode())
            expected = 200 if total <= MAX_JSON_DEPTH else 400
            assert answer.status_code == expected, (path, total, answer.text)


# -- batches -------------------------------------------------------------------------


def _audit_rows(db: str) -> int:
    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM guard_audit")).scalar_one())
    finally:
        engine.dispose()


def _batch_count(c: httpx.Client) -> float:
    total = 0.0
    for line in c.get("/metrics").text.splitlines():
        if line.startswith("shieldbench_guard_requests_total{") and 'endpoint="batch"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.parametrize("bad_at", [0, 2, 4])
@pytest.mark.slow
def test_a_batch_with_one_bad_item_screens_audits_and_counts_nothing(
    server: Server, bad_at: int
) -> None:
    items: list[dict[str, object]] = [{"text": f"fine item {i} {bad_at}"} for i in range(5)]
    items[bad_at] = {"text": "x" * 100_001}
    with server.client(headers=AUTH) as c:
        # settle: what earlier tests wrote is in the store
        marker = c.post("/v1/check", json={"text": f"marker before {bad_at}"}).json()["id"]
        assert eventually(lambda: _has(server.db, marker))
        rows, counted = _audit_rows(server.db), _batch_count(c)
        refused = c.post("/v1/check/batch", json={"items": items})
        after = c.post("/v1/check", json={"text": f"marker after {bad_at}"}).json()["id"]
        assert eventually(lambda: _has(server.db, after))
        assert _batch_count(c) == counted
    assert refused.status_code == 413
    assert refused.json()["error"]["message"].startswith(f"items.{bad_at}:")
    assert _audit_rows(server.db) == rows + 1  # only the marker after


def _has(db: str, decision_id: str) -> bool:
    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("SELECT count(*) FROM guard_audit WHERE id = :i"), {"i": decision_id}
            ).scalar_one()
            return bool(found)
    finally:
        engine.dispose()


# -- the key first -------------------------------------------------------------------


@pytest.mark.slow
def test_every_route_but_the_probes_needs_the_key(server: Server) -> None:
    with server.client() as c:
        assert c.get("/openapi.json").status_code == 401
        doc = c.get("/openapi.json", headers=AUTH).json()
        pages = ["/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect", "/nope"]
        for page in pages:
            answer = c.get(page)
            assert answer.status_code == 401, page
            assert answer.json()["error"]["type"] == "unauthorized"
        for page in ("/docs", "/redoc"):
            assert c.get(page, headers=AUTH).status_code == 200
        for path, methods in doc["paths"].items():
            if path in PUBLIC_PATHS:
                continue
            for method in methods:
                answer = c.request(method.upper(), path, json={"text": "x"})
                assert answer.status_code == 401, (method, path)
        assert sorted(PUBLIC_PATHS) == ["/healthz", "/readyz"]
        for probe in PUBLIC_PATHS:
            assert c.get(probe).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"text": "unterminated',
        b"\xff\xfe garbage",
        b'{"text": 42}',
        nested(5000).encode(),
        b'{"text": "' + b"x" * 1_100_000 + b'"}',
    ],
    ids=["malformed", "binary", "wrong-type", "too-deep", "too-large"],
)
@pytest.mark.parametrize("path", ["/v1/check", "/v1/score", "/v1/chat/completions"])
@pytest.mark.slow
def test_the_key_is_checked_before_the_body(server: Server, body: bytes, path: str) -> None:
    with server.client(headers={"content-type": "application/json"}) as c:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"x-api-key": KEY[:-1]}):
            answer = c.post(path, content=body, headers=headers)
            assert answer.status_code == 401, (headers, answer.text)
            assert answer.json()["error"]["type"] == "unauthorized"
        with_key = c.post(path, content=body, headers=AUTH)
    assert with_key.status_code in (400, 413, 422), with_key.text  # now the body is judged


# -- no redirect from Host -------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:443", "127.0.0.1"])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/check/"),
        ("POST", "/v1/check/batch/"),
        ("GET", "/v1/stats/"),
        ("GET", "/docs/"),
    ],
)
@pytest.mark.slow
def test_a_trailing_slash_is_not_redirected_anywhere(
    server: Server, host: str, method: str, path: str
) -> None:
    with server.client(headers={**AUTH, "host": host}) as c:
        answer = c.request(method, path, json={"text": "x"}, follow_redirects=False)
    assert answer.status_code == 404, answer.text
    assert "location" not in answer.headers
    assert "evil" not in answer.text


# -- slowloris -----------------------------------------------------------------------


def _address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _drip_until_closed(socks: list[socket.socket], limit_s: float) -> dict[int, float]:
    """Send a header line to each socket every 0.2 s; when each was closed by the server."""
    started = time.monotonic()
    closed: dict[int, float] = {}
    while len(closed) < len(socks) and time.monotonic() - started < limit_s:
        for i, sock in enumerate(socks):
            if i in closed:
                continue
            readable, _, _ = select.select([sock], [], [], 0)
            try:
                if readable and sock.recv(4096) == b"":
                    closed[i] = time.monotonic() - started
                    continue
                sock.sendall(b"x-drip: 1\r\n")
            except OSError:
                closed[i] = time.monotonic() - started
        time.sleep(0.2)
    return closed


@pytest.mark.slow
def test_connections_that_never_finish_their_headers_are_closed(server: Server) -> None:
    address = _address(server)
    socks = [socket.create_connection(address, timeout=5) for _ in range(40)]
    try:
        for sock in socks[:20]:  # a request started: dripping headers
            sock.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n")
        # socks[20:] sent nothing at all
        closed = _drip_until_closed(socks, limit_s=HEADER_TIMEOUT_S + 8)
    finally:
        for sock in socks:
            sock.close()
    assert len(closed) == 40, f"{40 - len(closed)} of 40 still open"
    assert max(closed.values()) < HEADER_TIMEOUT_S + 5


@pytest.mark.slow
def test_a_kept_alive_connection_is_bounded_too_and_honest_ones_are_not_cut(
    server: Server,
) -> None:
    address = _address(server)
    body = b'{"text": "hello"}'
    head = (
        f"POST /v1/check HTTP/1.1\r\nHost: x\r\nauthorization: Bearer {KEY}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(address, timeout=10) as kept:
        kept.sendall(head + body)
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        kept.sendall(b"POST /v1/check HTTP/1.1\r\n")  # the next request never ends
        closed = _drip_until_closed([kept], limit_s=HEADER_TIMEOUT_S + 8)
    assert 0 in closed
    # Headers complete, body late (past the header timeout): the request is answered.
    with socket.create_connection(address, timeout=10) as slow_body:
        slow_body.sendall(head)
        time.sleep(HEADER_TIMEOUT_S * 2)
        slow_body.sendall(body)
        assert slow_body.recv(65536).startswith(b"HTTP/1.1 200")


@pytest.mark.slow
def test_the_header_timeout_is_configured_strictly(tmp_path: Path) -> None:
    from guardtest import cli

    config = tmp_path / "serve.yaml"
    config.write_text("header_timeout_s: 0\n", encoding="utf-8")
    result = cli("serve", "--config", str(config))
    assert result.returncode == 2
    assert "header_timeout_s = 0" in result.stderr
