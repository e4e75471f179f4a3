"""The viewer's reads of a :class:`~shieldbench.store.Store`: paged, filtered in SQL.

A mixin of :class:`~shieldbench.store._store.Store`, kept apart so the store's own
module holds writing and resolving; every method opens one read session.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from sqlalchemy.orm import Session

from shieldbench.store._outcomes import (
    OutcomePage,
    StoredOutcome,
    outcome_at,
    outcome_page,
    sample_facets,
)
from shieldbench.store._read import (
    AttackInfo,
    DatasetVersion,
    Flip,
    RunFilter,
    RunPage,
    attack_infos,
    dataset_versions,
    flips,
    run_page,
)

__all__ = ["Browsing"]


class _Sessions(Protocol):
    """What the browsing reads need of the store they are mixed into."""

    def session(self, *, write: bool = False) -> AbstractContextManager[Session]: ...

    def resolve(self, ref: str, *, session: Session | None = None) -> str: ...


class Browsing:
    """Paged, filtered reads for browsing (the viewer)."""

    def run_page(
        self: _Sessions,
        where: RunFilter | None = None,
        *,
        sort: str = "started",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
    ) -> RunPage:
        """One page of the runs matching ``where`` (:class:`RunFilter`; ``None``: all),
        sorted by ``sort`` (one of :data:`RUN_SORTS`), ``limit`` from ``offset``."""
        with self.session() as s:
            return run_page(s, where, sort=sort, descending=descending, offset=offset, limit=limit)

    def outcome_page(self: _Sessions, ref: str, **filters: Any) -> OutcomePage:
        """One page of run ``ref``'s samples with their outcomes, filtered by outcome
        kind, score range, text, category, tier, source, label, positions (the
        keyword arguments of :func:`shieldbench.store._read.outcome_page`)."""
        with self.session() as s:
            return outcome_page(s, self.resolve(ref, session=s), **filters)

    def outcome(self: _Sessions, ref: str, position: int) -> StoredOutcome:
        """Run ``ref``'s sample at ``position`` with its outcome."""
        with self.session() as s:
            return outcome_at(s, self.resolve(ref, session=s), position)

    def sample_facets(self: _Sessions, ref: str) -> dict[str, list[str]]:
        """The distinct categories, tiers and sources of run ``ref``'s samples."""
        with self.session() as s:
            return sample_facets(s, self.resolve(ref, session=s))

    def flips(self: _Sessions, ref_a: str, ref_b: str) -> tuple[Flip, ...]:
        """The samples whose verdict differs between two runs of the same samples."""
        with self.session() as s:
            return flips(s, self.resolve(ref_a, session=s), self.resolve(ref_b, session=s))

    def dataset_versions(self: _Sessions, *, limit: int = 500) -> tuple[DatasetVersion, ...]:
        """Every dataset version (content hash) measured, most recently measured first."""
        with self.session() as s:
            return dataset_versions(s, limit=limit)

    def attack_infos(self: _Sessions, *, limit: int = 200) -> tuple[AttackInfo, ...]:
        """The newest stored adaptive attacks, newest first, without their documents."""
        with self.session() as s:
            return attack_infos(s, limit=limit)
