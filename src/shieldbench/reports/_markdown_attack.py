"""The adaptive-attack section of the Markdown report (see :mod:`._markdown`).

The only Markdown rendering of an attack result (``shieldbench attack`` writes it
as ``report.md``; ``attack.json`` keeps the data). It reads the typed
:class:`~shieldbench.reports._attack_view.AttackView`, so a saved ``attack.json``
renders exactly like a fresh result. Every value that comes from the data (specs,
sample ids, categories, mutator names, texts, and the counts and settings read from
a possibly hand-edited ``attack.json``) goes through ``md_text`` or ``md_table``;
only numbers we format ourselves are written unescaped.

Content, in order: provenance (attack id, start, strategy used and requested,
dataset hash, search settings, counts, query spend, time), the figures with their
intervals and counts, queries to the first bypass (any, payload-preserving), ASR
against queries spent, ASR after each round, every mutator tried (attempts,
bypasses, success rate, mean score drop), the compositions that bypassed, transfer
to other defenses, example bypasses (original and mutated text) and the settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shieldbench.metrics import Rate
from shieldbench.reports._attack_view import AttackView, MutatorRow
from shieldbench.reports._format import DASH, num, pct, rate_text
from shieldbench.reports._mdescape import Md, md_table, md_text

__all__ = ["CURVE_POINTS", "MAX_CHAINS_SHOWN", "attack_markdown"]

MAX_CHAINS_SHOWN = 20
CURVE_POINTS = 20


def _environment_lines(view: AttackView) -> list[str]:
    if not view.environment:
        return []
    items = "; ".join(f"{md_text(k)} {md_text(v)}" for k, v in sorted(view.environment.items()))
    return ["", f"Environment: {items}."]


def _rate_kn(r: Rate) -> Md:
    """``92.3% [75.9–97.9] (24/26)``: the rate, its interval, and the counts behind it."""
    return Md(f"{rate_text(r, n=False)} ({r.k}/{r.n})")


def _g(x: Any) -> str:
    """A number as ``%g``; anything else (a hand-edited file) as escaped text."""
    if x is None:
        return DASH
    return f"{x:g}" if isinstance(x, int | float) else md_text(x)


def _queries_text(q: Mapping[str, Any]) -> str:
    never = md_text(q.get("n_never", 0))
    if q.get("median") is None:
        return f"none found; {never} searched attacks held"
    return (
        f"median {_g(q.get('median'))} (IQR {_g(q.get('q1'))}–{_g(q.get('q3'))},"
        f" max {_g(q.get('max'))}) over {md_text(q.get('n_bypassed', 0))} bypassed attacks;"
        f" {never} never bypassed"
    )


def _provenance(view: AttackView) -> list[str]:
    c = view.counts
    st = {k: md_text(v) for k, v in view.settings.items()}
    policy = view.config.get("error_policy")
    return [
        "",
        f"## Adaptive attack on {md_text(view.defense.spec)}",
        "",
        f"Attack {md_text(view.id)}, started {view.started.isoformat(timespec='seconds')},"
        f" on defense {md_text(view.defense.name)}"
        f" version {md_text(view.defense.version or 'unknown')}"
        f" and dataset {md_text(view.dataset.spec)} ({md_text(view.dataset.content_hash)}):"
        f" strategy {md_text(view.strategy)} (requested {st.get('strategy')}),"
        f" budget {st.get('budget')} search queries over {st.get('rounds')} rounds,"
        f" seed {st.get('seed')}, chains up to {st.get('max_depth')} mutators.",
        *_environment_lines(view),
        "",
        f"{c.get('attacks', 0)} attack samples chosen ({c.get('excluded', 0)} excluded by"
        f" the error policy {md_text(policy)}, {c.get('static_errors', 0)} static errors);"
        f" {c.get('static_bypassed', 0)} got through unmodified, {c.get('targets', 0)} were"
        f" blocked and searched. Queries: static pass {c.get('static_queries', 0)}, search"
        f" {c.get('search_queries', 0)} of {st.get('budget')} ({c.get('errored_queries', 0)}"
        " errored; errors count against the budget and are never bypasses). Time in the"
        f" defense {view.defense_s:.1f} s, in the search loop {view.loop_s:.1f} s.",
    ]


def _figures(view: AttackView) -> list[str]:
    rates = (
        ("Static ASR (chosen attacks, unmodified)", view.static_asr),
        ("Adaptive ASR (after the search)", view.adaptive_asr),
        ("Adaptive ASR, payload-preserving bypasses only", view.preserving_asr),
        ("Searched attacks bypassed", view.target_bypass_rate),
    )
    rows: list[list[str | Md]] = [[name, _rate_kn(r)] for name, r in rates]
    for name, key in (
        ("Queries to first bypass", "bypass"),
        ("Queries to first payload-preserving bypass", "preserving"),
    ):
        rows.append([name, Md(_queries_text(view.queries_to_bypass.get(key, {})))])
    return ["", md_table(["Figure", "Value [95% interval] (k/n)"], rows)]


def _curve(view: AttackView) -> list[str]:
    """At most :data:`CURVE_POINTS` points of the curve, first and last kept, evenly
    spaced in between (every point is in the JSON report)."""
    curve = [p for p in view.curve if p.get("asr") is not None]
    if not curve:
        return []
    keep = sorted({round(i * (len(curve) - 1) / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)})
    rows: list[list[str | Md]] = [
        [
            str(p.get("queries")),
            f"{p.get('bypassed')} ({p.get('preserving_bypassed')})",
            Md(f"{pct(p['asr'])} ({pct(p.get('preserving_asr'))})"),
        ]
        for p in (curve[i] for i in keep)
    ]
    return [
        "",
        "ASR against search queries spent (cumulative; payload-preserving in brackets):",
        "",
        md_table(["Queries", "Attacks through", "ASR"], rows),
    ]


def _rounds(view: AttackView) -> list[str]:
    if not view.rounds:
        return []
    rows: list[list[str | Md]] = [
        [
            Md(str(r.round)),
            Md(str(r.queries)),
            Md(str(r.candidates)),
            Md(str(r.errors)),
            Md(str(r.active)),
            _rate_kn(r.asr),
            _rate_kn(r.preserving_asr),
        ]
        for r in view.rounds
    ]
    headers = ["Round", "Queries", "Candidates", "Errors", "Attacks searched", "ASR"]
    return [
        "",
        "ASR after each round (cumulative):",
        "",
        md_table([*headers, "Preserving ASR"], rows),
    ]


def _mutator_order(m: MutatorRow) -> tuple[float, int, str]:
    return (-(m.success_rate.value or 0.0), -m.bypasses, m.name)


def _mutators(view: AttackView) -> list[str]:
    if not view.mutators:
        return []
    rows: list[list[str | Md]] = [
        [
            m.name,
            m.family,
            "yes" if m.preserves_payload else "no",
            Md(str(m.bypasses)),
            Md(str(m.attempts)),
            Md(rate_text(m.success_rate, n=False)),
            Md(num(m.mean_score_drop)),
        ]
        for m in sorted(view.mutators, key=_mutator_order)
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


def _chains(view: AttackView) -> list[str]:
    if not view.chains:
        return ["", "Compositions that bypassed: none. No chain bypassed the defense."]
    lines = ["", "Compositions that bypassed:", ""]
    shown = view.chains[:MAX_CHAINS_SHOWN]
    lines.append(
        md_table(
            ["Chain", "Keeps payload", "Bypasses", "Attempts"],
            [
                [
                    " + ".join(map(str, ch.get("chain") or ())),
                    "yes" if ch.get("preserves_payload") else "no",
                    str(ch.get("bypasses")),
                    str(ch.get("attempts")),
                ]
                for ch in shown
            ],
        )
    )
    if len(view.chains) > len(shown):
        lines += ["", f"…and {len(view.chains) - len(shown)} more in the JSON report."]
    return lines


def _transfer(view: AttackView) -> list[str]:
    if not view.transfer:
        return ["", "Transfer: no other defense was given to replay the bypasses against."]
    return [
        "",
        "Transfer of the bypasses to other defenses: one bypass per bypassed attack (its"
        " payload-preserving one when there is one) replayed against each defense; the"
        " ASR of originals is the same attacks unmodified.",
        "",
        md_table(
            ["Defense", "Replayed", "Evaded", "Preserving evaded", "ASR of originals", "Errors"],
            [
                [
                    t.defense.spec,
                    Md(str(t.replayed)),
                    _rate_kn(t.evaded),
                    _rate_kn(t.preserving_evaded),
                    _rate_kn(t.original_asr),
                    Md(str(t.errors)),
                ]
                for t in view.transfer
            ],
        ),
    ]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text)} characters)"


def _example_bypasses(
    bypasses: Sequence[Mapping[str, Any]], per_category: int
) -> list[Mapping[str, Any]]:
    """Up to ``per_category`` bypasses of each category: payload-preserving first, then
    the lowest score after mutation (the clearest bypass), then the earliest found."""

    def key(b: Mapping[str, Any]) -> tuple[bool, float, float, str]:
        score, index = b.get("score_after"), b.get("query_index")
        return (
            not b.get("preserves_payload"),
            float(score) if isinstance(score, int | float) else float("inf"),
            float(index) if isinstance(index, int | float) else float("inf"),
            str(b.get("sample_id")),
        )

    by_category: dict[str, list[Mapping[str, Any]]] = {}
    for b in sorted(bypasses, key=key):
        by_category.setdefault(str(b.get("category")), []).append(b)
    return [b for c in sorted(by_category) for b in by_category[c][:per_category]]


def _bypasses(view: AttackView, *, examples: int, text_limit: int) -> list[str]:
    if not view.bypasses:
        return ["", "Bypasses: none found."]
    if examples <= 0:
        return []
    shown = _example_bypasses(view.bypasses, examples)
    rows: list[list[str | Md]] = [
        [
            str(b.get("sample_id")),
            str(b.get("category")),
            " + ".join(map(str, b.get("chain") or ())),
            "yes" if b.get("preserves_payload") else "no",
            Md(f"{num(b.get('score_before'))} → {num(b.get('score_after'))}"),
            f"{b.get('round')} · {b.get('queries')}",
            _cut(str(b.get("original_text", "")), text_limit),
            _cut(str(b.get("text", "")), text_limit),
        ]
        for b in shown
    ]
    headers = ["Sample", "Category", "Chain", "Keeps payload", "Score before → after"]
    return [
        "",
        f"Example bypasses ({len(shown)} of {len(view.bypasses)}; up to {examples} per attack"
        " category, payload-preserving first; round · queries spent on that attack):",
        "",
        md_table([*headers, "Round · queries", "Original text", "Mutated text"], rows),
    ]


def _settings(view: AttackView) -> list[str]:
    rows: list[list[str | Md]] = []
    for prefix, values in (("search", view.settings), ("engine", view.config)):
        for key, value in values.items():
            if isinstance(value, list | tuple):
                value = ", ".join(map(str, value)) or "all"
            rows.append([f"{prefix}: {key}", DASH if value is None else str(value)])
    return ["", "Settings of the attack:", "", md_table(["Setting", "Value"], rows)]


def attack_markdown(view: AttackView, *, examples: int, text_limit: int = 500) -> list[str]:
    """The adaptive-attack section as Markdown lines (see the module doc).

    ``examples`` bypasses are shown per attack category (all are in the JSON
    report); texts are cut to ``text_limit`` characters.
    """
    return [
        *_provenance(view),
        *_figures(view),
        *_curve(view),
        *_rounds(view),
        *_mutators(view),
        *_chains(view),
        *_transfer(view),
        *_bypasses(view, examples=examples, text_limit=text_limit),
        *_settings(view),
    ]
