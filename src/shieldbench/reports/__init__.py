"""Reports: one model of a benchmark, rendered as JSON, Markdown and self-contained HTML.

:func:`build_report` turns runs (one, several, or an adaptive attack) into a
:class:`Report`; the renderers are views of that one model, so they always agree.
Runs on the same data form a :class:`DatasetGroup` with their comparison, their
per-category paired comparisons and their security / utility planes
(:class:`TradeoffPlane`: each defense at (FPR, block rate), the Pareto frontier, the
reader's ``max_fpr`` policy):

- :func:`render_json`: every figure, machine-first, versioned (``schema_version``,
  ``kind``) and described by a JSON Schema shipped with the package
  (:func:`report_schema`).
- :func:`render_markdown`: configuration, summary with intervals, per-category
  tables, latency, errors, comparison, adaptive attack, worst cases and
  recommendations, for pull requests and terminals.
- :func:`render_html`: one file with inline SVG charts and a filterable table of
  examples; no network, no external assets; opens from disk.

:func:`write_reports` writes ``report.json`` / ``report.md`` / ``report.html``.
LLM-driven attacks (PAIR, TAP, Crescendo) have their own report:
:func:`llm_attack_markdown` and :func:`llm_asr_svg` (ASR against queries, every
strategy on one plot), written by :func:`write_llm_reports`; :func:`llm_failure_steps`
(where the defense failed: the turn or refinement of each goal-preserving bypass) is
shared with the viewer.
Attack texts are hostile input: every renderer escapes them (see each renderer).

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> run = make_run([("jailbreak", True, True, 0.9), ("jailbreak", True, False, 0.3),
    ...                 ("chat", False, False, 0.1), ("chat", False, False, 0.2)])
    >>> report = build_report([run])
    >>> import json; json.loads(render_json(report))["kind"]
    'shieldbench.report'
    >>> render_markdown(report).splitlines()[0]
    '# shieldbench report: test-defense on inline'
"""

from __future__ import annotations

from shieldbench.reports._attack_section import working_mutators
from shieldbench.reports._build import build_report
from shieldbench.reports._format import rate_text
from shieldbench.reports._html import render_html
from shieldbench.reports._json import render_json, report_schema
from shieldbench.reports._llm_markdown import (
    FailureSteps,
    llm_attack_markdown,
    llm_failure_steps,
    write_llm_reports,
)
from shieldbench.reports._llm_plot import llm_asr_svg
from shieldbench.reports._markdown import render_markdown
from shieldbench.reports._model import (
    REPORT_KIND,
    REPORT_SCHEMA_VERSION,
    AttackSection,
    CompositeFacts,
    DatasetGroup,
    ErrorHandling,
    Example,
    LatencyHistogram,
    Recommendation,
    Report,
    ReportSettings,
    RunSection,
    ScoreCurves,
    WorstCase,
)
from shieldbench.reports._plane import PlanePoint, TradeoffPlane
from shieldbench.reports._write import FORMATS, write_reports

__all__ = [
    "FORMATS",
    "REPORT_KIND",
    "REPORT_SCHEMA_VERSION",
    "AttackSection",
    "CompositeFacts",
    "DatasetGroup",
    "ErrorHandling",
    "Example",
    "FailureSteps",
    "LatencyHistogram",
    "PlanePoint",
    "Recommendation",
    "Report",
    "ReportSettings",
    "RunSection",
    "ScoreCurves",
    "TradeoffPlane",
    "WorstCase",
    "build_report",
    "llm_asr_svg",
    "llm_attack_markdown",
    "llm_failure_steps",
    "rate_text",
    "render_html",
    "render_json",
    "render_markdown",
    "report_schema",
    "working_mutators",
    "write_llm_reports",
    "write_reports",
]
