"""Screening a streamed answer: what is screened together, and what may be released when.

A streamed answer is a sequence of events, each adding text to some fields
(``choices[i].delta.content``, ``choices[i].delta.tool_calls[j].function.arguments``,
...; see :mod:`._answer`). :class:`HoldBack` keeps, per field, what arrived, what
has been screened, and releases an event only once it satisfies **the hold-back
rule**, for a hold-back of ``H`` characters:

    an event is released only when, in every field it adds to, the text up to its
    end and the ``H`` characters after it have been screened clean.

Each check screens, per field, all of the text not screened yet *plus* the ``H``
characters before it (one window: no unscreened text is skipped, however long an
event). Hence: any run of at most ``H`` consecutive characters of one field is
screened whole, in one call, before any character of it reaches the client. An output
defense that recognises each thing it blocks from its first ``H`` characters (its
``max_match_chars``) therefore catches a secret split across events, checks or
releases, and nothing from the start of that secret on is released. With ``H =
None`` nothing is released before the end, when the whole answer is screened.

Checks run every ``check_every`` new characters (and at the end); the price is a
delay of ``H`` plus up to ``check_every`` characters. The other strings of an event
(``id``, ``model``, ...) are screened whole in the first check after it arrived.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from shieldbench.service._answer import Piece

__all__ = ["MAX_EVENT_BYTES", "EventTooLarge", "HoldBack", "sse_data", "sse_events"]

#: The longest SSE event read from an upstream (longer: a stream error).
MAX_EVENT_BYTES = 8 * 1024 * 1024


class EventTooLarge(ValueError):
    """An upstream SSE event longer than :data:`MAX_EVENT_BYTES`."""


async def sse_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The events of an SSE byte stream (split at blank lines; CRLF read as LF)."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            yield event
        if len(buffer) > MAX_EVENT_BYTES:
            raise EventTooLarge(f"an event longer than {MAX_EVENT_BYTES} bytes")
    if buffer.strip():
        yield buffer


def sse_data(event: bytes) -> str | None:
    """The event's data (its ``data:`` lines joined by newlines); ``None`` without any."""
    lines = [
        line[5:].removeprefix(" ")
        for line in event.decode("utf-8", "replace").split("\n")
        if line.startswith("data:")
    ]
    return "\n".join(lines) if lines else None


@dataclass
class _Field:
    tail: str = ""  # the text from absolute offset ``start`` on
    start: int = 0
    received: int = 0
    checked: int = 0


@dataclass
class _Event:
    data: Any
    ends: dict[tuple[Any, ...], int]


class HoldBack:
    """The hold-back rule over one stream (see the module docstring).

    Example:
        >>> hold = HoldBack(holdback=4, check_every=1)
        >>> hold.add("e1", [((0, "content"), "abcdef")], [])
        True
        >>> hold.windows(final=False)
        ['abcdef']
        >>> hold.clean(final=False)  # 6 screened, 4 held back: "e1" ends at 6 > 2
        []
        >>> _ = hold.add("e2", [((0, "content"), "ghij")], [])
        >>> hold.windows(final=False)  # the 4 characters before the new text, and it
        ['cdefghij']
        >>> hold.clean(final=False)
        ['e1']
        >>> hold.clean(final=True)
        ['e2']
    """

    def __init__(self, *, holdback: int | None, check_every: int) -> None:
        self.holdback = holdback
        self.check_every = check_every
        self._fields: dict[tuple[Any, ...], _Field] = {}
        self._events: deque[_Event] = deque()
        self._labels: list[str] = []
        self._fresh = 0

    @property
    def held(self) -> int:
        """How many events are held."""
        return len(self._events)

    def add(self, data: Any, pieces: list[Piece], labels: list[str]) -> bool:
        """Hold an event (``data``: what to release) adding ``pieces``; whether a check is due."""
        ends: dict[tuple[Any, ...], int] = {}
        for key, text in pieces:
            state = self._fields.setdefault(key, _Field())
            state.tail += text
            state.received += len(text)
            ends[key] = state.received
            self._fresh += len(text)
        self._labels.extend(labels)
        self._fresh += sum(map(len, labels))
        self._events.append(_Event(data, ends))
        return self._fresh >= self.check_every

    def windows(self, *, final: bool) -> list[str]:
        """What to screen now: per field its unscreened text with the ``H`` characters
        before it (everything, with no hold-back), then the events' other strings."""
        texts = []
        for state in self._fields.values():
            if state.received > state.checked or (final and self.holdback is None):
                begin = (
                    0 if self.holdback is None else max(state.start, state.checked - self.holdback)
                )
                texts.append(state.tail[begin - state.start :])
        texts.extend(self._labels)
        return [t for t in texts if t]

    def clean(self, *, final: bool) -> list[Any]:
        """The windows were screened clean: the events that may be released now, in order."""
        for state in self._fields.values():
            state.checked = state.received
            if self.holdback is not None:
                keep = max(state.start, state.checked - self.holdback)
                state.tail = state.tail[keep - state.start :]
                state.start = keep
        self._labels.clear()
        self._fresh = 0
        released = []
        while self._events and (final or self._releasable(self._events[0])):
            released.append(self._events.popleft().data)
        return released

    def _releasable(self, event: _Event) -> bool:
        if self.holdback is None:
            return False
        return all(
            end <= self._fields[key].checked - self.holdback for key, end in event.ends.items()
        )
