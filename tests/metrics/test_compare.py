"""compare_runs and paired_tables: pairing by id, refusals, verdicts, Holm over the
family, non-inferiority against the baseline, labels and JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    PairedTable,
    adjust_p_values,
    compare_auc,
    compare_groups,
    compare_runs,
    paired_tables,
)
from shieldbench.metrics._testing import make_run
from shieldbench.types import Run


def _runs(seed: int = 0, n: int = 400) -> tuple[Run, Run, Run]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    strong = y * 0.6 + rng.random(n) * 0.5
    weak = y * 0.2 + rng.random(n) * 0.5
    same = strong + rng.normal(scale=0.01, size=n)

    def run(scores: np.ndarray, run_id: str, spec: str) -> Run:
        rows = [("c", bool(a), bool(v > 0.5), float(v)) for a, v in zip(y, scores, strict=True)]
        return make_run(rows, run_id=run_id, spec=spec)

    return run(strong, "r1", "strong"), run(weak, "r2", "weak"), run(same, "r3", "strong")


def test_paired_tables_match_by_id_not_position() -> None:
    a = make_run([("c", True, True), ("c", True, False), ("c", False, True)], ids=["x", "y", "z"])
    b = make_run([("c", False, False), ("c", True, True), ("c", True, True)], ids=["z", "y", "x"])
    attacks, benign = paired_tables(a, b)
    # x: a blocked, b blocked; y: a missed, b blocked; z (benign): a blocked, b not.
    assert attacks == PairedTable(both=1, only_a=0, only_b=1, neither=0)
    assert benign == PairedTable(both=0, only_a=1, only_b=0, neither=0)


def test_paired_tables_refusals() -> None:
    a = make_run([("c", True, True)], dataset_hash="sha256:aaa")
    b = make_run([("c", True, True)], dataset_hash="sha256:bbb")
    with pytest.raises(StatisticsError, match="content hash"):
        paired_tables(a, b)
    with pytest.raises(StatisticsError, match="content hash"):
        compare_runs([a, b])
    c = make_run([("c", True, True)], ids=["other"], dataset_hash="sha256:aaa")
    with pytest.raises(StatisticsError, match="sample ids"):
        paired_tables(a, c)
    d = make_run([("c", True, True)], dataset_hash="sha256:aaa", policy="fail_open")
    with pytest.raises(StatisticsError, match="error policies"):
        paired_tables(a, d)
    assert paired_tables(a, d, policy="exclude")[0].n == 1
    with pytest.raises(StatisticsError, match="at least two"):
        compare_runs([a])


def test_excluded_outcomes_drop_the_pair() -> None:
    a = make_run([("c", True, None), ("c", True, True)], policy="exclude")
    b = make_run([("c", True, True), ("c", True, False)], policy="exclude")
    attacks, _ = paired_tables(a, b)
    assert attacks == PairedTable(0, 1, 0, 0)


def test_compare_runs_verdicts_and_holm_family() -> None:
    r1, r2, r3 = _runs()
    cmp = compare_runs([r1, r2, r3])
    assert cmp.runs == ("strong [r1]", "weak", "strong [r3]")
    assert [e.label for e in cmp.leaderboard][-1] == "weak"
    assert [e.rank for e in cmp.leaderboard] == [1, 2, 3]
    pair = cmp.pair("strong [r1]", "weak")
    att = pair.attacks
    ref = mcnemar(att.table.as_matrix(), exact=att.table.discordant < 25, correction=True)
    assert att.test.p_value == pytest.approx(ref.pvalue, abs=1e-9)
    verdict = {v.metric: v for v in pair.verdicts}
    assert verdict["block_rate"].verdict == "significantly better"
    assert verdict["roc_auc"].verdict == "significantly better"
    # The reverse reading: weak is significantly worse than strong.
    assert pair.attacks.difference.estimate > 0  # type: ignore[operator]
    # Holm over every p-value of the comparison, in order.
    family = []
    for p in cmp.pairs:
        family += [p.attacks.test.p_value, p.benign.test.p_value]
        if p.auc is not None:
            family.append(p.auc.p_value)
    adjusted = [v.p_adjusted for p in cmp.pairs for v in p.verdicts]
    assert adjusted == pytest.approx(list(adjust_p_values(family)))
    # Two runs of the same defense with near-identical scores: no difference.
    same = {v.metric: v.verdict for v in cmp.pair("strong [r1]", "strong [r3]").verdicts}
    assert same["block_rate"] == "no significant difference"
    # The AUC test is the paired DeLong test on aligned scores.
    y = np.array([s.label == "attack" for s in r1.samples])
    s1 = np.array([o.verdict.score for o in r1.outcomes])  # type: ignore[union-attr]
    s2 = np.array([o.verdict.score for o in r2.outcomes])  # type: ignore[union-attr]
    assert pair.auc is not None
    assert pair.auc.p_value == pytest.approx(compare_auc(y, s1, s2).p_value)
    json.dumps(cmp.to_dict(), allow_nan=False)


def test_verdict_direction_for_false_positives() -> None:
    n = 200
    att = [("a", True, True, 0.9)] * n
    low_fp = make_run(att + [("b", False, False, 0.1)] * n, run_id="x", spec="careful")
    high_fp = make_run(
        att + [("b", False, i % 4 == 0, 0.6 if i % 4 == 0 else 0.1) for i in range(n)],
        run_id="y",
        spec="jumpy",
    )
    cmp = compare_runs([low_fp, high_fp], correction="none")
    v = {x.metric: x for x in cmp.pairs[0].verdicts}
    assert v["false_positive_rate"].verdict == "significantly better"
    assert not v["false_positive_rate"].higher_is_better
    # Zero discordant pairs on attacks: p = 1, no difference.
    assert v["block_rate"].p_value == 1.0
    assert v["block_rate"].verdict == "no significant difference"
    assert cmp.leaderboard[0].label == "careful"


def test_non_inferiority_against_the_first_run() -> None:
    r1, r2, r3 = _runs(seed=1)
    cmp = compare_runs([r1, r3, r2], margin=0.05)
    rows = {(r.candidate, r.metric): r for r in cmp.non_inferiority}
    assert set(rows) == {
        ("strong [r3]", "block_rate"),
        ("strong [r3]", "false_positive_rate"),
        ("weak", "block_rate"),
        ("weak", "false_positive_rate"),
    }
    assert all(r.baseline == "strong [r1]" for r in cmp.non_inferiority)
    assert rows[("strong [r3]", "block_rate")].non_inferior
    assert not rows[("weak", "block_rate")].non_inferior
    adjusted = adjust_p_values([r.result.p_value for r in cmp.non_inferiority])
    assert [r.p_adjusted for r in cmp.non_inferiority] == pytest.approx(list(adjusted))
    d = cmp.to_dict()
    assert d["baseline"] == "strong [r1]"
    assert len(d["non_inferiority"]) == 4
    assert compare_runs([r1, r2]).non_inferiority == ()


def test_option_validation_and_ranking() -> None:
    r1, r2, _ = _runs()
    with pytest.raises(StatisticsError, match="rank"):
        compare_runs([r1, r2], rank_by="speed")  # type: ignore[arg-type]
    with pytest.raises(StatisticsError, match="correction"):
        compare_runs([r1, r2], correction="fdr")  # type: ignore[arg-type]
    with pytest.raises(StatisticsError, match="alpha"):
        compare_runs([r1, r2], alpha=0.9)
    by_fpr = compare_runs([r1, r2], rank_by="false_positive_rate")
    fprs = [e.summary.rates.false_positive_rate.value for e in by_fpr.leaderboard]
    assert fprs == sorted(fprs)  # type: ignore[type-var]
    by_auc = compare_runs([r2, r1], rank_by="roc_auc")
    assert by_auc.leaderboard[0].label == "strong"


def test_runs_without_scores_have_no_auc_comparison() -> None:
    a = make_run([("c", True, True), ("c", False, False)], run_id="a", spec="a")
    b = make_run([("c", True, False), ("c", False, False)], run_id="b", spec="b")
    cmp = compare_runs([a, b])
    assert cmp.pairs[0].auc is None
    assert [v.metric for v in cmp.pairs[0].verdicts] == ["block_rate", "false_positive_rate"]
    with pytest.raises(StatisticsError):
        cmp.pair("a", "c")


def test_compare_groups_corrects_across_categories(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gc.collect", lambda *args: 0)  # multipletests collects garbage
    rng = np.random.default_rng(3)
    rows_a, rows_b = [], []
    for cat, p_a, p_b in (("jb", 0.95, 0.5), ("leak", 0.9, 0.85), ("enc", 0.6, 0.6)):
        for _ in range(60):
            rows_a.append((cat, True, bool(rng.random() < p_a)))
            rows_b.append((cat, True, bool(rng.random() < p_b)))
    for _ in range(40):  # benign only in "chat": the other groups have no FPR test
        rows_a.append(("chat", False, bool(rng.random() < 0.05)))
        rows_b.append(("chat", False, bool(rng.random() < 0.05)))
    a, b = make_run(rows_a, run_id="a"), make_run(rows_b, run_id="b")
    groups = compare_groups(a, b)
    assert [g.group for g in groups] == ["chat", "enc", "jb", "leak"]
    # The family: every test with pairs (3 attack groups + 1 benign group).
    tested = [m.test.p_value for g in groups for m in (g.attacks, g.benign) if m.table.n > 0]
    assert len(tested) == 4
    reference = iter(multipletests(tested, method="holm")[1])
    for g in groups:
        for m, v in zip((g.attacks, g.benign), g.verdicts, strict=True):
            expected = next(reference) if m.table.n else 1.0
            assert v.p_adjusted == pytest.approx(expected, abs=1e-12)
    jb = {g.group: g for g in groups}["jb"]
    assert jb.verdicts[0].verdict == "significantly better"
    assert jb.benign.table.n == 0
    assert jb.verdicts[1].verdict == "no significant difference"
    by_tier = compare_groups(a, b, by="tier")
    assert [g.group for g in by_tier] == ["unspecified"]
    with pytest.raises(StatisticsError):
        compare_groups(a, b, by="language")  # type: ignore[arg-type]
    json.dumps([g.to_dict() for g in groups], allow_nan=False)


def test_empty_classes_stay_out_of_the_family() -> None:
    a = make_run([("c", True, i % 2 == 0) for i in range(60)], run_id="a", spec="a")
    b = make_run([("c", True, True) for _ in range(60)], run_id="b", spec="b")
    cmp = compare_runs([a, b])
    att, ben = cmp.pairs[0].verdicts
    assert att.p_adjusted == att.p_value  # a family of one: Holm changes nothing
    assert ben.p_value == 1.0
    assert ben.p_adjusted == 1.0
