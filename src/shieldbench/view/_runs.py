"""The runs list (filtered, sorted and paged in SQL) and one run's overview."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse

from shieldbench.charts import Bar, Point, Series, histogram, interval_bars, line_chart, plane
from shieldbench.reports import Report, build_report
from shieldbench.store import RUN_SORTS, RunFilter, RunInfo, RunPage
from shieldbench.view._pages import BadRequest, LruCache, page, store_of
from shieldbench.view._records import checked_info, checked_run, info_problem, reading
from shieldbench.view._salvage import salvaged_page

__all__ = ["router"]

router = APIRouter()
_reports = LruCache(16)
PAGE_SIZES = (25, 50, 100, 200)


def _day(text: str | None, name: str, *, end: bool = False) -> datetime | None:
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise BadRequest(f"{name}={text!r}: write a date as YYYY-MM-DD") from None
    return datetime.combine(day, time.max if end else time.min, tzinfo=UTC)


def _tags(values: list[str]) -> dict[str, str]:
    tags = {}
    for value in values:
        if not value:
            continue  # an empty field of the filter form
        key, eq, tag_value = value.partition("=")
        if not eq or not key:
            raise BadRequest(f"tag={value!r}: write a tag filter as KEY=VALUE")
        tags[key] = tag_value
    return tags


def readable(infos: tuple[RunInfo, ...]) -> tuple[list[RunInfo], list[dict[str, str]]]:
    """The runs the pages can show, and the others as ``{"id", "reason"}`` (a list
    page skips a damaged record and says why, rather than fail)."""
    good, skipped = [], []
    for info in infos:
        problem = info_problem(info)
        if problem is None:
            good.append(info)
        else:
            skipped.append({"id": str(info.id), "reason": problem})
    return good, skipped


def _runs_page(request: Request, params: dict[str, Any]) -> tuple[RunPage, list[dict[str, str]]]:
    sort = params["sort"] or "started"
    if sort not in RUN_SORTS:
        raise BadRequest(f"sort={sort!r}: choose one of {', '.join(RUN_SORTS)}")
    where = RunFilter(
        defense=params["defense"] or None,
        dataset=params["dataset"] or None,
        tags=_tags(params["tag"]),
        commit=params["commit"] or None,
        source=params["source"] or None,
        since=_day(params["since"], "since"),
        until=_day(params["until"], "until", end=True),
    )
    result, damaged = salvaged_page(
        store_of(request),
        where,
        sort=sort,
        descending=params["order"] != "asc",
        offset=(params["page"] - 1) * params["size"],
        limit=params["size"],
    )
    good, skipped = readable(result.items)
    return dataclasses.replace(result, items=tuple(good)), damaged + skipped


Text = Annotated[str | None, Query(max_length=500)]


@router.get("/", include_in_schema=False)
def home() -> RedirectResponse:
    return RedirectResponse("/runs", status_code=307)


def _params(
    defense: Text = None,
    dataset: Text = None,
    tag: Annotated[list[str] | None, Query()] = None,
    commit: Text = None,
    source: Text = None,
    since: Text = None,
    until: Text = None,
    sort: Text = None,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    size: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    return {
        "defense": defense,
        "dataset": dataset,
        "tag": tag or [],
        "commit": commit,
        "source": source,
        "since": since,
        "until": until,
        "sort": sort,
        "order": order,
        "page": page,
        "size": size,
    }


Params = Annotated[dict[str, Any], Depends(_params)]


@router.get("/runs", response_class=HTMLResponse)
def runs(request: Request, params: Params) -> HTMLResponse:
    """Every run, newest first: filter, sort by a headline figure, page."""
    result, skipped = _runs_page(request, params)
    pages = max(1, -(-result.total // params["size"]))
    return page(
        request,
        "runs.html",
        result=result,
        skipped=skipped,
        params=params,
        pages=pages,
        sorts=RUN_SORTS,
        sizes=PAGE_SIZES,
    )


@router.get("/api/runs")
def runs_json(request: Request, params: Params) -> JSONResponse:
    """The same page as JSON: ``{"total", "offset", "limit", "runs": [RunInfo.to_dict()],
    "skipped": [{"id", "reason"}]}`` (``skipped``: the damaged records left out)."""
    result, skipped = _runs_page(request, params)
    return JSONResponse(
        {
            "total": result.total,
            "offset": result.offset,
            "limit": result.limit,
            "runs": [r.to_dict() for r in result.items],
            "skipped": skipped,
        }
    )


def run_report(request: Request, info: RunInfo) -> Report:
    """The report model of a stored run (cached: a stored run never changes), read and
    checked (:func:`~shieldbench.view._records.checked_run`)."""
    store = store_of(request)
    key = (store.url, info.id, info.recorded.isoformat())

    def build() -> Report:
        run = checked_run(store, info.id)
        with reading(store, info.id):
            return build_report([run])

    return _reports.get(key, build)


def _charts(report: Report) -> dict[str, Any]:
    section = report.runs[0]
    rates = section.summary.rates
    by_category = section.summary.breakdowns.by.get("category", ())
    charts: dict[str, Any] = {
        "headline": interval_bars(
            [
                Bar("block rate", *_triple(rates.block_rate)),
                Bar("attack success", *_triple(rates.attack_success_rate)),
                Bar("false positives", *_triple(rates.false_positive_rate)),
            ],
            title="headline rates with 95% intervals",
        ),
        "categories": interval_bars(
            [
                Bar(
                    g.group,
                    *_triple(g.block_rate if g.confusion.n_attacks else g.false_positive_rate),
                )
                for g in by_category
            ],
            title="per category: block rate (attack categories) or FPR (benign ones)",
        )
        if by_category
        else None,
    }
    planes = [p for g in report.groups for p in g.planes if p.dimension is None]
    if planes and planes[0].points:
        charts["plane"] = plane(
            [_point(p) for p in planes[0].points],
            title="security / utility plane",
            max_fpr=planes[0].max_fpr,
        )
    if section.curves is not None:
        roc, pr = section.curves.roc, section.curves.pr
        charts["roc"] = line_chart(
            [Series("ROC", list(zip(roc.fpr, roc.tpr, strict=True)))],
            title="ROC curve",
            x_label="false positive rate",
            y_label="true positive rate",
            unit_box=True,
        )
        charts["pr"] = line_chart(
            [Series("precision / recall", list(zip(pr.recall, pr.precision, strict=True)))],
            title="precision / recall curve",
            x_label="recall",
            y_label="precision",
            unit_box=True,
        )
    hist = section.latency_histogram
    if hist is not None and hist.counts:
        charts["latency"] = histogram(hist.edges_ms, hist.counts, title="latency per call (ms)")
    return charts


def _triple(rate: Any) -> tuple[float | None, float | None, float | None]:
    return rate.value, rate.ci_low, rate.ci_high


def _point(p: Any) -> Point:
    f, b = p.false_positive_rate, p.block_rate
    return Point(
        p.label,
        f.value or 0.0,
        f.ci_low,
        f.ci_high,
        b.value or 0.0,
        b.ci_low,
        b.ci_high,
        p.on_frontier,
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run(request: Request, run_id: str) -> HTMLResponse:
    """One run: headline figures with intervals and n, per category, plane, curves,
    latency, errors, and a way into its samples."""
    store = store_of(request)
    info = checked_info(store, run_id)
    report = run_report(request, info)
    section = report.runs[0]
    with reading(store, info.id):
        return page(
            request,
            "run.html",
            info=info,
            section=section,
            summary=section.summary,
            charts=_charts(report),
            facets=store.sample_facets(info.id),
        )
