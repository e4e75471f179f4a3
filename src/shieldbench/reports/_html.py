"""The HTML view: one self-contained file with inline SVG charts.

The page is rendered by a Jinja2 template (``templates/report.html``) with
autoescaping **on**, so every value that comes from data or plugins is escaped in
text and attribute context; data never lands in a URL, style or event-handler
attribute. Only four things are inserted unescaped, all ours: the CSS, the small
filter script, and the chart SVGs (checked by
:func:`~shieldbench.reports._charts.clean_svg`).

Defence in depth: a Content-Security-Policy meta tag allows no network access at
all (``default-src 'none'``), images only from ``data:``, and scripts only when
their SHA-256 matches the report's own script, so even a payload that escaped the
escaping could not run. Styles allow ``'unsafe-inline'`` for the page's own inline
stylesheet; the charts (:mod:`shieldbench.charts`) need no style at all: their
colours are presentation attributes.

The file opens from disk, needs no server, and stays small: curves are thinned,
example texts cut to ``settings.text_limit`` characters, and at most
:data:`MAX_ATTACK_BYPASSES` adaptive-attack bypasses are listed (all are in the
JSON report).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from markupsafe import Markup

from shieldbench.metrics import Estimate, Rate, SampleFlip, quantile_bound_n
from shieldbench.reports import _attack_charts, _charts, _plane_charts
from shieldbench.reports._attack_section import chains_table, rounds_table, transfer_table
from shieldbench.reports._chart_svg import clean_svg
from shieldbench.reports._e2e_view import e2e_html
from shieldbench.reports._flips import HTML_TEXT, HTML_TOP, KIND_TITLES, side_text
from shieldbench.reports._format import (
    DASH,
    est_text,
    ms,
    num,
    p_text,
    pct,
    quantile_text,
    rate_text,
)
from shieldbench.reports._html_views import (
    CARDS_UP_TO,
    MatrixView,
    column_chunks,
    compact_rows,
    matrix_view,
    pairs_view,
)
from shieldbench.reports._layout import short_id
from shieldbench.reports._markdown_more import paired_difference_text
from shieldbench.reports._model import DatasetGroup, Report, RunSection
from shieldbench.reports._rows import Table
from shieldbench.reports._run_tables import composite_table, group_table
from shieldbench.reports._summary_rows import summary_rows

if TYPE_CHECKING:
    from jinja2 import BytecodeCache, Environment, Template

    from shieldbench.attacks import Bypass

__all__ = ["CSP_TEMPLATE", "MAX_ATTACK_BYPASSES", "render_html"]

MAX_ATTACK_BYPASSES = 200
CSP_TEMPLATE = (
    "default-src 'none'; script-src '{script_hash}'; style-src 'unsafe-inline';"
    " img-src data:; base-uri 'none'; form-action 'none'"
)


def _asset(name: str) -> str:
    return resources.files("shieldbench.reports").joinpath("templates", name).read_text("utf-8")


def _ci(r: Rate) -> str:
    if r.value is None:
        return "undefined (no samples)"
    return f"95% CI {100 * r.ci_low:.1f}–{100 * r.ci_high:.1f}%"


def _eci(e: Estimate, q: float) -> str:
    """A latency percentile's interval for a card; a bound ``n`` cannot give says why."""
    if e.value is None:
        return "no per-call latency measured"

    def f(x: float | None, side: Literal["low", "high"]) -> str:
        if x is not None:
            return ms(x)
        return f"none (n = {e.n}; needs {quantile_bound_n(q, side, confidence=e.confidence)})"

    return f"95% CI {f(e.ci_low, 'low')} – {f(e.ci_high, 'high')}"


def _cut(text: object, limit: int = 500) -> str:
    s = str(text)
    return s if len(s) <= limit else s[:limit] + f" … ({len(s)} characters)"


def _flip_side(flip: SampleFlip, which: str) -> str:
    if which == "a":
        return side_text(flip.status_a, flip.blocked_a, flip.score_a, flip.error_a)
    return side_text(flip.status_b, flip.blocked_b, flip.score_b, flip.error_b)


