"""The adaptive-attack section of the Markdown report (see :mod:`._markdown`).

The only Markdown rendering of an attack result (``shieldbench attack`` writes it
as ``report.md``; ``attack.json`` keeps the data). It reads the typed
:class:`~shieldbench.attacks.AttackResult` record itself, so a saved ``attack.json``
renders exactly like a fresh result; the tables it shares with the HTML report
come from :mod:`._attack_section` (one row model, :mod:`._rows`). Every value that
comes from the data (specs, sample ids, categories, mutator names, texts, and the
counts and settings read from a possibly hand-edited ``attack.json``) goes through
``md_text`` or ``md_table``; only numbers we format ourselves are written unescaped.

Content, in order: provenance (attack id, start, strategy used and requested,
dataset hash, search settings, counts, query spend, time), the figures with their
intervals and counts, queries to the first bypass (any, payload-preserving), ASR
against queries spent, ASR after each round, every mutator tried (attempts,
bypasses, success rate, mean score drop), the compositions that bypassed, transfer
to other defenses, example bypasses (original and mutated text) and the settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shieldbench.reports._attack_section import (
    MAX_CHAINS_SHOWN,
    chains_table,
    rounds_table,
    transfer_table,
)
from shieldbench.reports._format import DASH, num, pct, rate_text
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.reports._rows import table_markdown

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, Bypass, MutatorStats, QueryStats
    from shieldbench.metrics import Rate

__all__ = ["CURVE_POINTS", "MAX_CHAINS_SHOWN", "attack_markdown"]

CURVE_POINTS = 20


def _environment_lines(r: AttackResult) -> list[str]:
    env = r.meta.environment
    if not env:
        return []
    items = "; ".join(f"{md_text(k)} {md_text(v)}" for k, v in sorted(env.items()))
    return ["", f"Environment: {items}."]


def _rate_kn(r: Rate) -> Md:
    """``92.3% [75.9–97.9] (24/26)``: the rate, its interval, and the counts behind it."""
    return Md(f"{rate_text(r, n=False)} ({r.k}/{r.n})")


def _g(x: Any) -> str:
    """A number as ``%g``; anything else (a hand-edited file) as escaped text."""
    if x is None:
        return DASH
    return f"{x:g}" if isinstance(x, int | float) and not isinstance(x, bool) else md_text(x)


def _queries_text(q: QueryStats) -> str:
    never = _g(q.n_never)
    if q.median is None:
        return f"none found; {never} searched attacks held"
    return (
        f"median {_g(q.median)} (IQR {_g(q.q1)}–{_g(q.q3)},"
        f" max {_g(q.max)}) over {_g(q.n_bypassed)} bypassed attacks;"
        f" {never} never bypassed"
    )


def _provenance(r: AttackResult) -> list[str]:
    c, m = r.counts, r.meta
    st = {k: md_text(v) for k, v in r.settings.to_dict().items()}
    return [
        "",
        f"## Adaptive attack on {md_text(r.defense.spec)}",
        "",
        f"Attack {md_text(m.id)}, started {m.started.isoformat(timespec='seconds')},"
        f" on defense {md_text(r.defense.name)}"
        f" version {md_text(r.defense.version or 'unknown')}"
        f" and dataset {md_text(r.dataset.spec)} ({md_text(r.dataset.content_hash)}):"
        f" strategy {md_text(m.strategy)} (requested {st.get('strategy')}),"
        f" budget {st.get('budget')} search queries over {st.get('rounds')} rounds,"
        f" seed {st.get('seed')}, chains up to {st.get('max_depth')} mutators.",
        *_environment_lines(r),
        "",
        f"{_g(c.attacks)} attack samples chosen ({_g(c.excluded)} excluded by"
        f" the error policy {md_text(r.config.error_policy)}, {_g(c.static_errors)} static"
        f" errors); {_g(c.static_bypassed)} got through unmodified, {_g(c.targets)} were"
        f" blocked and searched. Queries: static pass {_g(c.static_queries)}, search"
        f" {_g(c.search_queries)} of {st.get('budget')} ({_g(c.errored_queries)}"
        " errored; errors count against the budget and are never bypasses). Time in the"
        f" defense {m.defense_s:.1f} s, in the search loop {m.loop_s:.1f} s.",
    ]


def _figures(r: AttackResult) -> list[str]:
    f = r.figures
    rates = (
        ("Static ASR (chosen attacks, unmodified)", f.static_asr),
        ("Adaptive ASR (after the search)", f.adaptive_asr),
        ("Adaptive ASR, payload-preserving bypasses only", f.preserving_asr),
        ("Searched attacks bypassed", f.target_bypass_rate),
    )
    rows: list[list[str | Md]] = [[name, _rate_kn(rt)] for name, rt in rates]
    q = f.queries_to_bypass
    rows.append(["Queries to first bypass", Md(_queries_text(q.bypass))])
    rows.append(["Queries to first payload-preserving bypass", Md(_queries_text(q.preserving))])
    return ["", md_table(["Figure", "Value [95% interval] (k/n)"], rows)]


def _curve(r: AttackResult) -> list[str]:
    """At most :data:`CURVE_POINTS` points of the curve, first and last kept, evenly
    spaced in between (every point is in the JSON report)."""
    curve = [p for p in r.figures.curve if p.asr is not None]
    if not curve:
        return []
    keep = sorted({round(i * (len(curve) - 1) / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)})
    rows: list[list[str | Md]] = [
        [
            _g(p.queries),
            f"{_g(p.bypassed)} ({_g(p.preserving_bypassed)})",
            Md(f"{pct(p.asr)} ({pct(p.preserving_asr)})"),
        ]
        for p in (curve[i] for i in keep)
    ]
    return [
        "",
        "ASR against search queries spent (cumulative; payload-preserving in brackets):",
        "",
        md_table(["Queries", "Attacks through", "ASR"], rows),
    ]


def _rounds(r: AttackResult) -> list[str]:
    if not r.figures.rounds:
        return []
    return ["", "ASR after each round (cumulative):", "", table_markdown(rounds_table(r))]


def _mutator_order(m: MutatorStats) -> tuple[float, int, str]:
    return (-(m.success_rate.value or 0.0), -m.bypasses, m.name)


def _mutators(r: AttackResult) -> list[str]:
    if not r.mutators:
        return []
    rows: list[list[str | Md]] = [
        [
            m.name,
            m.family,
            "yes" if m.preserves_payload else "no",
            Md(_g(m.bypasses)),
            Md(_g(m.attempts)),
            Md(rate_text(m.success_rate, n=False)),
            Md(num(m.mean_score_drop)),
        ]
        for m in sorted(r.mutators, key=_mutator_order)
    ]
    headers = ["Mutator", "Family", "Keeps payload", "Bypasses", "Attempts", "Success rate"]
    return [
        "",
        "Mutators (bypasses / queries whose chain used them; a query uses every mutator in"
        " its chain). Score drop: mean fall of the defense's score when the mutator was the"
        " step just applied (beam / greedy search only).",
        "",
        md_table([*headers, "Score drop"], rows),
    ]


def _chains(r: AttackResult) -> list[str]:
    chains = r.figures.chains
    if not chains:
        return ["", "Compositions that bypassed: none. No chain bypassed the defense."]
    lines = ["", "Compositions that bypassed:", "", table_markdown(chains_table(r))]
    if len(chains) > MAX_CHAINS_SHOWN:
        lines += ["", f"…and {len(chains) - MAX_CHAINS_SHOWN} more in the JSON report."]
    return lines


def _transfer(r: AttackResult) -> list[str]:
    if not r.transfer:
        return ["", "Transfer: no other defense was given to replay the bypasses against."]
    return [
        "",
        "Transfer of the bypasses to other defenses: one bypass per bypassed attack (its"
        " payload-preserving one when there is one) replayed against each defense; the"
        " ASR of originals is the same attacks unmodified.",
        "",
        table_markdown(transfer_table(r)),
    ]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text)} characters)"


def _number(x: object) -> float:
    return float(x) if isinstance(x, int | float) else float("inf")


def example_bypasses(bypasses: tuple[Bypass, ...], per_category: int) -> list[Bypass]:
    """Up to ``per_category`` bypasses of each category: payload-preserving first, then
    the lowest score after mutation (the clearest bypass), then the earliest found."""

    def key(b: Bypass) -> tuple[bool, float, float, str]:
        return (
            not b.preserves_payload,
            _number(b.score_after),
            _number(b.query_index),
            str(b.sample_id),
        )

    by_category: dict[str, list[Bypass]] = {}
    for b in sorted(bypasses, key=key):
        by_category.setdefault(str(b.category), []).append(b)
    return [b for c in sorted(by_category) for b in by_category[c][:per_category]]


def _bypasses(r: AttackResult, *, examples: int, text_limit: int) -> list[str]:
    if not r.bypasses:
        return ["", "Bypasses: none found."]
    if examples <= 0:
        return []
    shown = example_bypasses(r.bypasses, examples)
    rows: list[list[str | Md]] = [
        [
            str(b.sample_id),
            str(b.category),
            " + ".join(map(str, b.chain)),
            "yes" if b.preserves_payload else "no",
            Md(f"{num(_real(b.score_before))} → {num(_real(b.score_after))}"),
            f"{b.round} · {b.queries}",
            _cut(str(b.original_text), text_limit),
            _cut(str(b.text), text_limit),
        ]
        for b in shown
    ]
    headers = ["Sample", "Category", "Chain", "Keeps payload", "Score before → after"]
    return [
        "",
        f"Example bypasses ({len(shown)} of {len(r.bypasses)}; up to {examples} per attack"
        " category, payload-preserving first; round · queries spent on that attack):",
        "",
        md_table([*headers, "Round · queries", "Original text", "Mutated text"], rows),
    ]


def _real(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _settings(r: AttackResult) -> list[str]:
    rows: list[list[str | Md]] = []
    for prefix, values in (("search", r.settings.to_dict()), ("engine", r.config.to_dict())):
        for key, value in values.items():
            if isinstance(value, list | tuple):
                value = ", ".join(map(str, value)) or "all"
            rows.append([f"{prefix}: {key}", DASH if value is None else str(value)])
    return ["", "Settings of the attack:", "", md_table(["Setting", "Value"], rows)]


def attack_markdown(result: AttackResult, *, examples: int, text_limit: int = 500) -> list[str]:
    """The adaptive-attack section as Markdown lines (see the module doc).

    ``examples`` bypasses are shown per attack category (all are in the JSON
    report); texts are cut to ``text_limit`` characters.
    """
    return [
        *_provenance(result),
        *_figures(result),
        *_curve(result),
        *_rounds(result),
        *_mutators(result),
        *_chains(result),
        *_transfer(result),
        *_bypasses(result, examples=examples, text_limit=text_limit),
        *_settings(result),
    ]
