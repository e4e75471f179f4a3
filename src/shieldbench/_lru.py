"""A small thread-safe LRU cache of computed values, for results of immutable inputs
(a stored run's columns, a run's report): computed outside the lock, so two callers
may compute the same value once each, and the last one is kept."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["LruCache"]

T = TypeVar("T")


class LruCache:
    """At most ``size`` values, the least recently used dropped first.

    >>> cache = LruCache(1)
    >>> cache.get("a", lambda: 1), cache.get("a", lambda: 2), cache.get("b", lambda: 3)
    (1, 1, 3)
    >>> cache.get("a", lambda: 4)
    4
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value cached for ``key``, computing (and caching) it when absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                found: T = self._items[key]
                return found
        value = compute()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value
