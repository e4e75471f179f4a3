"""The gate's answer for people and CI: one line per check, JUnit XML, Markdown."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from shieldbench.gate._checks import GateCheck, GateResult
from shieldbench.identity import identity_labels

__all__ = [
    "check_line",
    "defense_labels",
    "figure",
    "junit_xml",
    "limit",
    "markdown_summary",
]


def _num(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    if unit == "points":
        return f"{100 * x:+.2f} points"
    if unit == "ms":
        return f"{x:.2f} ms"
    if unit == "x":
        return f"{x:.3f}x"
    return f"{100 * x:.2f}%"


def figure(c: GateCheck) -> str:
    """The figure and the bound that was compared, e.g. ``-0.40 points (bound -1.89)``."""
    if c.comparison == "p>=":
        return _num(c.value, c.unit)
    text = _num(c.value, c.unit)
    if c.bound is not None and c.bound != c.value:
        text += f" (bound {_num(c.bound, c.unit)})"
    return text


def limit(c: GateCheck) -> str:
    if c.comparison == "p>=":
        return f"p ≥ {c.limit:g}"
    return f"{c.comparison} {_num(c.limit, c.unit)}"


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def check_line(c: GateCheck) -> str:
    """``PASS name: figure, limit; test; p=...``"""
    verdict = "PASS" if c.passed else "FAIL"
    note = f"; {c.note}" if c.note else ""
    return f"{verdict} {c.name}: {figure(c)}, limit {limit(c)}; {c.test}; p={_p(c.p_value)}{note}"


def junit_xml(result: GateResult) -> str:
    """A JUnit report: one ``testcase`` per check, a ``failure`` for each failed one."""
    failures = len(result.failed)
    suites = ET.Element(
        "testsuites", name="shieldbench gate", tests=str(len(result.checks)), failures=str(failures)
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"shieldbench gate: {result.candidate} vs {result.baseline}",
        tests=str(len(result.checks)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    props = ET.SubElement(suite, "properties")
    cand_label, base_label = defense_labels(result)
    for key, value in (
        ("candidate", result.candidate),
        ("candidate_defense", cand_label),
        ("baseline", result.baseline),
        ("baseline_defense", base_label),
        ("dataset", result.dataset),
        ("content_hash", result.content_hash),
        ("error_policy", result.policy),
    ):
        ET.SubElement(props, "property", name=key, value=value)
    for c in result.checks:
        case = ET.SubElement(suite, "testcase", classname="shieldbench.gate", name=c.name, time="0")
        if not c.passed:
            failure = ET.SubElement(
                case, "failure", message=f"{c.description}: {figure(c)}, limit {limit(c)}"
            )
            failure.text = check_line(c)
        out = ET.SubElement(case, "system-out")
        out.text = check_line(c)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def defense_labels(result: GateResult) -> tuple[str, str]:
    """The candidate's and the baseline's defense as the gate names them: the canonical
    spec, with the version where both runs have the same spec."""
    both = [result.candidate_defense, result.baseline_defense]
    if None in both:
        return ("?", "?")
    a, b = identity_labels([i for i in both if i is not None])
    return a, b


def markdown_summary(result: GateResult) -> str:
    """A pull-request comment: verdict, what was compared, one table row per check."""
    n, failed = len(result.checks), len(result.failed)
    cand, base = (" (`" + _cell(x).replace("`", "'") + "`)" for x in defense_labels(result))
    head = "✅ passed" if result.passed else f"❌ failed ({failed} of {n} checks)"
    lines = [
        f"### shieldbench gate: {head}",
        "",
        f"Candidate `{_cell(result.candidate)}`{cand} vs baseline"
        f" `{_cell(result.baseline)}`{base} on"
        f" `{_cell(result.dataset)}` (`{result.content_hash[:19]}…`), error policy"
        f" {result.policy}.",
        "",
        "| check | figure | limit | test | p | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in result.checks:
        lines.append(
            f"| {_cell(c.description)} | {_cell(figure(c))} | {_cell(limit(c))} |"
            f" {_cell(c.test)} | {_p(c.p_value)} | {'✅ pass' if c.passed else '❌ fail'} |"
        )
    return "\n".join(lines) + "\n"
