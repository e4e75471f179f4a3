"""A run's sample table (filtered and paged on the server) and one sample's page."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from shieldbench.store import OUTCOME_KINDS, OutcomeKind, OutcomePage, StoredOutcome
from shieldbench.view._pages import BadRequest, Unreadable, page, store_of
from shieldbench.view._records import checked_info, outcome_problem, reading

__all__ = ["KIND_NAMES", "checked_page", "router", "sample_filters"]

router = APIRouter()

KIND_NAMES = {
    "bypass": "bypasses",
    "false_positive": "false positives",
    "blocked": "attacks blocked",
    "allowed": "benign allowed",
    "error": "errors",
    "timeout": "timeouts",
}

Text = Annotated[str | None, Query(max_length=500)]


def sample_filters(
    kind: Annotated[list[str] | None, Query()] = None,
    q: Text = None,
    category: Text = None,
    tier: Text = None,
    source: Text = None,
    label: Annotated[str | None, Query(pattern="^(attack|benign)?$")] = None,
    score_min: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
    score_max: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    size: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """The sample-table filters, validated at the edge (shared with the comparison)."""
    kinds = [k for k in (kind or []) if k]
    unknown = [k for k in kinds if k not in OUTCOME_KINDS]
    if unknown:
        raise BadRequest(f"kind={unknown[0]!r}: choose from {', '.join(OUTCOME_KINDS)}")
    return {
        "kind": kinds,
        "q": q or None,
        "category": category or None,
        "tier": tier or None,
        "source": source or None,
        "label": label or None,
        "score_min": score_min,
        "score_max": score_max,
        "page": page,
        "size": size,
    }


Filters = Annotated[dict[str, Any], Depends(sample_filters)]


def query_page(
    request: Request, run_id: str, f: dict[str, Any], positions: list[int] | None = None
) -> OutcomePage:
    kinds: list[OutcomeKind] = list(f["kind"])
    return store_of(request).outcome_page(
        run_id,
        kinds=kinds,
        search=f["q"],
        category=f["category"],
        tier=f["tier"],
        source=f["source"],
        label=f["label"],
        score_min=f["score_min"],
        score_max=f["score_max"],
        positions=positions,
        offset=(f["page"] - 1) * f["size"],
        limit=f["size"],
    )


def checked_page(
    request: Request, run_id: str, f: dict[str, Any], positions: list[int] | None = None
) -> tuple[OutcomePage, list[dict[str, Any]]]:
    """:func:`query_page`, read under :func:`~shieldbench.view._records.reading`, the
    damaged outcomes left out and listed as ``{"position", "reason"}``."""
    with reading(store_of(request), run_id):
        result = query_page(request, run_id, f, positions)
    good, skipped = [], []
    for o in result.items:
        problem = outcome_problem(run_id, o)
        if problem is None:
            good.append(o)
        else:
            skipped.append({"position": o.position, "reason": problem})
    return dataclasses.replace(result, items=tuple(good)), skipped


@router.get("/runs/{run_id}/samples", response_class=HTMLResponse)
def samples(request: Request, run_id: str, f: Filters) -> HTMLResponse:
    """The sample table: text search, outcome kind, category, tier, source, score."""
    store = store_of(request)
    info = checked_info(store, run_id)
    result, skipped = checked_page(request, info.id, f)
    with reading(store, info.id):
        facets = store.sample_facets(info.id)
    return page(
        request,
        "samples.html",
        info=info,
        result=result,
        skipped=skipped,
        params=f,
        pages=max(1, -(-result.total // f["size"])),
        facets=facets,
        kinds=KIND_NAMES,
    )


def outcome_dict(o: StoredOutcome) -> dict[str, Any]:
    return {
        "position": o.position,
        "sample_id": o.sample_id,
        "kind": o.kind,
        "label": o.label,
        "category": o.category,
        "tier": o.tier,
        "source": o.source,
        "text": o.text,
        "status": o.status,
        "blocked": o.blocked,
        "score": o.score,
        "latency_ms": o.latency_ms,
        "reasons": list(o.reasons),
        "error": o.error,
    }


@router.get("/api/runs/{run_id}/samples")
def samples_json(request: Request, run_id: str, f: Filters) -> JSONResponse:
    """The sample table page as JSON: ``{"total", "offset", "limit", "samples": [...],
    "skipped": [{"position", "reason"}]}`` (``skipped``: damaged outcomes left out)."""
    run = checked_info(store_of(request), run_id).id
    result, skipped = checked_page(request, run, f)
    return JSONResponse(
        {
            "run": run,
            "total": result.total,
            "offset": result.offset,
            "limit": result.limit,
            "samples": [outcome_dict(o) for o in result.items],
            "skipped": skipped,
        }
    )


def _answer(end_to_end: Any) -> tuple[str | None, list[tuple[str, Any]]]:
    """The model's answer and each judge's verdict of an end-to-end outcome."""
    if not isinstance(end_to_end, dict):
        return None, []
    answer = next(
        (end_to_end[k] for k in ("answer", "response", "output", "completion") if k in end_to_end),
        None,
    )
    judges = end_to_end.get("judges") or end_to_end.get("verdicts") or {}
    rows = list(judges.items()) if isinstance(judges, dict) else list(enumerate(judges))
    return (None if answer is None else str(answer)), [(str(k), v) for k, v in rows]


@router.get("/runs/{run_id}/samples/{position}", response_class=HTMLResponse)
def sample(
    request: Request, run_id: str, position: Annotated[int, Path(ge=0, le=2**31)]
) -> HTMLResponse:
    """One sample: its full text (escaped), labels, verdict, score, reasons, latency,
    details, and for an end-to-end run the model's answer and the judges' verdicts."""
    store = store_of(request)
    info = checked_info(store, run_id)
    with reading(store, info.id):
        outcome = store.outcome(info.id, position)
    problem = outcome_problem(info.id, outcome)
    if problem is not None:
        raise Unreadable(problem)
    answer, judges = _answer(outcome.end_to_end)
    return page(
        request,
        "sample.html",
        info=info,
        o=outcome,
        answer=answer,
        judges=judges,
        kinds=KIND_NAMES,
    )
