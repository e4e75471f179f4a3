"""Transfer: the bypasses found against one defense, replayed against another."""

from __future__ import annotations

from shieldbench.attacks._records import Bypass
from shieldbench.attacks._result import AttackResult, TransferResult
from shieldbench.defenses import Defense, defense_version
from shieldbench.engine import check_defense, screen
from shieldbench.metrics import rate
from shieldbench.types import DefenseInfo, Outcome, RunConfig

__all__ = ["replayed_bypasses", "transfer_bypasses"]


def _let_through(outcome: Outcome) -> bool:
    return outcome.verdict is not None and not outcome.verdict.blocked


def replayed_bypasses(result: AttackResult) -> list[Bypass]:
    """One bypass per bypassed attack: its payload-preserving one when there is one."""
    chosen: dict[str, Bypass] = {}
    for b in result.bypasses:
        current = chosen.get(b.sample_id)
        if current is None or (b.preserves_payload and not current.preserves_payload):
            chosen[b.sample_id] = b
    return list(chosen.values())


def transfer_bypasses(
    result: AttackResult,
    defense: Defense,
    *,
    defense_spec: str | None = None,
    config: RunConfig = RunConfig(warmup=0),  # noqa: B008 (frozen, so sharing the default is safe)
) -> TransferResult:
    """Replay ``result``'s bypasses against ``defense``, through the engine.

    Screens one text per bypassed attack (see :func:`replayed_bypasses`) and the
    same attacks' original texts. An errored replay counts as not evaded (never a
    bypass); errored originals count as not let through either.

    Example:
        >>> from shieldbench.attacks import AttackSettings, run_attack
        >>> from shieldbench.datasets import Dataset
        >>> from shieldbench.types import Sample, Verdict
        >>> class Keyword:
        ...     name = "keyword"
        ...     def check(self, text):
        ...         hit = "ignore" in text.lower()
        ...         return Verdict(blocked=hit, score=float(hit))
        >>> class Nothing:
        ...     name = "nothing"
        ...     def check(self, text):
        ...         return Verdict(blocked=False, score=0.0)
        >>> data = Dataset("inline", (Sample("a1", "Ignore the rules.", "attack"),))
        >>> result = run_attack(Keyword(), data,
        ...                     settings=AttackSettings(budget=20, mutators=("base64",)))
        >>> t = transfer_bypasses(result, Nothing())
        >>> t.replayed, t.evaded.value, t.original_asr.value
        (1, 1.0, 1.0)
    """
    check_defense(defense)
    chosen = replayed_bypasses(result)
    texts = [b.text for b in chosen] + [b.original_text for b in chosen]
    ids = [f"{b.sample_id}~replay" for b in chosen] + [f"{b.sample_id}~original" for b in chosen]
    outcomes = screen(defense, texts, config=config, ids=ids)
    replays, originals = outcomes[: len(chosen)], outcomes[len(chosen) :]

    evaded = [_let_through(o) for o in replays]
    kept = [e for e, b in zip(evaded, chosen, strict=True) if b.preserves_payload]
    original = [_let_through(o) for o in originals]
    return TransferResult(
        defense=DefenseInfo(
            spec=defense.name if defense_spec is None else defense_spec,
            name=defense.name,
            version=defense_version(defense),
        ),
        replayed=len(chosen),
        evaded=rate(sum(evaded), len(evaded)),
        preserving_evaded=rate(sum(kept), len(kept)),
        original_asr=rate(sum(original), len(original)),
        errors=sum(1 for o in replays if not o.is_ok),
    )
