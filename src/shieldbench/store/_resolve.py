"""Run references, resolved by defense identity (canonical spec and version).

A reference names one run: an id (or a unique prefix of one),
``latest:DEFENSE@DATASET`` or ``tag:KEY=VALUE``. ``DEFENSE`` is a spec, matched by
its canonical form (``pattern( threshold = 0.2 )`` is ``pattern(threshold=0.2)``;
``pattern`` is *not* ``pattern(threshold=0.2)``); only when no stored run has that
spec is it read as a display name. ``DEFENSE==VERSION`` picks one version.

A reference whose runs are of more than one identity is refused with the list,
unless the caller says which identity it wants (``identity``): the gate passes the
candidate's, so ``tag:branch=main`` means "the newest main-branch run *of this
defense's spec*, on the candidate's data (``dataset_hash``)", of the candidate's
version when there is one (else of another version: comparing versions is what a
gate is for, and it prints both), or a refusal that says why there is none.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from shieldbench.errors import SpecError, StoreError
from shieldbench.identity import DefenseIdentity
from shieldbench.spec import canonical_spec
from shieldbench.store._models import RunRow
from shieldbench.store._runs import filtered

__all__ = ["defense_specs", "identity_of", "resolve_reference"]

_SCAN = 2000  # newest runs a reference looks at


def identity_of(row: RunRow) -> DefenseIdentity:
    return DefenseIdentity.of(row.defense_spec, row.defense_version)


def _canonical(text: str) -> str:
    try:
        return canonical_spec(text)
    except SpecError:
        return text.strip()


def defense_specs(session: Session, defense: str) -> list[str]:
    """The stored spec spellings that name ``defense``: those whose canonical spec is
    ``defense``'s; failing that, those whose display name is ``defense``."""
    pairs = session.execute(select(RunRow.defense_spec, RunRow.defense_name).distinct()).all()
    want = _canonical(defense)
    by_spec = sorted({spec for spec, _ in pairs if _canonical(spec) == want})
    return by_spec or sorted({spec for spec, name in pairs if name == defense.strip()})


def _describe(rows: Sequence[RunRow]) -> str:
    """``identity: N runs, newest ID`` for each identity among ``rows`` (newest first)."""
    groups: dict[DefenseIdentity, list[RunRow]] = {}
    for r in rows:
        groups.setdefault(identity_of(r), []).append(r)
    return "; ".join(
        f"{ident} on {found[0].dataset_spec} ({len(found)} run{'s' * (len(found) > 1)},"
        f" newest {found[0].run_id})"
        for ident, found in groups.items()
    )


def _one_identity(ref: str, rows: list[RunRow], prefer: DefenseIdentity | None) -> RunRow:
    """The newest of ``rows`` when they are of one identity; else the newest of
    ``prefer`` (or, failing that, of its spec: another version of the candidate's
    defense is what a gate compares it with); else a refusal listing them."""
    identities = list(dict.fromkeys(identity_of(r) for r in rows))
    if len(identities) == 1:
        return rows[0]
    if prefer is not None:
        exact = [r for r in rows if identity_of(r) == prefer]
        same_spec = [r for r in rows if identity_of(r).spec == prefer.spec]
        if exact or same_spec:
            return (exact or same_spec)[0]
    raise StoreError(
        f"{ref!r} matches runs of {len(identities)} defenses (a defense is its canonical spec"
        f" and version): {_describe(rows)}. Name one: latest:SPEC@DATASET with the spec shown"
        " (add ==VERSION for one version, e.g. latest:pattern==1.0@builtin:core) or a run id"
    )


def _latest(session: Session, ref: str) -> list[RunRow]:
    defense, at, dataset = ref[len("latest:") :].rpartition("@")
    if not at or not defense or not dataset:
        raise StoreError(f"{ref!r}: write latest:DEFENSE@DATASET, e.g. latest:pattern@builtin:core")
    version: str | None = None
    if "==" in defense:
        defense, _, version = defense.rpartition("==")
        if not defense or not version:
            raise StoreError(f"{ref!r}: write latest:SPEC==VERSION@DATASET, e.g. ...==1.0@...")
    specs = defense_specs(session, defense)
    rows = list(session.scalars(filtered(specs=specs, dataset=dataset).limit(_SCAN)))
    if version is not None:
        rows = [r for r in rows if r.defense_version == version]
    return rows


def _tagged(
    ref: str,
    rows: list[RunRow],
    identity: DefenseIdentity,
    dataset_hash: str | None,
) -> RunRow:
    """The newest tagged run of ``identity``'s spec on ``dataset_hash`` (of ``identity``
    itself when there is one), or a refusal saying why there is none."""
    mine = [r for r in rows if identity_of(r).spec == identity.spec]
    if not mine:
        raise StoreError(
            f"{ref!r} names no run of the candidate's defense {identity.spec}: the runs so"
            f" tagged are {_describe(rows)}. Tag a run of this defense, or name the baseline"
            " by run id or latest:SPEC@DATASET"
        )
    if dataset_hash is not None:
        same = [r for r in mine if r.dataset_hash == dataset_hash]
        if not same:
            hashes = ", ".join(dict.fromkeys(f"{r.dataset_spec} ({r.dataset_hash})" for r in mine))
            raise StoreError(
                f"{ref!r}: the runs of {identity.spec} so tagged are on other data ({hashes}),"
                f" not on the candidate's {dataset_hash}; paired checks need the same samples:"
                " run the baseline on this dataset version and tag it"
            )
        mine = same
    return _one_identity(ref, mine, identity)


def resolve_reference(
    session: Session,
    ref: str,
    *,
    dataset_hash: str | None = None,
    identity: DefenseIdentity | None = None,
) -> str | None:
    """The run id ``ref`` names when it is a ``latest:`` or ``tag:`` reference (``None``
    for anything else: an id to look up). See the module doc for the rules."""
    if ref.startswith("latest:"):
        rows = _latest(session, ref)
    elif ref.startswith("tag:"):
        key, eq, value = ref[len("tag:") :].partition("=")
        if not eq or not key:
            raise StoreError(f"{ref!r}: write tag:KEY=VALUE, e.g. tag:release=1.2")
        rows = list(session.scalars(filtered(tags={key: value}).limit(_SCAN)))
        if rows and identity is not None:
            return _tagged(ref, rows, identity, dataset_hash).run_id
    else:
        return None
    if not rows:
        raise StoreError(f"no stored run matches {ref!r}")
    same = [r for r in rows if dataset_hash is not None and r.dataset_hash == dataset_hash]
    return _one_identity(ref, same or rows, identity).run_id
