"""``recommended-next``: ``any(pattern, shieldguard)``, the candidate successor of ``recommended``.

It is not the default: ``recommended`` changes only after the candidate wins a paired
(McNemar) comparison with it on rows neither was tuned on (docs/models/shieldguard.md).
"""

from __future__ import annotations

from shieldbench.defenses.compose._combinators import Vote
from shieldbench.defenses.models.shieldguard._defense import INSTALL_HINT, ShieldGuardDefense
from shieldbench.errors import SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec

__all__ = ["RECOMMENDED_NEXT", "build_recommended_next"]

RECOMMENDED_NEXT = "any(pattern, shieldguard)"


def build_recommended_next() -> Vote:
    """``any(pattern, shieldguard)`` named ``recommended-next``."""
    from shieldbench.defenses.rules._pattern import PatternDefense

    pipeline = Vote([PatternDefense(), ShieldGuardDefense()], k=1, kind="any")
    pipeline.name = "recommended-next"
    return pipeline


@defenses.register(
    "recommended-next",
    description=f"Candidate successor of recommended: {RECOMMENDED_NEXT}.",
    usage="recommended-next",
    requires=("onnxruntime", "tokenizers", "numpy"),
    install_hint=INSTALL_HINT,
    example="recommended-next",
)
def _recommended_next(spec: Spec) -> Vote:
    if spec.args or spec.kwargs:
        raise SpecError(f"{spec.text!r}: recommended-next takes no options; use {RECOMMENDED_NEXT}")
    return build_recommended_next()
