"""``research/shieldguard_eval.py --tables``: the docs' per-source tables from a saved report.

The script's models are not needed to print a saved report, so this runs everywhere; the
figures are checked against counts done by hand on a tiny report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from research import shieldguard_eval as script

ROOT = Path(__file__).resolve().parents[2]


def _report() -> dict[str, object]:
    rows = [["a", 1], ["a", 1], ["a", 1], ["b", 0], ["b", 0]]
    return {
        "loso:jailbreak": {  # attacks only: the FPR table must not claim 0.000
            "rows": rows[:3],
            "blocked": {"recommended": [True, False, True], "recommended-next": [1, 1, 1]},
        },
        "test": {
            "rows": rows,
            "blocked": {
                "recommended": [True, True, False, True, False],
                "recommended-next": [True, True, True, False, False],
                "nanoguard": [True, None, None, False, None],  # None: not measured
            },
        },
    }


def test_tables_print_every_protocol_with_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "eval.json"
    saved.write_text(json.dumps(_report()))
    assert script.main(["--tables", str(saved)]) == 0
    out = capsys.readouterr().out
    jailbreak, test = out.split("#### 30% test split (in-distribution)")
    assert jailbreak.startswith("#### held-out fold: jailbreak")
    assert "FPR (benign blocked): no rows with this label." in jailbreak
    assert "| recommended | 0.667 [0.21, 0.94] n=3 | 0.667 [0.21, 0.94] n=3 |" in jailbreak
    # nanoguard: only the rows it was measured on count (1 of 1 attack, 0 of 1 benign).
    assert "| nanoguard | 1.000 [0.21, 1.00] n=1 | 1.000 [0.21, 1.00] n=1 |" in test
    assert "| nanoguard | 0.000 [0.00, 0.79] n=1 | 0.000 |" in test
    assert "| recommended | 0.500 [0.09, 0.91] n=2 | 0.500 |" in test
    # recommended-next is right on both rows recommended gets wrong: two-sided 2 * 0.5**2.
    assert (
        "only recommended 0, only recommended-next 2; p = 0.5 (exact-binomial, 2 discordant rows)"
    ) in test


def test_pooled_mcnemar_counts_every_fold_and_baseline_is_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report()
    report["loso:chat"] = {
        "rows": [["c", 0], ["c", 0], ["c", 1]],
        "blocked": {"recommended": [False, True, True], "recommended-next": [True, True, True]},
    }
    test = report["test"]
    assert isinstance(test, dict)
    test["blocked"]["shieldguard"] = [True, True, True, False, False]
    test["blocked"]["shieldguard-baseline"] = [False, False, True, True, True]
    saved = tmp_path / "eval.json"
    saved.write_text(json.dumps(report))
    assert script.main(["--tables", str(saved)]) == 0
    out = capsys.readouterr().out
    # jailbreak fold: rows 2 only-new right; chat fold: row 1 only-old right, row 2 neither.
    assert (
        "Pooled over 2 held-out folds, recommended-next vs recommended: both right 3,"
        " only recommended 1, only recommended-next 1, neither 1; p = 1 (exact-binomial)"
    ) in out
    # baseline wrong on rows 1, 2, 4, 5; shieldguard right on all of them, wrong on none.
    assert (
        "McNemar, shieldguard vs shieldguard-baseline (correct per row): only"
        " shieldguard-baseline 0, only shieldguard 4; p = 0.125 (exact-binomial, 4 discordant rows)"
    ) in out


def test_summary_lists_single_source_folds_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report()  # loso:jailbreak is a group: left out of the summary
    deepset: dict[str, object] = {
        "rows": [["deepset", 1], ["deepset", 1], ["deepset", 0]],
        "blocked": {"shieldguard": [True, False, False], "nanoguard": [None, True, True]},
        "threshold": [0.768317, "dev FPR <= 0.02 on every ... (n=1356; binding: cyberseceval_pi)"],
    }
    report["loso:deepset"] = deepset
    saved = tmp_path / "eval.json"
    saved.write_text(json.dumps(report))
    assert script.main(["--tables", str(saved), "--summary"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| held-out source | rows | shieldguard | recommended-next |")
    assert not any("jailbreak" in line for line in out)
    assert out[2].startswith("| deepset | attacks: TPR | 0.500 [0.09, 0.91] n=2 | — |")
    assert out[2].endswith("| 1.000 [0.21, 1.00] n=1 | 0.768 (cyberseceval_pi) |")
    assert out[3].startswith("| deepset | benign: FPR | 0.000 [0.00, 0.79] n=1 | — |")
    assert out[0].endswith("| nanoguard | threshold (binding) |")
    # the card's structured source wins over the rule's text
    deepset["threshold"] = [0.5, "dev FPR <= 0.02 ... (binding: alpaca_harmless_5k)", "bipia_train"]
    saved.write_text(json.dumps(report))
    assert script.main(["--tables", str(saved), "--summary"]) == 0
    assert capsys.readouterr().out.splitlines()[2].endswith("n=1 | 0.500 (bipia_train) |")
    # a rule with no binding source and no structured field: the value alone
    deepset["threshold"] = [0.9, "dev FPR <= 0.02 on the pooled dev rows", None]
    saved.write_text(json.dumps(report))
    assert script.main(["--tables", str(saved), "--summary"]) == 0
    assert capsys.readouterr().out.splitlines()[2].endswith("n=1 | 0.900 |")
    # a report written before thresholds were saved still prints, with a dash
    del deepset["threshold"]
    saved.write_text(json.dumps(report))
    assert script.main(["--tables", str(saved), "--summary"]) == 0
    assert capsys.readouterr().out.splitlines()[2].endswith("n=1 | — |")


def test_the_single_source_table_in_the_docs_is_the_saved_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The single-source details table (docs/research/leave-one-source-out.md, once in the
    README) is printed from the report kept in the repo."""
    root = ROOT
    saved = root / "research" / "results" / "shieldguard_loso_single.json"
    assert script.main(["--tables", str(saved), "--summary"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 + 16  # header, rule, a row per source and label (16)
    page = root / "docs" / "research" / "leave-one-source-out.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    missing = [line for line in printed if line not in lines]
    assert not missing, f"{page.name} lacks these rows of {saved.name}: {missing}"
