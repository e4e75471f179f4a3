"""Charts: offline SVG, deterministic, hostile labels escaped, nothing executable,
accessible, and drawn without matplotlib."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from shieldbench.charts import percent, text_width
from shieldbench.errors import ShieldbenchError
from shieldbench.metrics._testing import make_run
from shieldbench.reports import _plane_charts, build_report
from shieldbench.reports._charts import (
    category_chart,
    clean_svg,
    label,
    latency_chart,
    pr_chart,
    roc_chart,
)

SVG_NS = "{http://www.w3.org/2000/svg}"
HOSTILE = ("<script>alert(1)</script>", "$\\frac{1}{0}$ & x", "a\x00b\nc\u2028d", "]]><![CDATA[")


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def test_hostile_category_labels_are_escaped_text() -> None:
    rows = [(c, True, i % 2 == 0, 0.5) for c in HOSTILE for i in range(4)]
    rows += [("chat", False, False, 0.1)] * 4
    section = build_report([make_run(rows)]).runs[0]
    svg = category_chart([section])
    assert svg is not None
    assert "<script" not in svg
    assert "&lt;script&gt;" in svg
    texts = _texts(svg)
    assert "<script>alert(1)</script>" in texts  # shown literally, as text
    assert "$\\frac{1}{0}$ & x" in texts  # no mathtext: the dollars stay
    assert "a b c d" in texts  # control characters and line breaks dropped
    assert not any("\x00" in t for t in texts)


def test_charts_are_deterministic_and_namespaced() -> None:
    rows = [("c", True, True, 0.9), ("c", True, False, 0.2), ("b", False, False, 0.1)] * 10
    section = build_report([make_run(rows)]).runs[0]
    one = latency_chart([section], name="latency-a")
    assert one == latency_chart([section], name="latency-a")
    other = latency_chart([section], name="latency-b")
    assert other is not None
    assert one is not None
    ids_one = {e.get("id") for e in ET.fromstring(one).iter() if e.get("id")}
    ids_other = {e.get("id") for e in ET.fromstring(other).iter() if e.get("id")}
    assert ids_one
    assert all(str(i).startswith("chart-latency-a-") for i in ids_one)
    assert not ids_one & ids_other


def test_clean_svg_keeps_only_the_svg_element_and_refuses_scripts() -> None:
    raw = '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg><metadata>x</metadata><g/></svg>'
    assert clean_svg(raw) == "<svg><g/></svg>"
    for bad in ("<svg><script>x</script></svg>", "<svg><foreignObject/></svg>", "<p>no svg</p>"):
        with pytest.raises(ShieldbenchError):
            clean_svg(bad)


def test_label_cuts_and_cleans() -> None:
    assert label("a\tb\n\nc") == "a b c"
    assert label("x" * 100, 10) == "x" * 9 + "…"
    assert label("short") == "short"


def test_log_latency_axis_has_plain_number_ticks() -> None:
    # A log axis labels its powers of ten as plain numbers (never mathtext such as
    # "$\mathdefault{10^{-1}}$", which is how a plotting library would write them).
    rows = [("c", True, i % 2 == 0, 0.5) for i in range(40)]
    run = make_run(rows)
    spread = [0.05 * 1.3**i for i in range(len(run.outcomes))]  # 0.05 ms .. ~1.4 s
    outcomes = tuple(
        dataclasses.replace(o, latency_ms=ms) for o, ms in zip(run.outcomes, spread, strict=True)
    )
    section = build_report([dataclasses.replace(run, outcomes=outcomes)]).runs[0]
    assert section.latency_histogram is not None
    assert section.latency_histogram.scale == "log"
    svg = latency_chart([section])
    assert svg is not None
    texts = _texts(svg)
    assert not [t for t in texts if "$" in t or "mathdefault" in t]
    assert {"0.1", "1", "10", "100", "1000"} <= set(texts)


def test_short_log_latency_axis_labels_more_than_one_tick() -> None:
    rows = [("c", True, i % 2 == 0, 0.5) for i in range(30)]
    run = make_run(rows)
    spread = [3.0 * 1.11**i for i in range(len(run.outcomes))]  # 3 ms .. ~62 ms: 1.3 decades
    outcomes = tuple(
        dataclasses.replace(o, latency_ms=ms) for o, ms in zip(run.outcomes, spread, strict=True)
    )
    section = build_report([dataclasses.replace(run, outcomes=outcomes)]).runs[0]
    assert section.latency_histogram is not None
    assert section.latency_histogram.scale == "log"
    svg = latency_chart([section])
    assert svg is not None
    numbers = [t for t in _texts(svg) if t.replace(".", "", 1).isdigit()]
    assert "10" in numbers
    assert len(numbers) >= 3, numbers  # minor ticks (5, 20, 50) labelled too
    assert not [t for t in _texts(svg) if "$" in t or "mathdefault" in t]


def test_charts_have_an_accessible_name_and_description() -> None:
    rows = [("c", True, True, 0.9), ("c", True, False, 0.2), ("b", False, False, 0.1)] * 10
    section = build_report([make_run(rows)]).runs[0]
    for svg in (category_chart([section]), latency_chart([section]), roc_chart([section])):
        assert svg is not None
        root = ET.fromstring(svg)
        title = root.find(f"{SVG_NS}title")
        desc = root.find(f"{SVG_NS}desc")
        assert title is not None
        assert title.text
        assert desc is not None
        assert desc.text
        assert root.get("role") == "img"
        assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"


def test_curve_legends_state_each_runs_area_under_the_curve() -> None:
    rows = [("c", True, True, 0.9), ("c", True, False, 0.2), ("b", False, False, 0.1)] * 10
    section = build_report([make_run(rows)]).runs[0]
    scores = section.summary.scores
    assert scores is not None
    assert scores.roc_auc.value is not None
    assert scores.pr_auc.value is not None
    roc, pr = roc_chart([section]), pr_chart([section])
    assert roc is not None
    assert pr is not None
    assert any(f"(AUC {scores.roc_auc.value:.3f})" in t for t in _texts(roc))
    assert any(f"(AP {scores.pr_auc.value:.3f})" in t for t in _texts(pr))
    assert not any("(AUC" in t for t in _texts(pr))


def test_bars_carry_their_value_and_interval() -> None:
    """Every bar's tooltip states its rate and 95% interval (the whisker's ends)."""
    rows = [("jailbreak", True, i < 6, 0.5) for i in range(8)] + [("chat", False, False, 0.1)] * 4
    section = build_report([make_run(rows)]).runs[0]
    svg = category_chart([section])
    assert svg is not None
    rate = next(
        g.block_rate for g in section.summary.breakdowns.by["category"] if g.group == "jailbreak"
    )
    tips = ["".join(t.itertext()) for r in ET.fromstring(svg).iter(f"{SVG_NS}rect") for t in r]
    assert any(
        t.startswith("jailbreak")
        and percent(rate.value or 0) in t
        and percent(rate.ci_low) in t
        and percent(rate.ci_high) in t
        and "(6/8)" in t
        for t in tips
    ), tips


def test_no_chart_of_a_run_report_imports_matplotlib() -> None:
    """The charts a run or comparison report draws are plain SVG: drawing all of them
    in a fresh interpreter loads no matplotlib (it would cost more than a second)."""
    code = (
        "import sys\n"
        "from shieldbench.metrics._testing import make_run\n"
        "from shieldbench.reports import build_report\n"
        "from shieldbench.reports import _charts, _plane_charts\n"
        "rows = [(c, a, b, s) for c in 'xyz' for a in (True, False) for b in (True, False)"
        " for s in (0.1, 0.9)] * 3\n"
        "report = build_report([make_run(rows), make_run(rows, run_id='b', spec='other')])\n"
        "runs, g = report.runs, report.groups[0]\n"
        "drawn = [f(runs) for f in (_charts.category_chart, _charts.fpr_chart,"
        " _charts.heatmap_chart, _charts.roc_chart, _charts.pr_chart, _charts.latency_chart)]\n"
        "drawn += [_charts.tradeoff_chart(r) for r in runs]\n"
        "drawn += [_plane_charts.plane_chart(g.planes[0], g.runs),"
        " _plane_charts.plane_multiples(g.planes[1:], g.runs)]\n"
        "assert all(d is not None for d in drawn), [d is None for d in drawn]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_small_multiples_keep_every_element_inside_its_panel() -> None:
    """The plane's small multiples use a fixed grid: with the longest labels the chart
    allows (32-character category titles, 100% ticks, axis labels), every element of a
    panel stays inside the figure and inside its own cell, so panels never overlap
    (Chromium measures the rendered boxes in tests/reports/test_chart_layout.py)."""
    wide = "output_manipulation_content_steering_"  # cut to 32 characters by the chart
    rows = [(f"{wide}{c}", True, c % 2 == 0, 0.9) for c in range(6) for _ in range(3)]
    rows += [(f"{wide}{c}", False, c == 0, 0.1) for c in range(6) for _ in range(3)]
    report = build_report([make_run(rows), make_run(rows, run_id="b", spec="other")])
    group = report.groups[0]
    svg = _plane_charts.plane_multiples(group.planes[1:], group.runs)
    assert svg is not None
    root = ET.fromstring(svg)
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    panels = [g for g in root.iter(f"{SVG_NS}g") if g.get("aria-label") is not None]
    assert len(panels) == 6
    cells = []
    for panel in panels:
        xs: list[float] = []
        ys: list[float] = []
        for el in panel.iter():
            xs += [float(el.get(k, "0")) for k in ("x", "x1", "x2", "cx") if k in el.attrib]
            ys += [float(el.get(k, "0")) for k in ("y", "y1", "y2", "cy") if k in el.attrib]
            if el.tag == f"{SVG_NS}text" and el.get("transform") is None:
                size = float(el.get("font-size", "9"))
                span = text_width("".join(el.itertext()), size)
                x = float(el.get("x", "0"))
                anchor = el.get("text-anchor", "start")
                xs.append(x - span if anchor == "end" else x + span if anchor == "start" else x)
        box = (min(xs), min(ys), max(xs), max(ys))
        assert 0 <= box[0] <= box[2] <= width, box
        assert 0 <= box[1] <= box[3] <= height, box
        cells.append(box)
    for i, a in enumerate(cells):
        for b in cells[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
