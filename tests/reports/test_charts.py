"""Charts: offline SVG, deterministic, hostile labels escaped, nothing executable."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from shieldbench.errors import ShieldbenchError
from shieldbench.metrics._testing import make_run
from shieldbench.reports import build_report
from shieldbench.reports._charts import category_chart, clean_svg, label, latency_chart

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
    assert all(i.startswith("chart-latency-a-") for i in ids_one)
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
    # Mathtext is off (hostile labels), so matplotlib's default log ticks would print
    # as the literal source "$\mathdefault{10^{-1}}$"; the ticks must be plain numbers.
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


def test_small_multiples_fixed_margins_keep_every_label_inside_the_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plane's small multiples skip constrained layout (fixed ``Margins``, the bulk
    of a small run's chart time); with long labels (32-character category titles, as
    long as the chart lets them be, 100% ticks, axis labels) nothing leaves the figure,
    and the panels do not overlap."""
    from shieldbench.reports import _chart_svg, _plane_charts

    wide = "output_manipulation_content_steering_"  # cut to 32 characters by the chart
    rows = [(f"{wide}{c}", True, c % 2 == 0, 0.9) for c in range(6) for _ in range(3)]
    rows += [(f"{wide}{c}", False, c == 0, 0.1) for c in range(6) for _ in range(3)]
    report = build_report([make_run(rows), make_run(rows, run_id="b", spec="other")])
    group = report.groups[0]
    seen: list[Any] = []
    real = _chart_svg.render_svg

    def spy(name: str, size: tuple[float, float], draw: Any, **kw: Any) -> str:
        def keep(fig: Any) -> None:
            draw(fig)
            seen.append(fig)

        return real(name, size, keep, **kw)

    monkeypatch.setattr(_plane_charts, "render_svg", spy)
    svg = _plane_charts.plane_multiples(group.planes[1:], group.runs)
    assert svg is not None
    assert len(seen) == 1
    fig = seen[0]
    assert fig.get_layout_engine() is None  # no constrained layout
    renderer = fig.canvas.get_renderer()
    inside = fig.bbox.padded(1.0)  # one pixel of rounding
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 6
    for ax in axes:
        box = ax.get_tightbbox(renderer)
        assert inside.contains(box.x0, box.y0), ax.get_title(loc="left")
        assert inside.contains(box.x1, box.y1), ax.get_title(loc="left")
    boxes = [ax.get_tightbbox(renderer) for ax in axes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)