def _bytecode_cache() -> BytecodeCache | None:
    """Jinja's compiled-template cache in a private per-user temporary directory
    (``_jinja2-cache-UID``, mode 0700, its owner checked), or ``None`` where none can
    be made. Compiling the report template costs about 0.2 s of every run; loading it
    back costs milliseconds. An entry is keyed by the template's source checksum and
    the Python version, and written whole (a temporary file, then a rename), so a
    changed template or interpreter is recompiled and a torn file is never read."""
    from jinja2 import FileSystemBytecodeCache

    try:
        return FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no safe temporary directory: compile every time
        return None


@cache
def _environment() -> Environment:
    from jinja2 import Environment, FunctionLoader, StrictUndefined  # on first render

    env = Environment(
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        loader=FunctionLoader(lambda name: (_asset(name), None, lambda: True)),
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(
        rate=lambda r, n=False: rate_text(r, n=n),
        est=lambda e, digits=3: est_text(e, digits=digits),
        qtext=lambda e, q, digits=2: quantile_text(e, q, digits=digits),
        pct=lambda x, digits=1: pct(x, digits=digits),
        ms=ms,
        num=lambda x, digits=3: num(x, digits=digits),
        p=p_text,
        ci=_ci,
        eci=_eci,
        cut=_cut,
        short=short_id,
        flip_side=_flip_side,
    )
    env.globals["groups_table"] = group_table  # the breakdown tables, as Markdown builds them
    return env


@cache
def _template_source() -> tuple[str, str, str]:
    return _asset("report.html"), _asset("report.css"), _asset("report.js")


@cache
def _template() -> Template:
    return _environment().get_template("report.html")


@dataclass(frozen=True, slots=True)
class _PairRow:
    a: str
    b: str
    metric: str
    va: str
    vb: str
    diff: str
    discordant: str
    test: str
    p: str
    p_adj: str
    verdict: str


@dataclass(frozen=True, slots=True)
class _GroupView:
    group: DatasetGroup
    runs: tuple[RunSection, ...]
    category_svg: Markup | None
    fpr_svg: Markup | None
    heatmap_svg: Markup | None
    roc_svg: Markup | None
    pr_svg: Markup | None
    pair_rows: tuple[_PairRow, ...]
    plane_svg: Markup | None
    multiples_svg: Markup | None
    matrix: MatrixView | None
    pairs: MatrixView | None


def _safe(svg: str | None) -> Markup | None:
    return None if svg is None else Markup(clean_svg(svg))  # our own SVG, checked


def _pair_rows(group: DatasetGroup) -> tuple[_PairRow, ...]:
    cmp = group.comparison
    if cmp is None:
        return ()
    rows = []
    for pair in cmp.pairs:
        verdicts = {v.metric: v for v in pair.verdicts}
        for m in (pair.attacks, pair.benign):
            v = verdicts[m.metric]
            rows.append(
                _PairRow(
                    pair.a,
                    pair.b,
                    m.metric.replace("_", " "),
                    rate_text(m.rate_a, n=False),
                    rate_text(m.rate_b, n=False),
                    paired_difference_text(m),
                    f"{m.table.only_a} / {m.table.only_b}",
                    m.test.method,
                    p_text(v.p_value),
                    p_text(v.p_adjusted),
                    v.verdict,
                )
            )
        if pair.auc is not None and pair.auc.difference is not None and "roc_auc" in verdicts:
            v = verdicts["roc_auc"]
            auc = pair.auc
            rows.append(
                _PairRow(
                    pair.a,
                    pair.b,
                    "ROC-AUC",
                    est_text(auc.auc_a),
                    est_text(auc.auc_b),
                    f"{auc.difference:+.3f} [{auc.ci_low:+.3f}, {auc.ci_high:+.3f}]",
                    DASH,
                    "DeLong (paired)",
                    p_text(v.p_value),
                    p_text(v.p_adjusted),
                    v.verdict,
                )
            )
    return tuple(rows)


_GROUP_CHARTS: dict[str, Callable[..., str | None]] = {
    "categories": _charts.category_chart,
    "fpr": _charts.fpr_chart,
    "heatmap": _charts.heatmap_chart,
    "roc": _charts.roc_chart,
    "pr": _charts.pr_chart,
}


def _group_views(report: Report, *, charts: bool) -> list[_GroupView]:
    views = []
    for i, g in enumerate(report.groups):
        runs = tuple(report.run(label) for label in g.runs)
        svgs = {
            name: _safe(draw(runs, name=f"{name}-{i}")) if charts else None
            for name, draw in _GROUP_CHARTS.items()
        }
        overall = g.planes[0] if g.planes else None
        plane = (
            _safe(_plane_charts.plane_chart(overall, g.runs, name=f"plane-{i}"))
            if charts and overall is not None
            else None
        )
        multiples = (
            _safe(_plane_charts.plane_multiples(g.planes[1:], g.runs, name=f"planes-{i}"))
            if charts and len(g.planes) > 1
            else None
        )
        views.append(
            _GroupView(
                g,
                runs,
                svgs["categories"],
                svgs["fpr"],
                svgs["heatmap"],
                svgs["roc"],
                svgs["pr"],
                _pair_rows(g),
                plane,
                multiples,
                None if g.by_category is None else matrix_view(g.by_category),
                None if g.comparison is None else pairs_view(g.comparison),
            )
        )
    return views


def _context(report: Report, *, charts: bool) -> dict[str, Any]:
    _, css, js = _template_source()
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    groups = _group_views(report, charts=charts)
    examples = [
        e for r in report.runs for e in (*r.worst_case.bypasses, *r.worst_case.false_positives)
    ]
    env_pairs = sorted({(k, v) for r in report.runs for k, v in r.environment.items()})
    attack = report.attack.result if report.attack is not None else None
    attack_bypasses: list[Bypass] = []
    attack_tables: dict[str, Table] = {}
    if attack is not None:
        ordered = sorted(attack.bypasses, key=lambda b: not b.preserves_payload)
        attack_bypasses = ordered[:MAX_ATTACK_BYPASSES]
        attack_tables = {
            "rounds": rounds_table(attack),
            "chains": chains_table(attack),
            "transfer": transfer_table(attack),
        }
    return {
        "report": report,
        "flip_titles": KIND_TITLES,
        "flips_top": HTML_TOP,
        "flips_text": min(HTML_TEXT, report.settings.text_limit),
        "csp": CSP_TEMPLATE.format(script_hash=f"sha256-{digest}"),
        "css": Markup(css),  # our own stylesheet
        "js": Markup(js),  # our own script, allowed by its CSP hash
        "groups": groups,
        "has_comparison": any(g.comparison or g.comparison_note for g in report.groups),
        "has_curves": any(r.curves is not None for r in report.runs),
        "environment": env_pairs,
        "summary_rows": summary_rows(report.runs),
        "summary_chunks": column_chunks([r.label for r in report.runs]),
        "cards": len(report.runs) <= CARDS_UP_TO,
        "compact": compact_rows(report.runs),
        "tradeoffs": [
            (r.label, _safe(_charts.tradeoff_chart(r, name=f"tradeoff-{i}")) if charts else None)
            for i, r in enumerate(report.runs)
            if r.curves is not None
        ],
        "latency_svg": _safe(_charts.latency_chart(report.runs)) if charts else None,
        "worst_rows": [(r.label, g) for r in report.runs for g in r.worst_case.worst_categories],
        "examples": examples,
        "example_runs": sorted({e.run for e in examples}),
        "example_categories": sorted({e.category for e in examples}),
        "composites": composite_table(report.runs),
        "attack_asr_svg": _safe(_attack_charts.asr_queries_chart(attack))
        if charts and attack is not None
        else None,
        "attack_mutator_svg": _safe(_attack_charts.mutator_chart(attack))
        if charts and attack is not None
        else None,
        "attack_bypasses": attack_bypasses,
        "attack_tables": attack_tables,
        "attack_categories": sorted({str(b.category) for b in attack_bypasses}),
        "end_to_end_html": Markup(_scrolling(e2e_html(report.end_to_end))),  # escaped there
    }


def _scrolling(fragment: str) -> str:
    """Every table of an HTML fragment we built (its data escaped, so ``<table`` can only
    be ours) inside its own scrolling container, as the template's tables are."""
    return re.sub(r"<table\b", '<div class="scroll"><table', fragment).replace(
        "</table>", "</table></div>"
    )


def render_page(report: Report, *, charts: bool = True) -> str:
    """The HTML page; ``charts=False`` leaves the charts out (fast, for tests)."""
    return _template().render(**_context(report, charts=charts))


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page with inline SVG charts."""
    return render_page(report, charts=True)
