"""What every page shares: the template environment, formatting, links, caches.

Templates are Jinja2 with autoescape on for every file (data is hostile: a sample's
text, a category name, a tag may be markup); the only unescaped values are the
charts of :mod:`shieldbench.charts`, which escape what they draw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shieldbench._lru import LruCache
from shieldbench.errors import ShieldbenchError
from shieldbench.store import Store

__all__ = ["BadRequest", "LruCache", "Unreadable", "env", "link", "page", "store_of"]


class BadRequest(ShieldbenchError):
    """A query parameter the viewer cannot use (answered as a 400 page naming it)."""


class Unreadable(ShieldbenchError):
    """A stored record the viewer cannot show: malformed, or of a kind it does not know
    (answered as a 422 page naming the record and what is wrong, never a traceback)."""


T = TypeVar("T")


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def _interval(triple: Any) -> str:
    """``(value, low, high)`` (or a metrics ``Rate``) as ``12.3% [10.1–14.9]``."""
    if triple is None:
        return "n/a"
    if hasattr(triple, "ci_low"):
        value, low, high = triple.value, triple.ci_low, triple.ci_high
    else:
        value, low, high = triple
    if value is None:
        return "n/a"
    if low is None or high is None:
        return _pct(value)
    return f"{_pct(value)} [{100 * low:.1f}–{100 * high:.1f}]"


def _ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


env = Environment(
    loader=PackageLoader("shieldbench.view", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters.update(pct=_pct, interval=_interval, ms=_ms, when=_when, p=_p, pretty=_pretty)


def link(path: str, params: Mapping[str, Any] | None = None, **changes: Any) -> str:
    """``path`` with the query ``params`` (changed by ``changes``; ``None`` drops a key;
    a list repeats it), the way every filter, sort and page link is built."""
    merged: dict[str, Any] = dict(params or {})
    merged.update(changes)
    items: list[tuple[str, str]] = []
    for key, value in merged.items():
        if value is None or value == "" or value == []:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        items.extend((key, str(v)) for v in values)
    return path + (f"?{urlencode(items)}" if items else "")


env.globals["link"] = link


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` with ``context`` (and the request) as the response."""
    html = env.get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status_code)


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store
