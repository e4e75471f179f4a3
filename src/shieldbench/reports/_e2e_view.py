"""The end-to-end section of the reports, for runs that went through a target.

One view per run with a target (:func:`end_to_end_view`): the JSON form of
:func:`shieldbench.metrics.end_to_end_summary` (ASR and benign utility with
intervals, the funnel from attacks sent to attacks that succeeded per category,
the decomposition defense / output defense / model, judge agreement, example
successful attacks with the model's answer) plus McNemar between defenses on the
same data. Rendered as Markdown lines (:func:`e2e_markdown`) and as an HTML
fragment (:func:`e2e_html`); every text from a sample or an answer is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from shieldbench.metrics import compare_end_to_end, end_to_end_summary, has_end_to_end
from shieldbench.reports._mdescape import md_text
from shieldbench.types import Run

__all__ = ["e2e_html", "e2e_markdown", "end_to_end_view"]


def _stops_and_errors(r: Mapping[str, Any]) -> tuple[str, int]:
    """One run's "defense / output defense / model" stop shares and its error count."""
    d = r["decomposition"]
    stops = " / ".join(
        _pct(d[k], n=False)
        for k in ("stopped_by_defense", "stopped_by_output_defense", "stopped_by_model")
    )
    errors = r["attack_outcomes"].get("error", 0) + r["benign_outcomes"].get("error", 0)
    return stops, int(errors)


def end_to_end_view(runs: Sequence[Run], labels: Sequence[str]) -> dict[str, Any] | None:
    """The section's data (JSON-ready), or ``None`` when no run had a target."""
    chosen = [(r, label) for r, label in zip(runs, labels, strict=True) if has_end_to_end(r)]
    if not chosen:
        return None
    out = []
    for run, label in chosen:
        data = end_to_end_summary(run).to_dict()
        data["label"] = label
        data["canary"] = run.end_to_end.get("canary")
        out.append(data)
    pairs = [p.to_dict() for p in compare_end_to_end([r for r, _ in chosen])]
    return {"runs": out, "mcnemar": pairs}


def _pct(rate: Mapping[str, Any], *, n: bool = True) -> str:
    value = rate.get("value")
    if value is None:
        return f"– (n={rate.get('n')})"
    text = f"{100 * value:.1f}% [{100 * rate['ci_low']:.1f}–{100 * rate['ci_high']:.1f}]"
    return f"{text} (n={rate['n']})" if n else text


