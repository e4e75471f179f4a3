"""A defense's identity: its canonical spec and its version, never its display name.

Two runs measure the same defense when they agree on both: ``pattern`` and
``pattern(threshold=0.2)`` share the display name "pattern" but are two defenses;
``pattern`` before and after its rules changed are two versions of one spec, and
so two identities too. The history, the gate, the trend, the monitor and
``compare`` group, match and label runs by identity.

:func:`identity_labels` names a set of identities as briefly as is unambiguous:
the canonical spec alone, with the version added where two identities share a
spec.

Example:
    >>> a = DefenseIdentity.of("pattern( threshold = 0.2 )", "1.0")
    >>> a.spec, str(a)
    ('pattern(threshold=0.2)', 'pattern(threshold=0.2) version 1.0')
    >>> a == DefenseIdentity.of("pattern(threshold=0.2)", "1.0")
    True
    >>> identity_labels([DefenseIdentity.of("pattern", "1"), DefenseIdentity.of("pattern", "2"),
    ...                  DefenseIdentity.of("semantic", None)])
    ['pattern version 1', 'pattern version 2', 'semantic']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.errors import SpecError
from shieldbench.spec import canonical_spec

__all__ = ["DefenseIdentity", "identity_labels"]


@dataclass(frozen=True, slots=True)
class DefenseIdentity:
    """Which defense a run measured: canonical ``spec`` and declared ``version``."""

    spec: str
    version: str | None

    @classmethod
    def of(cls, spec: str, version: str | None) -> DefenseIdentity:
        """The identity of a recorded ``(spec, version)``; the spec made canonical (a
        spec that no longer parses, from an old run file, is kept as recorded)."""
        try:
            canonical = canonical_spec(spec)
        except SpecError:
            canonical = spec.strip()
        return cls(canonical, version)

    def __str__(self) -> str:
        return self.spec if self.version is None else f"{self.spec} version {self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "version": self.version}


def identity_labels(identities: Sequence[DefenseIdentity]) -> list[str]:
    """A label per identity: its spec, plus its version where another identity of the
    list has the same spec (and so the spec alone would not say which)."""
    versions: dict[str, set[str | None]] = {}
    for i in identities:
        versions.setdefault(i.spec, set()).add(i.version)
    return [i.spec if len(versions[i.spec]) == 1 else str(i) for i in identities]
