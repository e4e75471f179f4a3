"""Trends: one line per defense identity on one dataset version, over time."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse

from shieldbench.charts import Series, line_chart
from shieldbench.store import DatasetVersion, RunFilter, RunInfo, Store
from shieldbench.trend import TrendPoint, trend_points
from shieldbench.view._alerts import readable_alerts
from shieldbench.view._pages import page, store_of
from shieldbench.view._records import FAILURES
from shieldbench.view._runs import readable
from shieldbench.view._salvage import salvaged_page

__all__ = ["router"]

router = APIRouter()
_MAX_RUNS = 5000


def identity(run: RunInfo) -> str:
    """A defense's identity: its canonical spec and version (never its display name)."""
    return f"{run.defense_spec} @ {run.defense_version or 'unversioned'}"


def _lines(points: dict[str, list[TrendPoint]], which: str) -> list[Series]:
    series = []
    for name, pts in points.items():
        xy, marks = [], []
        for p in pts:
            value = p.run.block_rate[0] if which == "block" else p.run.fpr[0]
            if value is None:
                continue
            x = p.run.started.timestamp()
            xy.append((x, value))
            changed = p.block_changed if which == "block" else p.fpr_changed
            if changed:
                marks.append((x, value, f"{p.run.id}: significant change from the run before"))
        series.append(Series(name, xy, marks))
    return series


def _ticks(runs: list[RunInfo]) -> list[tuple[float, str]]:
    if not runs:
        return []
    first, last = runs[0].started, runs[-1].started
    if first == last:
        return [(first.timestamp(), first.strftime("%Y-%m-%d %H:%M"))]
    return [
        (first.timestamp(), first.strftime("%Y-%m-%d")),
        (last.timestamp(), last.strftime("%Y-%m-%d")),
    ]


def _versions(store: Store) -> tuple[list[DatasetVersion], list[dict[str, str]]]:
    """The dataset versions measured, most recent first, and the damaged records left
    out; when a row cannot be read (a start time that is not one), the versions of the
    newest 1000 runs read around it (:func:`~._salvage.salvaged_page`)."""
    try:
        return list(store.dataset_versions()), []
    except FAILURES:
        result, damaged = salvaged_page(store, RunFilter(), limit=1000)
    runs: dict[str, list[RunInfo]] = defaultdict(list)
    for r in result.items:  # newest first
        runs[r.dataset_hash].append(r)
    versions = [
        DatasetVersion(
            h, rs[0].dataset_spec, len(rs), len({identity(r) for r in rs}), rs[0].started
        )
        for h, rs in runs.items()
    ]
    return versions, damaged


def _runs_of(store: Store, dataset: str) -> tuple[list[RunInfo], list[dict[str, str]]]:
    """The runs on ``dataset`` (spec or content hash), oldest first, and the damaged
    records left out; when a row cannot even be read, the newest runs read around it
    (:func:`~._salvage.salvaged_page`, at most 1000)."""
    damaged: list[dict[str, str]] = []
    try:
        found = tuple(store.runs(dataset=dataset, limit=_MAX_RUNS))
    except FAILURES:
        result, damaged = salvaged_page(store, RunFilter(dataset=dataset), limit=1000)
        same = [r for r in result.items if dataset in (r.dataset_hash, r.dataset_spec)]
        found = tuple(reversed(same))
    runs, skipped = readable(found)
    return runs, damaged + skipped


@router.get("/trend", response_class=HTMLResponse)
def trend(
    request: Request, dataset: Annotated[str | None, Query(max_length=200)] = None
) -> HTMLResponse:
    """``/trend?dataset=CONTENT_HASH``: every defense identity measured on that dataset
    version over time, with intervals, significant changes ringed, and the gate and
    monitor runs and alerts on the same time axis. Without ``dataset``: the versions."""
    store = store_of(request)
    versions, damaged = _versions(store)
    if not dataset:
        return page(request, "trend.html", versions=versions, dataset=None, skipped=damaged)
    runs, skipped = _runs_of(store, dataset)
    skipped = damaged + [s for s in skipped if s not in damaged]
    grouped: dict[str, list[RunInfo]] = defaultdict(list)
    for r in runs:
        grouped[identity(r)].append(r)
    points = {name: trend_points(rs) for name, rs in sorted(grouped.items())}
    ids = {r.id for r in runs}
    alerts, damaged_alerts = readable_alerts(store, ids)
    ticks = _ticks(runs)
    charts = {
        which: line_chart(
            _lines(points, which),
            title=title,
            x_label="run start (UTC)",
            y_label=title,
            x_ticks=ticks,
        )
        for which, title in (("block", "block rate"), ("fpr", "false positive rate"))
    }
    return page(
        request,
        "trend.html",
        versions=versions,
        dataset=dataset,
        skipped=skipped + damaged_alerts,
        runs=list(reversed(runs)),
        points={name: list(reversed(p)) for name, p in points.items()},
        charts=charts,
        alerts=alerts,
        identity=identity,
    )
