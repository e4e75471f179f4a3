"""A list of runs read around the rows the store cannot read.

The store reads a page of runs in one query; one row whose stored JSON is not JSON,
or whose start time is not a time, fails that query, and with it the whole list. A
list page must not go down with one damaged record: :func:`salvaged_page` reads the
same page again in halves, and halves of the halves that fail, down to single rows,
so that every readable run of the page is listed in its place (a few extra queries per
damaged row, and only when one is there), and :func:`~._records.damaged_runs` names
the damaged records and what is wrong with each, for the page to say so.
"""

from __future__ import annotations

from shieldbench.store import RunFilter, RunInfo, RunPage, Store
from shieldbench.view._records import FAILURES, damaged_runs

__all__ = ["salvaged_page"]


def salvaged_page(
    store: Store,
    where: RunFilter,
    *,
    sort: str = "started",
    descending: bool = True,
    offset: int = 0,
    limit: int = 50,
) -> tuple[RunPage, list[dict[str, str]]]:
    """:meth:`Store.run_page <shieldbench.store.Store.run_page>` without the rows it
    cannot read, and the damaged records (``{"id", "reason"}``; see the module). One
    query when every row reads, as ``run_page``."""
    items: list[RunInfo] = []
    totals: list[int] = []
    failed: list[int] = []

    def read(start: int, count: int) -> None:
        try:
            found = store.run_page(
                where, sort=sort, descending=descending, offset=start, limit=count
            )
        except FAILURES:
            failed.append(start)
            if count > 1:
                half = count // 2
                read(start, half)
                read(start + half, count - half)
            return
        totals.append(found.total)
        items.extend(found.items)

    read(offset, limit)
    total = max(totals, default=len(items))
    return RunPage(tuple(items), total, offset, limit), damaged_runs(store) if failed else []
