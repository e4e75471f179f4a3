"""Token windows: how a classifier with a fixed input length scores a text of any length.

A text is tokenized once, without truncation. When its tokens do not fit one model
input of ``window`` content tokens, it is cut into overlapping windows that start
every ``stride`` tokens, the last one flush with the end, so every token lies in
some window and every span of up to ``window - stride`` tokens lies whole inside
one. The text's score is then the highest window score (an injection anywhere
in a long document is found). ``shieldguard`` and the ``hf:`` / ``onnx:``
adapters share this one definition.

Example:
    >>> windows(list(range(10)), window=4, stride=3)
    [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]]
    >>> windows([1, 2], window=4, stride=3)
    [[1, 2]]
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["default_stride", "windows"]


def windows(ids: Sequence[int], *, window: int, stride: int) -> list[list[int]]:
    """Overlapping windows covering every token of ``ids`` (one window when it fits).

    ``0 < stride <= window`` is the caller's to check (a :class:`ValueError` here).
    """
    if not 0 < stride <= window:
        raise ValueError(f"need 0 < stride <= window, got stride {stride}, window {window}")
    if len(ids) <= window:
        return [list(ids)]
    starts = list(range(0, len(ids) - window, stride))
    starts.append(len(ids) - window)
    return [list(ids[s : s + window]) for s in starts]


def default_stride(window: int) -> int:
    """Three quarters of the window (at least 1): windows overlap by a quarter.

    >>> default_stride(254), default_stride(1)
    (190, 1)
    """
    return max(1, (window * 3) // 4)
