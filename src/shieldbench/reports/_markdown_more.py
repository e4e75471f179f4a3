"""Markdown sections for comparisons and adaptive attacks (see :mod:`._markdown`)."""

from __future__ import annotations

from shieldbench.metrics import PairedMetric
from shieldbench.reports._attack_view import AttackView
from shieldbench.reports._format import DASH, est_text, num, p_text, pct, rate_text
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.reports._model import DatasetGroup

__all__ = ["attack_markdown", "comparison_markdown", "paired_difference_text"]


def paired_difference_text(m: PairedMetric) -> str:
    """``a - b`` in percentage points with its paired interval."""
    d = m.difference
    if d.estimate is None:
        return DASH
    return f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"


def comparison_markdown(group: DatasetGroup) -> list[str]:
    """Leaderboard, pairwise verdicts and non-inferiority of one dataset group."""
    title = f"## Comparison on {md_text(group.dataset.spec)}"
    if group.comparison is None:
        if group.comparison_note is None:
            return []
        return ["", title, "", md_text(group.comparison_note)]
    cmp = group.comparison
    s = cmp.settings
    board: list[list[str | Md]] = []
    for e in cmp.leaderboard:
        r = e.summary.rates
        sc = e.summary.scores
        board.append(
            [
                Md(str(e.rank)),
                e.label,
                Md(rate_text(r.block_rate)),
                Md(rate_text(r.false_positive_rate)),
                Md(est_text(r.balanced_accuracy)),
                Md(DASH if sc is None else est_text(sc.roc_auc)),
                Md(est_text(e.summary.operations.latency.p50, digits=2)),
            ]
        )
    pairs: list[list[str | Md]] = []
    for pair in cmp.pairs:
        verdicts = {v.metric: v for v in pair.verdicts}
        for m in (pair.attacks, pair.benign):
            v = verdicts[m.metric]
            t = m.table
            pairs.append(
                [
                    pair.a,
                    pair.b,
                    m.metric.replace("_", " "),
                    Md(rate_text(m.rate_a, n=False)),
                    Md(rate_text(m.rate_b, n=False)),
                    Md(paired_difference_text(m)),
                    Md(f"{t.only_a} / {t.only_b}"),
                    m.test.method,
                    Md(p_text(v.p_value)),
                    Md(p_text(v.p_adjusted)),
                    Md(f"**{v.verdict}**" if v.verdict.startswith("signif") else v.verdict),
                ]
            )
        if pair.auc is not None and pair.auc.difference is not None and "roc_auc" in verdicts:
            v = verdicts["roc_auc"]
            pairs.append(
                [
                    pair.a,
                    pair.b,
                    "ROC-AUC",
                    Md(est_text(pair.auc.auc_a, digits=3)),
                    Md(est_text(pair.auc.auc_b, digits=3)),
                    Md(f"{pair.auc.difference:+.3f}"),
                    Md(DASH),
                    "DeLong (paired)",
                    Md(p_text(v.p_value)),
                    Md(p_text(v.p_adjusted)),
                    Md(f"**{v.verdict}**" if v.verdict.startswith("signif") else v.verdict),
                ]
            )
    lines = [
        "",
        title,
        "",
        f"Content hash {md_text(cmp.content_hash)}; error policy {md_text(s.policy)};"
        f" ranked by {md_text(s.rank_by.replace('_', ' '))}. Paired tests on the same samples"
        f" (McNemar: exact below 25 discordant pairs, else chi-square with continuity"
        f" correction; DeLong for ROC-AUC); {md_text(s.correction)} correction over all"
        f' comparisons at alpha {s.alpha:g}. Verdicts read "a is … than b".',
        "",
        md_table(
            ["#", "Defense", "Block rate", "FPR", "Balanced acc.", "ROC-AUC", "p50 ms"], board
        ),
        "",
        md_table(
            [
                "a",
                "b",
                "Metric",
                "a",
                "b",
                "a − b (points)",
                "Discordant only a / only b",
                "Test",
                "p",
                "p adj.",
                "Verdict",
            ],
            pairs,
        ),
    ]
    if cmp.non_inferiority:
        rows: list[list[str | Md]] = []
        for row in cmp.non_inferiority:
            res = row.result
            rows.append(
                [
                    row.candidate,
                    row.metric.replace("_", " "),
                    Md(DASH if res.difference is None else f"{100 * res.difference:+.1f} points"),
                    Md(f"{100 * res.bound:+.1f}"),
                    Md(p_text(row.p_adjusted)),
                    Md("**non-inferior**" if row.non_inferior else "not shown non-inferior"),
                ]
            )
        lines += [
            "",
            f"Non-inferiority against the baseline {md_text(cmp.runs[0])}"
            f" (margin {100 * (s.margin or 0):g} points):",
            "",
            md_table(
                ["Candidate", "Metric", "Candidate − baseline", "Bound", "p adj.", "Result"], rows
            ),
        ]
    return lines


