"""Output screening of the proxy under attack (issue 31, items 1 and the malformed answers):
a real ``shieldbench serve --output-defense secrets`` in front of a replaying upstream on
loopback. No field a client can read carries a secret past the screen, streamed or not,
and every malformed answer is a recorded 502."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from answer_shapes import SECRET, Answer, answers, assemble
from guardtest import Server, eventually, launch
from hypothesis import HealthCheck, given, settings
from replay import Replay, Reply, replay_upstream

from shieldbench.service import AuditStore

LEAK = f"Sure: {SECRET} is the key."


@pytest.fixture(scope="module")
def upstream() -> Iterator[Replay]:
    with replay_upstream() as record:
        yield record


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, upstream: Replay) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("output")
    server = launch(
        tmp, "--defense", "pattern", "--output-defense", "secrets", "--upstream", upstream.url
    )
    yield server
    server.stop()


def _ask(proxy: Server, upstream: Replay, reply: Reply, *, stream: bool) -> Any:
    upstream.script[:] = [reply]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    with proxy.client() as c:
        return c.post("/v1/chat/completions", json=body)


def _chunk(delta: dict[str, Any], *, legacy: bool = False) -> dict[str, Any]:
    choice = {"index": 0, "finish_reason": None}
    choice.update({"text": delta["text"]} if legacy else {"delta": delta})
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [choice],
    }


def _no_secret(text: str) -> None:
    assert SECRET[:6] not in text  # not the key, nor the start of it
    assert SECRET[8:] not in text


def _filtered(response: Any) -> None:
    assert response.status_code == 200, response.text
    _no_secret(response.text)
    assert "content_filter" in response.text


@pytest.mark.slow
def test_a_key_at_the_start_of_a_long_event_is_caught(proxy: Server, upstream: Replay) -> None:
    event = _chunk({"content": f"{SECRET} " + "tail " * 700})  # 3,500 more characters
    _filtered(_ask(proxy, upstream, Reply.sse([event]), stream=True))


@pytest.mark.parametrize(
    "delta",
    [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": json.dumps({"k": SECRET})},
                }
            ]
        },
        {"reasoning_content": LEAK},
        {"reasoning": LEAK},
        {"refusal": LEAK},
        {"function_call": {"name": "f", "arguments": LEAK}},
    ],
    ids=["tool_calls", "reasoning_content", "reasoning", "refusal", "function_call"],
)
@pytest.mark.slow
def test_every_streamed_field_is_screened(
    proxy: Server, upstream: Replay, delta: dict[str, Any]
) -> None:
    _filtered(_ask(proxy, upstream, Reply.sse([_chunk(delta)]), stream=True))


@pytest.mark.slow
def test_legacy_text_is_screened_streamed_and_whole(proxy: Server, upstream: Replay) -> None:
    _filtered(_ask(proxy, upstream, Reply.sse([_chunk({"text": LEAK}, legacy=True)]), stream=True))
    whole = {"object": "text_completion", "choices": [{"index": 0, "text": LEAK}]}
    _filtered(_ask(proxy, upstream, Reply.json(whole), stream=False))


@pytest.mark.slow
def test_plain_json_to_a_stream_request_is_screened_and_sent_as_sse(
    proxy: Server, upstream: Replay
) -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": LEAK}}]}
    response = _ask(proxy, upstream, Reply.json(body), stream=True)
    _filtered(response)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.text.rstrip().endswith("data: [DONE]")
    clean = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]}
    response = _ask(proxy, upstream, Reply.json(clean), stream=True)
    assert assemble(response.text, streamed=True) == {(0, ("content",)): "fine"}


@pytest.mark.slow
def test_whole_tool_calls_are_screened(proxy: Server, upstream: Replay) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps({"key": SECRET})},
    }
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ]
    }
    response = _ask(proxy, upstream, Reply.json(body), stream=False)
    _filtered(response)
    assert response.headers["x-shieldbench-output"] == "block"
    assert "aws_access_key_id" not in response.text  # which rule fired is not told


@pytest.mark.slow
def test_a_key_across_a_check_boundary_is_never_released_in_part(
    proxy: Server, upstream: Replay
) -> None:
    """13 of the key's 20 characters end one check's text (256 characters), the rest
    starts the next: nothing of it reaches the client."""
    first = "w" * 242 + " " + SECRET[:13]
    events = [_chunk({"content": first}), _chunk({"content": SECRET[13:] + " and more " * 40})]
    for split in (1, 7, 50):
        raw = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        chunks = [raw[i : i + split * 40] for i in range(0, len(raw), split * 40)]
        reply = Reply([*chunks, b"data: [DONE]\n\n"], 200, "text/event-stream", 0.001)
        response = _ask(proxy, upstream, reply, stream=True)
        _filtered(response)
        assert "AKIA" not in response.text


@pytest.mark.slow
def test_a_clean_stream_is_released_while_it_arrives(proxy: Server, upstream: Replay) -> None:
    """The hold-back delays a stream by H + up to 256 characters, not to its end: the
    first text reaches the client while the upstream is still sending."""
    events = [_chunk({"content": f"word{i:03d} " * 5}) for i in range(100)]  # 50 chars each
    reply = Reply.sse(events, pause_s=0.05)
    upstream.script[:] = [reply]
    start = upstream.sent
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    lines: list[str] = []
    sent_then = None
    with proxy.client() as c, c.stream("POST", "/v1/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if sent_then is None and line.startswith("data: ") and '"content"' in line:
                sent_then = upstream.sent - start
            lines.append(line)
    text = "\n".join(lines)
    assert sent_then is not None
    assert sent_then < len(reply.chunks) / 2  # released with most of the answer still to come
    assert assemble(text, streamed=True)[(0, ("content",))].endswith("word099 ")


@pytest.mark.slow
def test_unknown_fields_are_dropped(proxy: Server, upstream: Replay) -> None:
    body = {
        "x_debug": SECRET,
        "choices": [
            {
                "index": 0,
                "logprobs": {"content": [SECRET]},
                "message": {"role": "assistant", "content": "hello", "annotations": [SECRET]},
            }
        ],
    }
    response = _ask(proxy, upstream, Reply.json(body), stream=False)
    assert response.status_code == 200
    _no_secret(response.text)
    assert response.json()["choices"][0]["message"] == {"role": "assistant", "content": "hello"}


@pytest.mark.slow
def test_an_upstream_4xx_message_is_screened(proxy: Server, upstream: Replay) -> None:
    body = {"error": {"message": f"bad key {SECRET}", "type": "invalid_request_error"}}
    response = _ask(proxy, upstream, Reply.json(body, status=400), stream=False)
    assert response.status_code == 400
    _no_secret(response.text)


@pytest.mark.slow
def test_an_upstream_redirect_is_not_followed(proxy: Server, upstream: Replay) -> None:
    before = len(upstream.received)
    response = _ask(proxy, upstream, Reply([b"{}"], status=307), stream=False)
    assert response.status_code == 307
    assert "location" not in response.headers
    assert len(upstream.received) == before + 1


def _gateway_errors(db: str) -> int:
    store = AuditStore(db)
    try:
        return sum(1 for row in store.rows() if row.kind == "gateway_error")
    finally:
        store.close()


MALFORMED = [
    Reply.json({"choices": ["x"]}),
    Reply.json(["x"]),
    Reply.json({"choices": [{"index": 0, "message": {"content": 5}}]}),
    Reply([b"not json"]),
    Reply.sse([{"choices": ["x"]}]),
    Reply([b"data: {not json\n\n"], 200, "text/event-stream"),
    Reply([b": only a comment\n\n"], 200, "text/event-stream"),
]


@pytest.mark.parametrize("reply", MALFORMED, ids=[f"malformed{i}" for i in range(len(MALFORMED))])
@pytest.mark.slow
def test_a_malformed_answer_is_a_recorded_502(
    proxy: Server, upstream: Replay, reply: Reply
) -> None:
    before = _gateway_errors(proxy.db)
    stream = reply.content_type == "text/event-stream"
    response = _ask(proxy, upstream, reply, stream=stream)
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert error["type"] == "upstream_error"
    assert error["decision_id"] == response.headers["x-shieldbench-decision"]
    assert eventually(lambda: _gateway_errors(proxy.db) == before + 1)


@pytest.mark.slow
def test_a_malformed_event_mid_stream_ends_it_with_a_recorded_error(
    proxy: Server, upstream: Replay
) -> None:
    before = _gateway_errors(proxy.db)
    reply = Reply.sse([_chunk({"content": "fine "}), {"choices": ["x"]}])
    response = _ask(proxy, upstream, reply, stream=True)
    assert response.status_code == 200
    last = [line for line in response.text.splitlines() if line.startswith("data: ")][-1]
    assert json.loads(last[6:])["error"]["type"] == "upstream_error"
    assert eventually(lambda: _gateway_errors(proxy.db) == before + 1)


@given(answer=answers())
@settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@pytest.mark.slow
def test_no_secret_reaches_the_client_in_any_answer_shape(
    proxy: Server, upstream: Replay, answer: Answer
) -> None:
    """Every chat / legacy shape, whole, streamed (random events and TCP splits) or JSON
    to a stream request, a secret in any field at any offset: it never reaches the
    client, what does reach it is a prefix of the upstream's text per field, and an
    answer without a secret arrives whole."""
    response = _ask(proxy, upstream, answer.reply, stream=answer.streamed)
    assert response.status_code == 200, response.text
    _no_secret(response.text)
    got = assemble(response.text, streamed=answer.streamed)
    for key, text in got.items():
        assert answer.texts[key].startswith(text), key
    label_sent = SECRET.encode() in b"".join(answer.reply.chunks)  # a label is never split
    if answer.planted == "screened" or (answer.planted == "label" and label_sent):
        assert "content_filter" in response.text
    else:
        assert got == {k: t for k, t in answer.texts.items() if t}


@pytest.mark.slow
def test_without_an_output_defense_answers_are_checked_not_trimmed(
    tmp_path: Path, upstream: Replay
) -> None:
    """Nothing is screened, so nothing is dropped (``logprobs`` stays), but a malformed
    answer is still a recorded 502."""
    bare = launch(tmp_path, "--defense", "pattern", "--upstream", upstream.url)
    try:
        body = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi"},
                    "logprobs": {"content": [{"token": "hi", "logprob": -0.1}]},
                }
            ]
        }
        whole = _ask(bare, upstream, Reply.json(body), stream=False)
        assert whole.json()["choices"][0]["logprobs"] == body["choices"][0]["logprobs"]
        streamed = _ask(bare, upstream, Reply.sse([_chunk({"content": "hi"})]), stream=True)
        assert assemble(streamed.text, streamed=True) == {(0, ("content",)): "hi"}
        for reply in (Reply.json({"choices": ["x"]}), Reply.sse([{"choices": ["x"]}])):
            response = _ask(bare, upstream, reply, stream=reply.content_type != "application/json")
            assert response.status_code == 502
        assert eventually(lambda: _gateway_errors(bare.db) == 2)
    finally:
        bare.stop()
