"""A run's summary and reports state when its score figures came from a sketch.

Past ``distinct_limit`` distinct scores the summary carries ``scores.sketch`` with
the computed bounds, the JSON report holds it (valid against the shipped schema) and
the Markdown and HTML reports print a row stating it. An exact run's output has no
trace of it: the same keys as before the sketch existed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    _columnar,
    _score_counts,
    roc_auc,
    roc_curve,
    score_arrays,
    score_counts,
    summarize,
    tpr_at_fpr,
)
from shieldbench.metrics._precision import average_precision_vectorized
from shieldbench.metrics._score_counts import roc_auc_counts
from shieldbench.metrics._sketch_bounds import auc_error_bound
from shieldbench.metrics._testing import make_run
from shieldbench.reports import (
    _run_figures,
    build_report,
    render_html,
    render_json,
    render_markdown,
    report_schema,
)
from shieldbench.runfiles import _parquet, load_run, save_run
from shieldbench.types import Run

_SCORE_KEYS = {"n", "roc_auc", "pr_auc", "target_fpr", "tpr_at_fpr", "target_tpr", "fpr_at_tpr"}


def _continuous_run(size: int = 400, seed: int = 2) -> Run:
    rng = np.random.default_rng(seed)
    attack = rng.random(size) < 0.4
    score = rng.normal(attack * 1.2, 1.0)
    rows = [
        ("jailbreak" if a else "chat", bool(a), bool(s > 0.5), float(s))
        for a, s in zip(attack, score, strict=True)
    ]
    return make_run(rows)


def test_an_exact_summary_has_no_sketch_key_and_a_coarsened_one_states_its_bounds() -> None:
    run = _continuous_run()
    exact = summarize(run).to_dict()["scores"]
    assert set(exact) == _SCORE_KEYS  # unchanged output when exact
    assert set(summarize(run, distinct_limit=400).to_dict()["scores"]) == _SCORE_KEYS

    summary = summarize(run, distinct_limit=16)
    scores = summary.scores
    assert scores is not None
    assert scores.sketch is not None
    sketch = summary.to_dict()["scores"]["sketch"]
    assert sketch["method"] == "binned"
    assert sketch["distinct_limit"] == 16
    assert 1 <= sketch["bins"] <= 16
    assert sketch["coarse_bins"] >= 1
    y, s = score_arrays(run)
    counts = score_counts(run, distinct_limit=16)
    assert sketch["roc_auc_error_bound"] == auc_error_bound(counts.pos, counts.neg, counts.coarse)
    true_auc = roc_auc(y, s).value
    assert true_auc is not None
    assert scores.roc_auc.value is not None
    assert abs(scores.roc_auc.value - true_auc) <= sketch["roc_auc_error_bound"] + 1e-12
    low, high = sketch["average_precision_range"]
    assert low - 1e-12 <= float(average_precision_vectorized(s[y], s[~y])) <= high + 1e-12
    best = tpr_at_fpr(y, s, max_fpr=scores.target_fpr)
    assert best is not None
    assert scores.tpr_at_fpr is not None
    shortfall = best.block_rate.value - scores.tpr_at_fpr.block_rate.value  # type: ignore[operator]
    assert -1e-12 <= shortfall <= sketch["tpr_at_fpr_shortfall_bound"] + 1e-12


@pytest.mark.parametrize("bad", [1, 0, -5])
def test_summarize_refuses_a_limit_below_two(bad: int) -> None:
    with pytest.raises(StatisticsError, match="distinct_limit"):
        summarize(_continuous_run(20), distinct_limit=bad)


def test_a_coarsened_report_states_the_sketch_in_every_view() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (dev extra) is not installed")
    run = _continuous_run()
    exact, sketched = build_report([run]), build_report([run], distinct_limit=16)
    validator = jsonschema.Draft202012Validator(report_schema())
    for report in (exact, sketched):
        validator.validate(json.loads(render_json(report)))
    data = json.loads(render_json(sketched))
    bound = data["runs"][0]["summary"]["scores"]["sketch"]["roc_auc_error_bound"]
    assert bound > 0
    assert "sketch" not in json.loads(render_json(exact))["runs"][0]["summary"]["scores"]
    for text in (render_markdown(sketched), render_html(sketched)):
        assert "sketch of" in text
        assert f"ROC-AUC ± {bound:.2g}" in text
    for text in (render_markdown(exact), render_html(exact)):
        assert "sketch of" not in text
    # The schema rejects a sketch without its bounds.
    broken = json.loads(render_json(sketched))
    del broken["runs"][0]["summary"]["scores"]["sketch"]["roc_auc_error_bound"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


def test_a_run_read_from_disk_in_small_blocks_is_sketched_within_its_bounds() -> None:
    run = _continuous_run(300, seed=5)
    y, s = score_arrays(run)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(_parquet, "ROW_GROUP", 23)
        mp.setattr(_columnar, "BLOCK", 17)
        mp.setattr(_score_counts, "BLOCK", 17)  # the score blocks: many merges
        back = load_run(save_run(run, Path(tmp) / "run.parquet"))
        assert _columnar.columnar(back)
        exact = score_counts(back)
        sketch = score_counts(back, distinct_limit=8)
        curves = _run_figures.curves(back, "fail_closed", 0.01, 8)
    assert curves is not None
    true_roc = roc_curve(y, s)
    true_points = set(zip(true_roc.thresholds, true_roc.fpr, true_roc.tpr, strict=True))
    shown = set(zip(curves.roc.thresholds, curves.roc.fpr, curves.roc.tpr, strict=True))
    assert len(shown) <= 9  # +inf and at most 8 bins
    assert shown <= true_points  # the report's curve: exact points of the true curve
    assert exact.exact
    assert exact.scores.tolist() == np.unique(s).tolist()
    assert not sketch.exact
    assert sketch.scores.size <= 8
    scores = summarize(run, distinct_limit=8).scores
    assert scores is not None
    assert scores.sketch is not None
    gap = abs(roc_auc_counts(sketch).value - roc_auc(y, s).value)  # type: ignore[operator]
    assert gap <= auc_error_bound(sketch.pos, sketch.neg, sketch.coarse) + 1e-12


def test_the_terminal_comparison_notes_a_sketched_roc_auc() -> None:
    import io
    from dataclasses import replace

    from rich.console import Console

    from shieldbench.cli._compare_print import print_comparison
    from shieldbench.metrics import compare_runs

    run = _continuous_run()
    other = make_run([(c, a, b, 1.0 - s) for c, a, b, s in _rows(run)], run_id="r2", spec="d2")
    cmp = compare_runs([run, other])

    def printed(comparison: object) -> str:
        buffer = io.StringIO()
        print_comparison(comparison, out=Console(file=buffer, width=200))  # type: ignore[arg-type]
        return buffer.getvalue()

    assert "sketch" not in printed(cmp)
    sketched = summarize(run, distinct_limit=16)
    entries = tuple(
        replace(e, summary=sketched) if e.summary.run_id == run.id else e for e in cmp.leaderboard
    )
    text = printed(replace(cmp, leaderboard=entries))
    assert sketched.scores is not None
    assert sketched.scores.sketch is not None
    assert f"ROC-AUC within ±{sketched.scores.sketch.roc_auc:.2g}" in text


def _rows(run: Run) -> list[tuple[str, bool, bool, float]]:
    rows = []
    for sample, outcome in zip(run.samples, run.outcomes, strict=True):
        assert outcome.verdict is not None
        assert outcome.verdict.score is not None
        rows.append(
            (sample.category, sample.is_attack, outcome.verdict.blocked, outcome.verdict.score)
        )
    return rows
