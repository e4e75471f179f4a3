"""Adaptive attacks, both kinds: the mutator search and the LLM-driven attacks.

``/attacks`` lists every stored attack, newest first, whatever its kind (see
:mod:`._attack_list`; a kind this viewer does not know is listed with a note).
``/attacks/ID`` renders the stored record, read through the library's own readers
(:meth:`AttackResult.from_dict <shieldbench.attacks.AttackResult.from_dict>` or
:meth:`LLMAttackResult.from_dict <shieldbench.attacks.LLMAttackResult.from_dict>`,
which validate it): for the mutator search its rounds, ASR against queries, the
mutators that worked and every bypass; for PAIR, TAP and Crescendo what the report
renders (:mod:`._llm_attack`), with every goal's transcript on
``/attacks/ID/goals/N``. A missing id is a 404 page naming it; a malformed record,
or one of an unknown kind, a 422 page naming the attack and what is wrong.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shieldbench.attacks import ATTACK_KIND, LLM_ATTACK_KIND, AttackResult, LLMAttackResult
from shieldbench.charts import Series, line_chart
from shieldbench.errors import RunError, StoreError
from shieldbench.reports import working_mutators
from shieldbench.view._attack_list import listed_attacks, unknown_kind_note
from shieldbench.view._llm_attack import goal_context, llm_context
from shieldbench.view._pages import LruCache, Unreadable, page, store_of
from shieldbench.view._records import FAILURES, check_mutator

__all__ = ["router"]

router = APIRouter()
_attacks = LruCache(8)
PageNumber = Annotated[int, Query(alias="page", ge=1, le=1_000_000)]


@router.get("/attacks", response_class=HTMLResponse)
def attacks(request: Request) -> HTMLResponse:
    """Every stored attack, newest first: its kind, defense, data, headline figures."""
    rows, skipped = listed_attacks(store_of(request))
    return page(request, "attacks.html", attacks=rows, skipped=skipped)


def _read(document: dict[str, Any], attack_id: str) -> AttackResult | LLMAttackResult:
    """The record of ``attack_id``, validated; :class:`Unreadable` naming it if not one."""
    kind = document.get("kind", ATTACK_KIND)
    source = f"attack {attack_id!r}"
    try:
        if kind == ATTACK_KIND:
            check_mutator(document, attack_id)  # names the field at fault
            result = AttackResult.from_dict(document, source=source)
            result.check_curve(source)  # the chart draws it
            return result
        if kind == LLM_ATTACK_KIND:
            return LLMAttackResult.from_dict(document, source=source)
    except RunError as error:
        raise Unreadable(f"{error} (the stored record is not one this viewer can read)") from None
    raise Unreadable(f"{source} is {unknown_kind_note(str(kind))}")


def _view(request: Request, attack_id: str) -> AttackResult | LLMAttackResult:
    store = store_of(request)

    def build() -> AttackResult | LLMAttackResult:
        try:
            document = store.get_attack(attack_id)
        except FAILURES as error:  # the stored document is not JSON
            why = f"{type(error).__name__}: {error}"
            raise Unreadable(
                f"attack {attack_id!r}: stored field document is not JSON ({why})"
            ) from None
        return _read(document, attack_id)

    view: AttackResult | LLMAttackResult = _attacks.get((store.url, attack_id), build)
    return view


def _mutator(view: AttackResult) -> dict[str, Any]:
    points = view.figures.curve
    curve = [(float(p.queries), float(p.asr or 0.0)) for p in points]
    preserving = [(float(p.queries), float(p.preserving_asr or 0.0)) for p in points]
    chart = line_chart(
        [Series("ASR", curve), Series("payload-preserving ASR", preserving)],
        title="attack success rate against queries",
        x_label="queries",
        y_label="ASR",
    )
    return {"view": view, "chart": chart, "worked": working_mutators(view)}


@router.get("/attacks/{attack_id}", response_class=HTMLResponse)
def attack(request: Request, attack_id: str, number: PageNumber = 1) -> HTMLResponse:
    """One adaptive attack. The mutator search: rounds, ASR against queries, the
    mutators that worked, every bypass. An LLM attack: figures, chart, where the
    defense failed, comparison, transfer, the goals (paged by ``page``) and the best
    transcripts."""
    view = _view(request, attack_id)
    if isinstance(view, LLMAttackResult):
        return page(request, "llm_attack.html", attack_id=attack_id, **llm_context(view, number))
    return page(request, "attack.html", attack_id=attack_id, **_mutator(view))


@router.get("/attacks/{attack_id}/goals/{index}", response_class=HTMLResponse)
def goal(request: Request, attack_id: str, index: int, number: PageNumber = 1) -> HTMLResponse:
    """One goal of an LLM attack: its outcome and its whole transcript, paged."""
    view = _view(request, attack_id)
    if not isinstance(view, LLMAttackResult):
        raise StoreError(f"attack {attack_id!r} is a mutator search: it has bypasses, not goals")
    context = goal_context(view, index, number, attack_id)
    return page(request, "llm_goal.html", attack_id=attack_id, **context)


@router.get("/attacks/{attack_id}/bypasses/{index}", response_class=HTMLResponse)
def bypass(request: Request, attack_id: str, index: int) -> HTMLResponse:
    """One bypass of a mutator search: the original and the mutated text, escaped."""
    view = _view(request, attack_id)
    if not isinstance(view, AttackResult) or not 0 <= index < len(view.bypasses):
        raise StoreError(f"attack {attack_id!r} has no bypass #{index}")
    return page(
        request, "bypass.html", view=view, b=view.bypasses[index], index=index, attack_id=attack_id
    )