def e2e_markdown(view: Mapping[str, Any] | None) -> list[str]:
    """The section as Markdown lines (empty without a view)."""
    if not view:
        return []
    lines = ["## End to end (target + judges)", ""]
    lines += [
        "| run | target | judges (rule) | attack success (ASR) | benign utility |"
        " stopped by defense / output defense / model | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in view["runs"]:
        stops, errors = _stops_and_errors(r)
        lines.append(
            f"| {md_text(r['label'])} | {md_text(r['target'])} |"
            f" {md_text(', '.join(r['judges']))} ({r['rule']}) | {_pct(r['asr'])} |"
            f" {_pct(r['benign_utility'])} | {stops} | {errors} ({r['error_policy']}) |"
        )
    for r in view["runs"]:
        lines += [
            "",
            f"### Funnel per category: {md_text(r['label'])}",
            "",
            "| category | attacks sent | past the defense | past the output defense |"
            " succeeded | ASR |",
            "|---|---|---|---|---|---|",
        ]
        for row in r["funnel"]:
            lines.append(
                f"| {md_text(row['category'])} | {row['sent']} | {row['passed_defense']} |"
                f" {row['passed_output']} | {row['succeeded']} | {_pct(row['asr'])} |"
            )
        model = r["decomposition"]["model_asr_on_attacks_that_reached_it"]
        lines += ["", f"The model alone let {_pct(model)} of the attacks that reached it succeed."]
        for a in r["judge_agreement"]:
            kappa = "–" if a["kappa"] is None else f"{a['kappa']:.2f}"
            agree = "–" if a["agreement"] is None else f"{100 * a['agreement']:.1f}%"
            lines.append(
                f"- judges {md_text(a['a'])} and {md_text(a['b'])} agree on {agree}"
                f" of {a['n']} answers (Cohen's kappa {kappa})"
            )
        for e in r["examples"]:
            lines += [
                "",
                f"- successful attack `{md_text(e['sample_id'])}`"
                f" ({md_text(e['category'])}): {md_text(e['text'])}",
                f"  - answer: {md_text(e['answer'])}",
            ]
    if view["mcnemar"]:
        lines += ["", "### Paired comparison on end-to-end success (McNemar)", ""]
        for p in view["mcnemar"]:
            t = p["table"]
            lines.append(
                f"- {md_text(p['a'])} vs {md_text(p['b'])}: only {md_text(p['a'])} let"
                f" {t['only_a']} attacks succeed, only {md_text(p['b'])} {t['only_b']};"
                f" p = {p['mcnemar']['p_value']:.3g} ({p['mcnemar']['method']})"
            )
    return [*lines, ""]


def e2e_html(view: Mapping[str, Any] | None) -> str:
    """The section as an HTML fragment (every text escaped); empty without a view."""
    if not view:
        return ""
    h = escape
    parts = [
        '<section id="end-to-end">',
        "<h2>End to end (target + judges)</h2>",
        "<table><thead><tr><th>run</th><th>target</th><th>judges (rule)</th>"
        "<th>attack success (ASR)</th><th>benign utility</th><th>stopped by defense /"
        " output defense / model</th><th>errors</th></tr></thead><tbody>",
    ]
    for r in view["runs"]:
        stops, errors = _stops_and_errors(r)
        parts.append(
            f"<tr><td>{h(r['label'])}</td><td><code>{h(r['target'])}</code></td>"
            f"<td>{h(', '.join(r['judges']))} ({h(r['rule'])})</td><td>{h(_pct(r['asr']))}</td>"
            f"<td>{h(_pct(r['benign_utility']))}</td><td>{h(stops)}</td>"
            f"<td>{errors} ({h(r['error_policy'])})</td></tr>"
        )
    parts.append("</tbody></table>")
    for r in view["runs"]:
        parts.append(
            f"<details><summary>Funnel per category: {h(r['label'])}</summary><table>"
            "<thead><tr><th>category</th><th>sent</th><th>past the defense</th>"
            "<th>past the output defense</th><th>succeeded</th><th>ASR</th></tr>"
            "</thead><tbody>"
        )
        for row in r["funnel"]:
            parts.append(
                f"<tr><td>{h(row['category'])}</td><td>{row['sent']}</td>"
                f"<td>{row['passed_defense']}</td><td>{row['passed_output']}</td>"
                f"<td>{row['succeeded']}</td><td>{h(_pct(row['asr']))}</td></tr>"
            )
        parts.append("</tbody></table>")
        for a in r["judge_agreement"]:
            kappa = "–" if a["kappa"] is None else f"{a['kappa']:.2f}"
            agree = "–" if a["agreement"] is None else f"{100 * a['agreement']:.1f}%"
            parts.append(
                f"<p>Judges {h(a['a'])} and {h(a['b'])} agree on {agree} of"
                f" {a['n']} answers (Cohen's kappa {kappa}).</p>"
            )
        if r["examples"]:
            parts.append(
                "<table><thead><tr><th>successful attack</th><th>model's answer</th>"
                "</tr></thead><tbody>"
            )
            for e in r["examples"]:
                parts.append(
                    f'<tr><td class="text">{h(e["text"])}</td>'
                    f'<td class="text">{h(e["answer"])}</td></tr>'
                )
            parts.append("</tbody></table>")
        parts.append("</details>")
    for p in view["mcnemar"]:
        t = p["table"]
        parts.append(
            f"<p>McNemar on end-to-end success, {h(p['a'])} vs {h(p['b'])}: only {h(p['a'])}"
            f" {t['only_a']}, only {h(p['b'])} {t['only_b']}, p = {p['mcnemar']['p_value']:.3g}"
            f" ({h(p['mcnemar']['method'])}).</p>"
        )
    parts.append("</section>")
    return "\n".join(parts)
