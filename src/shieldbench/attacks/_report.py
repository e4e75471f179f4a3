"""Rendering an :class:`AttackResult`: Markdown, JSON files, and reading them back.

Attack texts are data: in tables they are HTML-escaped with ``|`` and newlines
neutralised; whole texts go in fenced code blocks whose fence is longer than any
backtick run inside, so nothing in a payload can end the block or become markup.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from shieldbench.attacks._records import CurvePoint
from shieldbench.attacks._result import AttackResult
from shieldbench.errors import RunError
from shieldbench.metrics import Rate

__all__ = [
    "attack_to_markdown",
    "format_asr",
    "load_attack",
    "save_attack",
    "write_attack_reports",
]

MAX_BYPASSES_SHOWN = 20
MAX_CHAINS_SHOWN = 20
MAX_CURVE_ROWS = 20
MAX_TEXT_CHARS = 600


def format_asr(r: Rate) -> str:
    """``80.0% [77.0–82.6] (614/768)``; ``– (0/0)`` when undefined."""
    if r.value is None:
        return f"– ({r.k}/{r.n})"
    return f"{100 * r.value:.1f}% [{100 * r.ci_low:.1f}–{100 * r.ci_high:.1f}] ({r.k}/{r.n})"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _row(*cells: object) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    lines = [_row(*header), "|" + "|".join("---" for _ in header) + "|"]
    lines.extend(_row(*r) for r in rows)
    return lines


def _fenced(text: str) -> list[str]:
    shown = text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " […]"
    longest = run = 0
    for c in shown:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", shown, fence]


def _score(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _thin(points: tuple[CurvePoint, ...], n: int) -> list[CurvePoint]:
    """At most ``n`` points, first and last kept, evenly spaced in between."""
    if len(points) <= n:
        return list(points)
    step = (len(points) - 1) / (n - 1)
    return [points[round(i * step)] for i in range(n)]


def attack_to_markdown(result: AttackResult) -> str:
    """The attack report as Markdown: summary, rounds, curve, mutators, transfer, bypasses."""
    s, c, f, m = result.settings, result.counts, result.figures, result.meta
    out = [
        f"# Adaptive attack: {_cell(result.defense.spec)} on {_cell(result.dataset.spec)}",
        "",
        f"Attack `{m.id}` · strategy **{m.strategy}** (requested {s.strategy}) · seed {s.seed}"
        f" · budget {s.budget} search queries over {s.rounds} rounds · max depth {s.max_depth}"
        f" · started {m.started.isoformat(timespec='seconds')}"
        f" · dataset hash `{result.dataset.content_hash}`",
        "",
        "## Summary",
        "",
        *_table(
            ("figure", "value [95% Wilson CI] (k/n)"),
            [
                ("static ASR (chosen attacks, unmodified)", format_asr(f.static_asr)),
                ("adaptive ASR (after the search)", format_asr(f.adaptive_asr)),
                ("adaptive ASR, payload-preserving bypasses only", format_asr(f.preserving_asr)),
                ("searched attacks bypassed", format_asr(f.target_bypass_rate)),
            ],
        ),
        "",
        f"{c.attacks} attack samples chosen ({c.excluded} excluded by the error policy"
        f" `{result.config.error_policy}`, {c.static_errors} static errors); {c.static_bypassed}"
        f" got through unmodified, {c.targets} were blocked and searched. Queries: static pass"
        f" {c.static_queries}, search {c.search_queries} of {s.budget} ({c.errored_queries}"
        " errored; errors count against the budget and are never bypasses).",
        "",
    ]
    for label, q in (
        ("first bypass", f.queries_to_bypass.bypass),
        ("first payload-preserving bypass", f.queries_to_bypass.preserving),
    ):
        if q.median is None:
            out.append(f"- Queries to {label}: none found; {q.n_never} searched attacks held.")
        else:
            out.append(
                f"- Queries to {label}: median {q.median:g} (IQR {q.q1:g}–{q.q3:g}, max {q.max})"
                f" over {q.n_bypassed} bypassed attacks; {q.n_never} never bypassed."
            )
    out += ["", "## ASR by round", ""]
    out += _table(
        ("round", "queries", "candidates", "errors", "attacks searched", "ASR", "preserving ASR"),
        [
            (r.round, r.queries, r.candidates, r.errors, r.active, format_asr(r.asr),
             format_asr(r.preserving_asr))
            for r in f.rounds
        ],
    )  # fmt: skip
    out += ["", "## ASR against search queries spent", ""]
    out += _table(
        ("queries", "attacks through", "ASR", "preserving ASR"),
        [
            (p.queries, p.bypassed, _pct(p.asr), _pct(p.preserving_asr))
            for p in _thin(f.curve, MAX_CURVE_ROWS)
        ],
    )
    out += ["", "## Mutators", ""]
    out.append(
        "A query *uses* every mutator in its chain. Score drop: mean fall of the defense's"
        " score when the mutator was the step just applied (beam / greedy search only)."
    )
    out.append("")
    out += _table(
        ("mutator", "family", "keeps payload", "attempts", "bypasses", "success", "score drop"),
        [
            (x.name, x.family, "yes" if x.preserves_payload else "no", x.attempts, x.bypasses,
             format_asr(x.success_rate), _score(x.mean_score_drop))
            for x in result.mutators
        ],
    )  # fmt: skip
    out += ["", "## Compositions that bypassed", ""]
    if f.chains:
        out += _table(
            ("chain", "keeps payload", "bypasses", "attempts"),
            [
                (" + ".join(ch.chain), "yes" if ch.preserves_payload else "no", ch.bypasses,
                 ch.attempts)
                for ch in f.chains[:MAX_CHAINS_SHOWN]
            ],
        )  # fmt: skip
        if len(f.chains) > MAX_CHAINS_SHOWN:
            out.append(f"\n…and {len(f.chains) - MAX_CHAINS_SHOWN} more in attack.json.")
    else:
        out.append("No chain bypassed the defense.")
    out += _transfer_section(result)
    out += _bypass_section(result)
    out += [
        "",
        "## Settings",
        "",
        "```json",
        json.dumps({"settings": s.to_dict(), "config": result.config.to_dict()}, indent=2),
        "```",
        "",
    ]
    return "\n".join(out)


def _transfer_section(result: AttackResult) -> list[str]:
    out = ["", "## Transfer", ""]
    if not result.transfer:
        out.append("No transfer defenses were given (`--transfer SPEC`).")
        return out
    out.append(
        "One bypass per bypassed attack (its payload-preserving one when there is one) replayed"
        " against each defense; the original ASR is the same attacks unmodified."
    )
    out.append("")
    out += _table(
        ("defense", "replayed", "replay ASR", "preserving replay ASR", "original ASR", "errors"),
        [
            (t.defense.spec, t.replayed, format_asr(t.evaded), format_asr(t.preserving_evaded),
             format_asr(t.original_asr), t.errors)
            for t in result.transfer
        ],
    )  # fmt: skip
    return out


def _bypass_section(result: AttackResult) -> list[str]:
    shown = result.bypasses[:MAX_BYPASSES_SHOWN]
    out = ["", f"## Bypasses ({len(shown)} of {len(result.bypasses)})", ""]
    if not shown:
        out.append("None found.")
        return out
    for b in shown:
        keep = "payload-preserving" if b.preserves_payload else "may hide the payload"
        out += [
            f"### {_cell(b.sample_id)} ({_cell(b.category)})",
            "",
            f"Chain `{' + '.join(b.chain)}` ({keep}) · score {_score(b.score_before)} →"
            f" {_score(b.score_after)} · round {b.round} · query {b.queries} on this attack",
            "",
            "Original:",
            "",
            *_fenced(b.original_text),
            "",
            "Mutated:",
            "",
            *_fenced(b.text),
            "",
        ]
    return out


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_attack(result: AttackResult, path: str | Path) -> Path:
    """Write ``result.to_dict()`` as JSON (atomically); returns the path."""
    target = Path(path)
    data = result.to_dict()
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a text: escape everything instead
        text = json.dumps(data, indent=2)
    _atomic_write(target, text + "\n")
    return target


def load_attack(path: str | Path) -> AttackResult:
    """Read an ``attack.json``; :class:`RunError` naming the file when it is not one."""
    source = Path(path)
    try:
        data: Any = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunError(f"{source}: cannot read the attack result: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise RunError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise RunError(f"{source}: expected a JSON object, got {type(data).__name__}")
    return AttackResult.from_dict(data, source=str(source))


def write_attack_reports(result: AttackResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``attack.json`` and ``attack.md`` into ``out_dir`` (created if needed)."""
    folder = Path(out_dir)
    paths = {"json": folder / "attack.json", "markdown": folder / "attack.md"}
    save_attack(result, paths["json"])
    _atomic_write(paths["markdown"], attack_to_markdown(result))
    return paths