def attack_markdown(view: AttackView, *, examples: int) -> list[str]:
    """The adaptive-attack section: figures, rounds, mutators, transfer, bypasses."""
    c = view.counts
    qtb = view.queries_to_bypass.get("bypass", {})
    st = view.settings
    lines = [
        "",
        f"## Adaptive attack on {md_text(view.defense.spec)}",
        "",
        f"Dataset {md_text(view.dataset.spec)} ({md_text(view.dataset.content_hash)});"
        f" strategy {md_text(view.strategy)}, budget {st.get('budget')} queries over"
        f" {st.get('rounds')} rounds, seed {st.get('seed')}, chains up to"
        f" {st.get('max_depth')} mutators. {c.get('attacks', 0)} attacks chosen,"
        f" {c.get('targets', 0)} blocked and searched; {c.get('search_queries', 0)} search"
        f" queries ({c.get('errored_queries', 0)} errored) after {c.get('static_queries', 0)}"
        f" static ones. Time in the defense {view.defense_s:.1f} s, in the search loop"
        f" {view.loop_s:.1f} s.",
        "",
        md_table(
            ["Figure", "Value"],
            [
                ["Static ASR (no mutation)", Md(rate_text(view.static_asr))],
                ["Adaptive ASR (after the search)", Md(rate_text(view.adaptive_asr))],
                [
                    "Adaptive ASR, payload-preserving bypasses only",
                    Md(rate_text(view.preserving_asr)),
                ],
                ["Searched attacks bypassed", Md(rate_text(view.target_bypass_rate))],
                [
                    "Queries to first bypass: median [q1–q3]",
                    Md(
                        f"{num(qtb.get('median'), digits=1)} [{num(qtb.get('q1'), digits=1)}–"
                        f"{num(qtb.get('q3'), digits=1)}]; {qtb.get('n_never', 0)} never bypassed"
                    ),
                ],
            ],
        ),
    ]
    curve = [p for p in view.curve if p.get("asr") is not None]
    if curve:
        keep = sorted({round(i * (len(curve) - 1) / 9) for i in range(10)})
        lines += [
            "",
            "ASR against search queries spent (cumulative; payload-preserving in brackets):",
            "",
            md_table(
                ["Queries", *(Md(str(curve[i]["queries"])) for i in keep)],
                [
                    [
                        "ASR",
                        *(
                            Md(f"{pct(curve[i]['asr'])} ({pct(curve[i].get('preserving_asr'))})")
                            for i in keep
                        ),
                    ]
                ],
            ),
        ]
    if view.rounds:
        rows: list[list[str | Md]] = [
            [
                Md(str(r.round)),
                Md(str(r.queries)),
                Md(str(r.candidates)),
                Md(str(r.errors)),
                Md(str(r.active)),
                Md(rate_text(r.asr, n=False)),
                Md(rate_text(r.preserving_asr, n=False)),
            ]
            for r in view.rounds
        ]
        lines += [
            "",
            "ASR after each round (cumulative):",
            "",
            md_table(
                ["Round", "Queries", "Candidates", "Errors", "Active", "ASR", "Preserving ASR"],
                rows,
            ),
        ]
    worked = view.worked()
    if worked:
        lines += [
            "",
            "Mutators that worked (bypasses / queries whose chain used them):",
            "",
            md_table(
                ["Mutator", "Family", "Keeps payload", "Bypasses", "Attempts", "Success rate"],
                [
                    [
                        m.name,
                        m.family,
                        "yes" if m.preserves_payload else "no",
                        Md(str(m.bypasses)),
                        Md(str(m.attempts)),
                        Md(rate_text(m.success_rate, n=False)),
                    ]
                    for m in worked
                ],
            ),
        ]
    if view.transfer:
        lines += [
            "",
            "Transfer of the bypasses to other defenses:",
            "",
            md_table(
                [
                    "Defense",
                    "Replayed",
                    "Evaded",
                    "Preserving evaded",
                    "ASR of originals",
                    "Errors",
                ],
                [
                    [
                        t.defense.spec,
                        Md(str(t.replayed)),
                        Md(rate_text(t.evaded, n=False)),
                        Md(rate_text(t.preserving_evaded, n=False)),
                        Md(rate_text(t.original_asr, n=False)),
                        Md(str(t.errors)),
                    ]
                    for t in view.transfer
                ],
            ),
        ]
    if view.bypasses and examples > 0:
        shown = sorted(view.bypasses, key=lambda b: (not b.get("preserves_payload"),))[:examples]
        lines += [
            "",
            f"Example bypasses ({len(shown)} of {len(view.bypasses)}; payload-preserving first):",
            "",
            md_table(
                ["Sample", "Category", "Chain", "Keeps payload", "Score before → after", "Text"],
                [
                    [
                        str(b.get("sample_id")),
                        str(b.get("category")),
                        " + ".join(map(str, b.get("chain") or ())),
                        "yes" if b.get("preserves_payload") else "no",
                        Md(f"{num(b.get('score_before'))} → {num(b.get('score_after'))}"),
                        _cut(str(b.get("text", "")), 300),
                    ]
                    for b in shown
                ],
            ),
        ]
    return lines


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text)} characters)"
