"""Hypothesis strategies: OpenAI answers (chat and legacy completions, whole and streamed)
with a secret planted in any field at any offset, and what a client assembles from them."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from replay import Reply

SECRET = "AKIA4NQ7ZR2PLWX8TBKD"  # a validated AWS key id for the `secrets` defense
WORDS = ("alpha", "beta", "gamma", "delta", "bread", "river", "stone", "cloud", "green", "42")
# (choice part, field path) of every text a client reads from a chat answer
CHAT_FIELDS = (
    ("content",),
    ("reasoning_content",),
    ("reasoning",),
    ("refusal",),
    ("tool_calls", "arguments"),
    ("tool_calls", "name"),
    ("function_call", "arguments"),
)
LABEL_FIELDS = ("id", "model", "tool_call_id", "finish_reason")
DROPPED_FIELDS = ("annotations", "x_extension", "logprobs")


@dataclass
class Answer:
    """A generated answer: the upstream's reply, the texts per field, where the secret is."""

    reply: Reply
    texts: dict[tuple[int, tuple[str, ...]], str]
    planted: str | None  # "screened" | "label" | "dropped" | None
    legacy: bool
    streamed: bool


def filler(draw: Any, max_words: int) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    return " ".join(words)


def _delta(field: tuple[str, ...], text: str) -> dict[str, Any]:
    if field[0] == "tool_calls":
        return {"tool_calls": [{"index": 0, "function": {field[1]: text}}]}
    if field[0] == "function_call":
        return {"function_call": {field[1]: text}}
    return {field[0]: text}


def _message(fields: dict[tuple[str, ...], str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    for field, text in fields.items():
        part = _delta(field, text)
        if "tool_calls" in part:
            call = message.setdefault(
                "tool_calls", [{"id": "call_1", "type": "function", "function": {}}]
            )[0]
            call["function"].update(part["tool_calls"][0]["function"])
        elif "function_call" in part:
            message.setdefault("function_call", {}).update(part["function_call"])
        else:
            message.update(part)
    return message


def _split(draw: Any, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _sse_bytes(draw: Any, events: list[dict[str, Any]], done: bool) -> list[bytes]:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    prefix = draw(st.sampled_from(["data: ", "data:"]))
    stream = ""
    for event in events:
        if draw(st.booleans()) and draw(st.booleans()):
            stream += f": keep-alive{eol}{eol}"
        stream += prefix + json.dumps(event) + eol + eol
    if done:
        stream += f"{prefix}[DONE]{eol}{eol}"
    raw = stream.encode()
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(raw) - 1)), max_size=12))))
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@st.composite
def answers(draw: Any) -> Answer:
    legacy = draw(st.booleans())
    streamed = draw(st.booleans())
    n = draw(st.integers(1, 2))
    fields = [("text",)] if legacy else list(CHAT_FIELDS)
    chosen = {
        c: draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
        for c in range(n)
    }
    texts = {(c, f): filler(draw, 120) for c in chosen for f in chosen[c]}
    planted = draw(st.sampled_from([None, "screened", "screened", "label", "dropped"]))
    labels = {"id": "chatcmpl-1", "model": "m", "tool_call_id": "call_1", "finish_reason": "stop"}
    extra: dict[str, Any] = {}
    if planted == "screened":
        key = draw(st.sampled_from(sorted(texts)))
        before, after = texts[key], filler(draw, 800)
        at = draw(st.integers(0, len(before)))
        texts[key] = f"{before[:at]} {SECRET} {before[at:]} {after}"
    elif planted == "label":
        labels[draw(st.sampled_from(LABEL_FIELDS))] = f"x {SECRET} y"
    elif planted == "dropped":
        extra[draw(st.sampled_from(DROPPED_FIELDS))] = {"note": f"x {SECRET} y"}
    if streamed and draw(st.integers(0, 5)) != 0:
        reply = _streamed(draw, texts, labels, extra, legacy, n)
    else:
        reply = Reply.json(_whole(texts, labels, extra, legacy, n))
    return Answer(reply, texts, planted, legacy, streamed)


