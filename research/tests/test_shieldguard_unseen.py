"""``research/shieldguard_unseen.py``: its McNemar line names who blocks, checked by hand."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest
from scipy.stats import binomtest


@pytest.fixture(scope="module")
def script() -> ModuleType:
    pytest.importorskip("onnxruntime", reason="shieldguard_unseen imports the shieldguard defense")
    return importlib.import_module("research.shieldguard_unseen")


def test_the_line_names_the_model_that_blocks_each_discordant_row(script: ModuleType) -> None:
    # 7 rows only "old" blocks, 2 only "new" blocks, 1 both, 3 neither
    old = [True] * 7 + [False] * 2 + [True] + [False] * 3
    new = [False] * 7 + [True] * 2 + [True] + [False] * 3
    line = script.mcnemar_line("old", old, "new", new)
    assert "7 rows only old blocks, 2 only new blocks" in line
    assert line.startswith("McNemar, new vs old (benign rows, correct = not blocked)")
    # 9 discordant rows, fewer than 25: McNemar is the exact binomial test
    exact = binomtest(2, 9, 0.5).pvalue
    assert f"p = {exact:.3g}" in line


def test_swapping_the_models_swaps_the_counts_not_the_p_value(script: ModuleType) -> None:
    old = [True, True, True, False, False]
    new = [False, False, True, True, False]
    there = script.mcnemar_line("old", old, "new", new)
    back = script.mcnemar_line("new", new, "old", old)
    assert "2 rows only old blocks, 1 only new blocks" in there
    assert "1 rows only new blocks, 2 only old blocks" in back
    assert there.rsplit("p = ", 1)[1] == back.rsplit("p = ", 1)[1]
