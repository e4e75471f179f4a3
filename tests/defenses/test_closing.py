"""``closing`` / ``close_every``: every defense closed, the first error raised, the rest noted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shieldbench.defenses import close_every, closing


class Part:
    def __init__(self, name: str, fails: bool) -> None:
        self.name, self.fails, self.closed = name, fails, 0

    def close(self) -> None:
        self.closed += 1
        if self.fails:
            raise RuntimeError(f"{self.name} stuck")


def _parts(pattern: list[bool | None]) -> list[object]:
    """``None`` is an object without ``close``; True / False a part that fails / closes."""
    return [object() if f is None else Part(f"p{i}", f) for i, f in enumerate(pattern)]


PATTERNS = st.lists(st.none() | st.booleans(), max_size=8)


@given(PATTERNS)
def test_close_every_closes_all_and_raises_the_first_failure_noting_the_rest(
    pattern: list[bool | None],
) -> None:
    parts = _parts(pattern)
    failing = [p for p in parts if isinstance(p, Part) and p.fails]
    if failing:
        with pytest.raises(RuntimeError) as info:
            close_every(parts)
        assert str(info.value) == f"{failing[0].name} stuck"
        notes = getattr(info.value, "__notes__", [])
        assert notes == [f"also failed to close: RuntimeError: {p.name} stuck" for p in failing[1:]]
    else:
        close_every(parts)
    assert all(p.closed == 1 for p in parts if isinstance(p, Part))


@given(PATTERNS, st.booleans())
def test_closing_closes_everything_and_the_bodys_error_wins(
    pattern: list[bool | None], body_fails: bool
) -> None:
    parts: list[object] = []
    failing = [f for f in pattern if f]
    raised: BaseException | None = None
    try:
        with closing(parts) as same:
            assert same is parts
            parts.extend(_parts(pattern))  # filled inside the block: closed whole
            if body_fails:
                raise KeyError("body")
    except (KeyError, RuntimeError) as exc:
        raised = exc
    assert all(p.closed == 1 for p in parts if isinstance(p, Part))
    if body_fails:
        assert isinstance(raised, KeyError)
        # the first close failure and the later ones noted on the body's error
        assert len(getattr(raised, "__notes__", [])) == len(failing)
    elif failing:
        assert isinstance(raised, RuntimeError)
        assert str(raised) == f"p{pattern.index(True)} stuck"
    else:
        assert raised is None
