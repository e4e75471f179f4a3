"""``build_defense``: a spec string to a defense, through the registry.

Its own module so that composites (``compose``), which build their children from
nested specs, import it without importing the package that imports them.
"""

from __future__ import annotations

from shieldbench.defenses._protocol import Defense
from shieldbench.errors import SpecError
from shieldbench.registry import defenses as registry
from shieldbench.spec import Spec

__all__ = ["build_defense"]


def build_defense(spec: str | Spec) -> Defense:
    """Build the defense a spec string names (see ``shieldbench defenses list``)."""
    obj = registry.create(spec)
    if not isinstance(obj, Defense):
        text = spec if isinstance(spec, str) else spec.text
        raise SpecError(
            f"{text!r} built a {type(obj).__name__}, which is not a Defense"
            " (it needs a 'name' attribute and a 'check(text) -> Verdict' method)"
        )
    return obj
