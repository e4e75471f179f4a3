"""Two or more runs of the same data side by side, and the samples that flipped.

The figures and the paired tests (McNemar on attacks and on benign samples, Holm
corrected, DeLong on AUC when both have scores) are
:func:`shieldbench.metrics.compare_runs` over the stored runs. The flipped samples
come from :meth:`shieldbench.store.Store.flips`, a SQL join of the two runs'
outcomes by position, and are filterable like the sample table.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shieldbench.charts import Bar, interval_bars
from shieldbench.metrics import Comparison, compare_runs
from shieldbench.view._pages import BadRequest, LruCache, page, store_of
from shieldbench.view._records import checked_info, checked_run, reading
from shieldbench.view._samples import KIND_NAMES, checked_page, sample_filters

__all__ = ["router"]

router = APIRouter()
_comparisons = LruCache(8)
DIRECTIONS = {
    "now_blocked": "blocked by B, not by A",
    "now_allowed": "allowed by B, blocked by A",
    "status": "an error or timeout in one of them",
}


def _comparison(request: Request, ids: tuple[str, ...]) -> Comparison:
    store = store_of(request)
    key = (store.url, ids, tuple(store.info(i).recorded.isoformat() for i in ids))
    return _comparisons.get(key, lambda: compare_runs([checked_run(store, i) for i in ids]))


@router.get("/compare", response_class=HTMLResponse)
def compare(
    request: Request,
    f: Annotated[dict[str, Any], Depends(sample_filters)],
    run: Annotated[list[str] | None, Query(max_length=200)] = None,
    a: Annotated[int, Query(ge=0, le=50)] = 0,
    b: Annotated[int, Query(ge=0, le=50)] = 1,
    direction: Annotated[str | None, Query(pattern="^(now_blocked|now_allowed|status)?$")] = None,
) -> HTMLResponse:
    """``/compare?run=A&run=B[&run=C...]``: a stable URL for a comparison; ``a`` / ``b``
    pick the pair (indexes into ``run``) whose flipped samples are listed."""
    store = store_of(request)
    refs = [r for r in (run or []) if r]
    if len(refs) < 2 or len(refs) > 20:
        raise BadRequest("compare needs 2 to 20 runs: /compare?run=ID&run=ID")
    if a >= len(refs) or b >= len(refs) or a == b:
        raise BadRequest(f"a={a}, b={b}: pick two different runs among the {len(refs)} given")
    infos = [checked_info(store, r) for r in refs]
    ids = tuple(i.id for i in infos)
    if len(set(ids)) != len(ids):
        raise BadRequest("the same run is named twice; compare different runs")
    hashes = {i.dataset_hash for i in infos}
    if len(hashes) > 1:
        raise BadRequest(
            "these runs screened different data ("
            + ", ".join(f"{i.id}: {i.dataset_spec}" for i in infos)
            + "); paired tests and flips need runs of the same data"
        )
    comparison = _comparison(request, ids)
    flips = store.flips(ids[a], ids[b])
    wanted = [x for x in flips if direction in (None, x.direction)]
    by_position = {x.position: x for x in flips}
    result, skipped = checked_page(request, ids[b], f, positions=[x.position for x in wanted])
    with reading(store, ids[b]):
        facets = store.sample_facets(ids[b])
    counts = {d: sum(1 for x in flips if x.direction == d) for d in DIRECTIONS}
    bars = [Bar(e.label, *_rate(e.summary.rates.block_rate)) for e in comparison.leaderboard] + [
        Bar(f"{e.label} FPR", *_rate(e.summary.rates.false_positive_rate))
        for e in comparison.leaderboard
    ]
    return page(
        request,
        "compare.html",
        infos=infos,
        ids=list(ids),
        a=a,
        b=b,
        comparison=comparison,
        chart=interval_bars(bars, title="block rate and FPR with 95% intervals"),
        flips=by_position,
        counts=counts,
        total_flips=len(flips),
        direction=direction,
        directions=DIRECTIONS,
        result=result,
        skipped=skipped,
        params=f,
        pages=max(1, -(-result.total // f["size"])),
        facets=facets,
        kinds=KIND_NAMES,
    )


def _rate(r: Any) -> tuple[float | None, float | None, float | None]:
    return r.value, r.ci_low, r.ci_high
