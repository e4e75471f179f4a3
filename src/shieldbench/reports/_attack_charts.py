"""Adaptive-attack charts: ASR against queries spent, and mutator success rates
(inline SVG, see :mod:`shieldbench.reports._charts`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shieldbench.reports._charts import MAX_ROWS, PALETTE, label, percent_formatter, render_svg

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from shieldbench.attacks import AttackResult

__all__ = ["asr_queries_chart", "mutator_chart"]


def asr_queries_chart(result: AttackResult, *, name: str = "attack-asr") -> str | None:
    """Cumulative ASR (all bypasses, and payload-preserving only) against search
    queries, the static ASR as the baseline and the end of each round marked."""
    points = [p for p in result.figures.curve if p.asr is not None]
    rounds = result.figures.rounds
    if not points and not rounds:
        return None
    static = result.figures.static_asr.value

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        if points:
            q = [int(p.queries) for p in points]
            ax.step(
                q,
                [float(p.asr) for p in points if p.asr is not None],
                where="post",
                color=PALETTE[1],
                label="adaptive ASR",
                linewidth=1.5,
            )
            pres = [p.preserving_asr for p in points]
            if any(v is not None for v in pres):
                ax.step(
                    q,
                    [np.nan if v is None else float(v) for v in pres],
                    where="post",
                    color=PALETTE[0],
                    linestyle="--",
                    label="payload-preserving ASR",
                    linewidth=1.3,
                )
        for r in rounds:
            if r.asr.value is not None:
                ax.errorbar(
                    [r.queries],
                    [r.asr.value],
                    yerr=[[r.asr.value - r.asr.ci_low], [r.asr.ci_high - r.asr.value]],
                    fmt="o",
                    color=PALETTE[1],
                    markersize=3,
                    capsize=2,
                    linewidth=0.8,
                )
        if static is not None:
            ax.axhline(
                static,
                color="#777777",
                linestyle=":",
                linewidth=1,
                label=f"static ASR {100 * static:.1f}%",
            )
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(percent_formatter())
        ax.set_xlabel("search queries spent (dots: end of each round, 95% interval)")
        ax.set_ylabel("attack success rate")
        ax.set_title("ASR against query budget", loc="left")
        ax.legend(loc="lower right", fontsize=7)

    return render_svg(name, (6.4, 3.4), draw)


def mutator_chart(result: AttackResult, *, name: str = "attack-mutators") -> str | None:
    """Success rate (bypasses / queries whose chain used it) per mutator with 95%
    intervals; blue keeps the payload readable, orange may hide it."""
    rows = [m for m in result.mutators if m.attempts > 0]
    if not rows:
        return None
    rows.sort(key=lambda m: (-(m.success_rate.value or 0.0), -m.attempts, m.name))
    rows = rows[:MAX_ROWS][::-1]
    size = (6.4, 1.0 + 0.22 * len(rows))

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        y = np.arange(len(rows))
        values = [m.success_rate.value or 0.0 for m in rows]
        err = np.array(
            [
                [max(0.0, v - m.success_rate.ci_low) for v, m in zip(values, rows, strict=True)],
                [max(0.0, m.success_rate.ci_high - v) for v, m in zip(values, rows, strict=True)],
            ]
        )
        colours = [PALETTE[0] if m.preserves_payload else PALETTE[1] for m in rows]
        ax.barh(
            y,
            values,
            xerr=err,
            color=colours,
            height=0.7,
            error_kw={"elinewidth": 0.7, "capsize": 2, "ecolor": "#333333"},
        )
        for yi, m in enumerate(rows):
            ax.text(
                min(1.0, m.success_rate.ci_high) + 0.01,
                yi,
                f"{m.bypasses}/{m.attempts}",
                va="center",
                fontsize=6,
            )
        ax.set_yticks(y, [label(f"{m.name} ({m.family})", 40) for m in rows])
        ax.set_xlim(0, 1.12)
        ax.xaxis.set_major_formatter(percent_formatter())
        ax.set_xlabel("success rate (bypasses / attempts), 95% interval")
        ax.set_title("Mutator success rates (blue: payload kept readable)", loc="left")

    return render_svg(name, size, draw)
