"""Adaptive attacks: rounds, ASR against queries, the mutators that worked, bypasses.

The pages read the stored record itself (:class:`~shieldbench.attacks.AttackResult`),
as the HTML report does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shieldbench.attacks import AttackResult
from shieldbench.charts import Series, line_chart
from shieldbench.errors import StoreError
from shieldbench.reports import working_mutators
from shieldbench.view._pages import LruCache, page, store_of

__all__ = ["router"]

router = APIRouter()
_attacks = LruCache(8)


@router.get("/attacks", response_class=HTMLResponse)
def attacks(request: Request) -> HTMLResponse:
    """Every stored mutator-search attack, newest first (LLM-driven attacks are rendered
    by ``shieldbench report``, not here yet)."""
    infos = [a for a in store_of(request).attack_infos() if a.kind == "shieldbench.attack"]
    return page(request, "attacks.html", attacks=infos)


def _view(request: Request, attack_id: str) -> Any:
    store = store_of(request)

    def build() -> Any:
        return AttackResult.from_dict(store.get_attack(attack_id), source=attack_id)

    return _attacks.get((store.url, attack_id), build)


@router.get("/attacks/{attack_id}", response_class=HTMLResponse)
def attack(request: Request, attack_id: str) -> HTMLResponse:
    """One adaptive attack: rounds, ASR against queries, the mutators that worked,
    and every bypass (its original and its mutated text)."""
    view = _view(request, attack_id)
    points = view.figures.curve
    curve = [(float(p.queries), float(p.asr or 0.0)) for p in points]
    preserving = [(float(p.queries), float(p.preserving_asr or 0.0)) for p in points]
    chart = line_chart(
        [Series("ASR", curve), Series("payload-preserving ASR", preserving)],
        title="attack success rate against queries",
        x_label="queries",
        y_label="ASR",
    )
    return page(
        request,
        "attack.html",
        view=view,
        chart=chart,
        attack_id=attack_id,
        worked=working_mutators(view),
    )


@router.get("/attacks/{attack_id}/bypasses/{index}", response_class=HTMLResponse)
def bypass(request: Request, attack_id: str, index: int) -> HTMLResponse:
    """One bypass of an attack: the original and the mutated text, escaped."""
    view = _view(request, attack_id)
    if not 0 <= index < len(view.bypasses):
        raise StoreError(f"attack {attack_id!r} has no bypass #{index}")
    return page(
        request, "bypass.html", view=view, b=view.bypasses[index], index=index, attack_id=attack_id
    )
