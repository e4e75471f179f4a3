"""Samples that changed between runs on the same data, for the reports.

A :class:`FlipSection` is one :func:`~shieldbench.metrics.verdict_flips` result with
the report labels of its two runs (each run against the first of its dataset
group). JSON carries every flip (texts cut to the report's ``text_limit``);
Markdown shows the counts and the top :data:`MARKDOWN_TOP` flips of each kind
(worse first, then the largest score change); HTML the first :data:`HTML_TOP` of
each kind in a table per kind (texts cut to :data:`HTML_TEXT` characters, escaped
by the template's autoescape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.metrics import FLIP_KINDS, VerdictFlips, verdict_flips
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.types import Run

__all__ = [
    "HTML_TEXT",
    "HTML_TOP",
    "KIND_TITLES",
    "MARKDOWN_TOP",
    "FlipSection",
    "flip_sections",
    "flips_markdown",
    "side_text",
]

MARKDOWN_TOP = 10
HTML_TOP = 50  # per kind; the page stays small, report.json has every flip
HTML_TEXT = 200
KIND_TITLES: dict[str, str] = {
    "blocked_to_allowed": "blocked → allowed",
    "allowed_to_blocked": "allowed → blocked",
    "ok_to_failed": "answered → error / timeout",
    "failed_to_ok": "error / timeout → answered",
}


@dataclass(frozen=True, slots=True)
class FlipSection:
    """The flips from the run labelled ``a`` to the run labelled ``b``."""

    a: str
    b: str
    flips: VerdictFlips

    def to_dict(self, *, text_limit: int | None = None) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, **self.flips.to_dict(text_limit=text_limit)}


def flip_sections(runs: Sequence[Run], labels: Sequence[str]) -> tuple[FlipSection, ...]:
    """Each run against the first (runs on the same data, as labelled in the report)."""
    return tuple(
        FlipSection(labels[0], labels[k], verdict_flips(runs[0], runs[k]))
        for k in range(1, len(runs))
    )


def side_text(status: str, blocked: bool | None, score: float | None, error: str | None) -> str:
    """One run's side of a flip: ``blocked 0.912``, or the status and its error."""
    if blocked is None:
        return status + (f": {error}" if error else "")
    return ("blocked" if blocked else "allowed") + ("" if score is None else f" {score:.3f}")


def flips_markdown(
    sections: tuple[FlipSection, ...], *, dataset: str, text_limit: int
) -> list[str]:
    """The "Samples that changed" section of one dataset group (nothing for one run)."""
    if not sections:
        return []
    lines: list[str] = ["", f"## Samples that changed on {md_text(dataset)}"]
    for sec in sections:
        f = sec.flips
        counts = f.counts()
        lines += [
            "",
            f"### {md_text(sec.a)} → {md_text(sec.b)}",
            "",
            f"Over {f.n_common} samples in both runs: "
            + ", ".join(f"{counts[k]} {KIND_TITLES[k]}" for k in FLIP_KINDS)
            + (
                f"; {f.n_only_a + f.n_only_b + f.n_mismatched} in one run only or changed"
                " (not compared)"
                if f.n_only_a + f.n_only_b + f.n_mismatched
                else ""
            )
            + ". A change to or from an error / timeout is listed as such, never as a"
            " block or an allow. Worse / better: for the second run.",
        ]
        for kind in FLIP_KINDS:
            found = f.of_kind(kind)
            if not found:
                continue
            rows: list[list[str | Md]] = [
                [
                    x.sample_id,
                    f"{x.label} / {x.category or '–'}",
                    side_text(x.status_a, x.blocked_a, x.score_a, x.error_a),
                    side_text(x.status_b, x.blocked_b, x.score_b, x.error_b),
                    x.effect or "–",
                    x.preview(min(text_limit, 120)),
                ]
                for x in found[:MARKDOWN_TOP]
            ]
            shown = min(MARKDOWN_TOP, len(found))
            verdicts = kind in ("blocked_to_allowed", "allowed_to_blocked")
            order = ": worse first, then by score change" if verdicts else ""
            lines += [
                "",
                f"**{KIND_TITLES[kind]}** ({len(found)}; top {shown}{order}):",
                "",
                md_table(["Sample", "Label / category", "a", "b", "For b", "Text"], rows),
            ]
    return lines
