"""The report's SVG charts laid out by a real browser: every text stays inside its
chart, and the small multiples' panels do not overlap.

The charts place their labels from an estimate of text width (no font measuring), so
this is the check that the estimate holds for the longest labels a chart allows: the
charts of two runs with 48-character category names and defense labels (cut by the
charts' ``label``), including hostile markup, and an adaptive attack's two charts are
drawn into one page, which headless
Chromium lays out; a script measures every ``<text>`` against its ``<svg>`` and writes
the findings into the DOM for ``--dump-dom`` to read back.
"""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from shieldbench.metrics._testing import make_run
from shieldbench.reports import build_report
from shieldbench.reports._attack_charts import asr_queries_chart, mutator_chart
from shieldbench.reports._charts import (
    category_chart,
    fpr_chart,
    heatmap_chart,
    latency_chart,
    pr_chart,
    roc_chart,
    tradeoff_chart,
)
from shieldbench.reports._plane_charts import plane_chart, plane_multiples

from .conftest import hostile_samples, make_attack
from .test_browser import _browse, chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["chromium"]  # the fixture, shared with test_browser

_MEASURE = r"""
(function () {
  var out = {charts: 0, outside: [], overlaps: []};
  document.querySelectorAll("svg").forEach(function (svg, k) {
    out.charts++;
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
          r.bottom > box.bottom + 1) {
        out.outside.push(k + ": " + t.textContent.slice(0, 60) + " " +
          [r.left - box.left, r.right - box.right, r.top - box.top,
           r.bottom - box.bottom].map(Math.round).join(","));
      }
    });
    var panels = Array.prototype.map.call(svg.querySelectorAll("g[aria-label]"),
      function (g) { return g.getBoundingClientRect(); });
    for (var i = 0; i < panels.length; i++) {
      for (var j = i + 1; j < panels.length; j++) {
        var a = panels[i], b = panels[j];
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 &&
            b.top < a.bottom - 1) { out.overlaps.push(k + ": " + i + " and " + j); }
      }
    }
  });
  var pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def _charts() -> list[str]:
    long = "<b>output_manipulation_content_steering_payload_"  # cut to 48 by the charts
    rows = [(f"{long}{c}", True, c % 2 == 0, 0.2 + 0.1 * c) for c in range(6) for _ in range(5)]
    rows += [(f"benign_{long}{c}", False, c == 0, 0.1 * c) for c in range(3) for _ in range(5)]
    spec = "python:some.very.long.module.path:factory_with_a_long_name(threshold=0.75)"
    runs = [make_run(rows), make_run(rows, run_id="b", spec=spec)]
    report = build_report(runs)
    sections, group = report.runs, report.groups[0]
    drawn = [
        category_chart(sections),
        fpr_chart(sections),
        heatmap_chart(sections),
        roc_chart(sections),
        pr_chart(sections),
        latency_chart(sections),
        *(tradeoff_chart(r) for r in sections),
        plane_chart(group.planes[0], group.runs),
        plane_multiples(group.planes[1:], group.runs),
        asr_queries_chart(attack := make_attack(hostile_samples(6))),
        mutator_chart(attack),
    ]
    assert all(d is not None for d in drawn)
    return [d for d in drawn if d is not None]


def test_every_label_stays_inside_its_chart(chromium: str, tmp_path: Path) -> None:
    charts = _charts()
    page = tmp_path / "charts.html"
    body = "".join(f"<div>{svg}</div>" for svg in charts)
    page.write_text(
        f"<!doctype html><html><body>{body}<script>{_MEASURE}</script></body></html>",
        encoding="utf-8",
    )
    dom = _browse(
        chromium, page, tmp_path / "profile", "--window-size=1600,900",
        "--virtual-time-budget=3000", "--dump-dom",
    )  # fmt: skip
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found is not None, "the measuring script did not run"
    measured: dict[str, Any] = json.loads(htmllib.unescape(found.group(1)))
    assert measured["charts"] == len(charts)
    assert measured["outside"] == []
    assert measured["overlaps"] == []