def _whole(
    texts: dict[Any, str], labels: dict[str, str], extra: dict[str, Any], legacy: bool, n: int
) -> dict[str, Any]:
    choices = []
    for c in range(n):
        mine = {f: t for (k, f), t in texts.items() if k == c}
        choice: dict[str, Any] = {"index": c, "finish_reason": labels["finish_reason"], **extra}
        if legacy:
            choice["text"] = mine.get(("text",), "")
        else:
            choice["message"] = _message(mine)
            for call in choice["message"].get("tool_calls", []):
                call["id"] = labels["tool_call_id"]
        choices.append(choice)
    kind = "text_completion" if legacy else "chat.completion"
    return {
        "id": labels["id"],
        "object": kind,
        "created": 1,
        "model": labels["model"],
        "choices": choices,
        **extra,
    }


def _streamed(
    draw: Any,
    texts: dict[Any, str],
    labels: dict[str, str],
    extra: dict[str, Any],
    legacy: bool,
    n: int,
) -> Reply:
    queues = {key: _split(draw, text) for key, text in texts.items()}
    order = [key for key, pieces in queues.items() for _ in pieces]
    random.Random(draw(st.integers(0, 2**16))).shuffle(order)
    kind = "text_completion" if legacy else "chat.completion.chunk"
    head = {"id": labels["id"], "object": kind, "created": 1, "model": labels["model"]}
    events = []
    if not legacy:
        events.append(
            {
                **head,
                "choices": [
                    {"index": c, "delta": {"role": "assistant"}, "finish_reason": None}
                    for c in range(n)
                ],
            }
        )
    sent_call: set[int] = set()
    for c, field in order:
        piece = queues[(c, field)].pop(0)
        if legacy:
            choice = {"index": c, "text": piece, "finish_reason": None, **extra}
        else:
            delta = _delta(field, piece)
            if "tool_calls" in delta and c not in sent_call:
                delta["tool_calls"][0].update(id=labels["tool_call_id"], type="function")
                sent_call.add(c)
            choice = {"index": c, "delta": delta, "finish_reason": None, **extra}
        events.append({**head, "choices": [choice]})
    for c in range(n):
        events.append(
            {
                **head,
                "choices": [
                    {
                        "index": c,
                        ("text" if legacy else "delta"): "" if legacy else {},
                        "finish_reason": labels["finish_reason"],
                    }
                ],
            }
        )
    done = draw(st.booleans()) or draw(st.booleans())
    return Reply(_sse_bytes(draw, events, done), 200, "text/event-stream")


def assemble(response_text: str, *, streamed: bool) -> dict[tuple[int, tuple[str, ...]], str]:
    """The texts a client reads, per (choice, field), as the OpenAI client assembles them."""
    out: dict[tuple[int, tuple[str, ...]], str] = {}

    def add(c: int, field: tuple[str, ...], text: Any) -> None:
        if isinstance(text, str) and text:
            out[(c, field)] = out.get((c, field), "") + text

    def read(choice: dict[str, Any], part: dict[str, Any]) -> None:
        c = choice["index"]
        add(c, ("text",), choice.get("text"))
        for name in ("content", "reasoning_content", "reasoning", "refusal"):
            add(c, (name,), part.get(name))
        for call in part.get("tool_calls") or []:
            for name in ("name", "arguments"):
                add(c, ("tool_calls", name), (call.get("function") or {}).get(name))
        for name in ("name", "arguments"):
            add(c, ("function_call", name), (part.get("function_call") or {}).get(name))

    if not streamed:
        for choice in json.loads(response_text)["choices"]:
            read(choice, choice.get("message") or {})
        return out
    for line in response_text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices", []):
                read(choice, choice.get("delta") or {})
    return out
