"""Choose ``recommended``'s composition on rows no report uses, then test the choice.

``recommended`` is what users deploy, so its composition is chosen like a model:
on selection rows, with the figures to quote measured on other rows afterwards.

- **Selection rows**: for each leave-one-source-out fold (``shieldguard_eval.FOLDS``),
  rows of the held-out sources that are *not* in the reported LOSO sample
  (``fold_rows``), at most ``--per-set`` per source and label, seeded. shieldguard is
  the fold's model (trained without those sources), so every part is scored on
  sources it never saw. Sets with no rows left (giskard, GPTFuzz, BIPIA's attacks,
  AgentDojo) are reported but cannot be selected on.
- **Candidates** (:data:`CANDIDATES`) were written down before any was scored
  (round 2, shieldguard at a threshold set on PyPI READMEs, after round 1's
  report; round 3, ``embedding-lr`` and ``topic-shift`` set the same way, after
  round 2). Each is a function of the parts' verdicts and scores, so one pass per
  part scores them all; each name is the spec it stands for (``@readmes``: at
  :func:`readme_threshold`).
- **Criterion**: balanced accuracy, the mean of the pooled TPR over the selection
  attacks and of the mean benign accuracy (1 - FPR) over the selection benign sets;
  the README judges the stage-2 experiment the same way.
- ``--report``: the chosen candidate against ``recommended`` on the reported rows
  (the LOSO samples with the fold models, the 30% test split with ``--model``, and
  ``shieldguard_unseen``'s benign sources), with McNemar per protocol.

Run: ``python -m research.pipeline_select --folds DIR --cache DIR [--report NAME]``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from research.shieldguard_eval import Row, _sample, fold_rows, paired, test_rows, verdicts
from research.shieldguard_unseen import _fmt, pypi_readmes  # a Wilson-interval cell
from research.shieldguard_unseen import sources as unseen_sources
from shieldbench.defenses import build_defense
from shieldbench.defenses.models.shieldguard import ShieldGuardDefense, shipped_model_path
from shieldbench.metrics import compare_auc, mcnemar_test, roc_auc
from shieldbench.train.shieldguard import FOLDS, calibrate

Parts = dict[str, dict[str, list[Any]]]  # part -> {"blocked": [...], "score": [...]}
PARTS = ("pattern", "embedding-lr", "topic-shift")
SG = "shieldguard"
CALIBRATED = (SG, "embedding-lr", "topic-shift")  # each also at its ``@readmes`` threshold
SCORED = (SG, "embedding-lr")  # the two parts whose scores ``fuse`` averages


def _any(*columns: Sequence[bool]) -> list[bool]:
    return [any(flags) for flags in zip(*columns, strict=True)]


def _fused(p: Parts, threshold: float) -> list[bool]:
    pairs = zip(*(p[n]["score"] for n in SCORED), strict=True)
    return [(a + b) / 2 >= threshold for a, b in pairs]


def _b(p: Parts, name: str) -> list[bool]:
    return [bool(x) for x in p[name]["blocked"]]


def _fuse_rule(threshold: float) -> Callable[[Parts], list[bool]]:
    return lambda p: _any(_b(p, "pattern"), _fused(p, threshold))


Candidate = tuple[str, Callable[[Parts], list[bool]]]
CANDIDATES: list[Candidate] = [
    ("any(pattern, embedding-lr, topic-shift)", lambda p: _any(*(_b(p, n) for n in PARTS))),
    ("any(pattern, embedding-lr)", lambda p: _any(_b(p, "pattern"), _b(p, "embedding-lr"))),
    ("any(pattern, shieldguard)", lambda p: _any(_b(p, "pattern"), _b(p, "shieldguard"))),
    (
        "any(pattern, embedding-lr, shieldguard)",
        lambda p: _any(_b(p, "pattern"), _b(p, "embedding-lr"), _b(p, "shieldguard")),
    ),
    (
        "any(pattern, embedding-lr, topic-shift, shieldguard)",
        lambda p: _any(*(_b(p, n) for n in (*PARTS, "shieldguard"))),
    ),
    *(
        (f"any(pattern, fuse(shieldguard, embedding-lr, threshold={t:g}))", _fuse_rule(t))
        for t in (0.5, 0.6, 0.7, 0.8, 0.9)
    ),
    # Round 2, written after round 1's report: shieldguard at a threshold set on a
    # benign source kept out of training (PyPI READMEs, 2% FPR) instead of its card's.
    ("any(pattern, shieldguard@readmes)", lambda p: _any(_b(p, "pattern"), _b(p, f"{SG}@readmes"))),
    (
        "any(pattern, embedding-lr, shieldguard@readmes)",
        lambda p: _any(_b(p, "pattern"), _b(p, "embedding-lr"), _b(p, f"{SG}@readmes")),
    ),
    (
        "any(pattern, embedding-lr, topic-shift, shieldguard@readmes)",
        lambda p: _any(*(_b(p, n) for n in (*PARTS, f"{SG}@readmes"))),
    ),
    # Round 3, after round 2: recommended's own parts at thresholds set on the READMEs.
    (
        "any(pattern, embedding-lr, topic-shift@readmes)",
        lambda p: _any(_b(p, "pattern"), _b(p, "embedding-lr"), _b(p, "topic-shift@readmes")),
    ),
    (
        "any(pattern, embedding-lr@readmes, topic-shift@readmes)",
        lambda p: _any(*(_b(p, n) for n in ("pattern", *(f"{x}@readmes" for x in PARTS[1:])))),
    ),
]


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()[:12]


def part_scores(
    rows: Sequence[Row],
    model: Path,
    cache: Path,
    *,
    names: Sequence[str] = (*PARTS, SG),
    derive: bool = True,
) -> Parts:
    """Verdicts and scores of every part (and shieldguard ``model``) on ``rows``, cached.

    With ``derive``, each part of :data:`CALIBRATED` also gets a ``NAME@readmes`` column:
    blocked at :func:`readme_threshold`, which it holds as ``"threshold": [cut]``.
    """
    texts = [r[1] for r in rows]
    out: Parts = {}
    for name in names:
        key = _digest([texts, name, str(model) if name == SG else ""])
        path = cache / f"part-{name}-{key}.json"
        if path.is_file():
            out[name] = json.loads(path.read_text())
            continue
        defense = ShieldGuardDefense(model) if name == SG else build_defense(name)
        got = verdicts(defense, texts)[0]
        column = {"blocked": [bool(v.blocked) for v in got], "score": [v.score for v in got]}
        print(f"  {name}: {len(texts)} texts", file=sys.stderr, flush=True)
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(column))
        out[name] = column
    for name in [n for n in CALIBRATED if n in out] if derive else []:
        cut = readme_threshold(model, cache, part=name)
        blocked = [s >= cut for s in out[name]["score"]]
        out[f"{name}@readmes"] = {"blocked": blocked, "threshold": [cut]}
    return out


@functools.cache
def _readme_rows() -> list[Row]:
    texts = list(dict.fromkeys(pypi_readmes()))
    random.Random(0).shuffle(texts)
    return [("pypi-readmes:calibration", t, 0) for t in texts[300:900]]


def readme_threshold(
    model: Path, cache: Path, *, part: str = SG, target_fpr: float = 0.02
) -> float:
    """A part's threshold for ``target_fpr`` on PyPI README passages no table reports.

    A calibration-only benign source: no recipe trains on READMEs, and these are the
    600 passages after the 300 that ``shieldguard_unseen`` reports (its seeded order).
    """
    rows = _readme_rows()
    scores = part_scores(rows, model, cache, names=(part,), derive=False)[part]["score"]
    return calibrate(scores, [r[0] for r in rows], target_fpr)[0]


def selection_rows(fold: str, per_set: int, reported_per_set: int) -> list[Row]:
    """Held-out rows of ``fold`` outside the reported LOSO sample, capped per set and label."""
    reported = set(fold_rows(fold, reported_per_set))
    remainder = [r for r in fold_rows(fold, 10**9) if r not in reported]
    rows: list[Row] = []
    for name in dict.fromkeys(r[0] for r in remainder):
        rows += _sample([r for r in remainder if r[0] == name], per_set)
    return rows


def balanced(
    rows: Sequence[Row], blocked: Sequence[bool]
) -> tuple[float, float | None, float | None]:
    """(balanced accuracy, pooled TPR, mean benign accuracy over benign sets).

    With one class only, the balanced accuracy is that class's figure and the
    other is ``None``: the unseen sources are all benign.
    """
    hits = [b for r, b in zip(rows, blocked, strict=True) if r[2] == 1]
    tpr = sum(hits) / len(hits) if hits else None
    accs = []
    for name in dict.fromkeys(r[0] for r in rows if r[2] == 0):
        flags = [b for r, b in zip(rows, blocked, strict=True) if r[0] == name and r[2] == 0]
        accs.append(1 - sum(flags) / len(flags))
    benign = sum(accs) / len(accs) if accs else None
    known = [x for x in (tpr, benign) if x is not None]
    return sum(known) / len(known), tpr, benign


def per_set(rows: Sequence[Row], blocked: Sequence[bool]) -> str:
    cells = []
    for key in dict.fromkeys((r[0], r[2]) for r in rows):
        flags = [b for r, b in zip(rows, blocked, strict=True) if (r[0], r[2]) == key]
        cells.append(f"{key[0]}{'+' if key[1] else '-'} {_fmt(flags)} n={len(flags)}")
    return "; ".join(cells)


def select(args: argparse.Namespace) -> None:
    rows: list[Row] = []
    parts: Parts = {}  # every fold's rows, each scored with its fold model, concatenated
    rankings = []
    for fold in FOLDS:
        got_rows = selection_rows(fold, args.per_set, args.reported_per_set)
        got = part_scores(got_rows, args.folds / f"fold-{fold}", args.cache)
        cuts = {n: got[f"{n}@readmes"]["threshold"][0] for n in CALIBRATED}
        rankings.append(
            f"{fold}: @readmes thresholds " + ", ".join(f"{n} {c:.4f}" for n, c in cuts.items())
        )
        if len({r[2] for r in got_rows}) == 2:  # scores of different models do not pool
            rankings.append(f"{fold} ({len(got_rows)} rows): {ranking(got_rows, got)}")
        rows += got_rows
        for name, column in got.items():
            for k, values in column.items():
                parts.setdefault(name, {}).setdefault(k, []).extend(values)
    print(f"\nselection rows: {len(rows)} (texts hash {_digest([r[1] for r in rows])})\n")
    head = ("candidate", "balanced accuracy", "pooled TPR", "mean benign accuracy", "(TPR+2b)/3")
    print("| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|")
    for name, rule in CANDIDATES:
        bal, tpr, benign = balanced(rows, rule(parts))
        if tpr is None or benign is None:
            raise SystemExit("selection rows need attacks and benign texts: is ../shared there?")
        print(f"| {name} | {bal:.4f} | {tpr:.3f} | {benign:.3f} | {(tpr + 2 * benign) / 3:.4f} |")
    print("\n" + "\n".join(rankings))
    if args.verbose:
        for name, rule in CANDIDATES:
            print(f"\n{name}: {per_set(rows, rule(parts))}")


def ranking(rows: Sequence[Row], parts: Parts) -> str:
    """ROC AUC (threshold aside) of shieldguard against the mean ``fuse`` takes (DeLong)."""
    labels = [bool(r[2]) for r in rows]
    fused = [(a + b) / 2 for a, b in zip(*(parts[n]["score"] for n in SCORED), strict=True)]
    auc = compare_auc(labels, parts["shieldguard"]["score"], fused)
    alone = roc_auc(labels, parts["embedding-lr"]["score"]).value
    return (
        f"ROC AUC, shieldguard {auc.auc_a.value:.3f} -> mean(shieldguard, embedding-lr)"
        f" {auc.auc_b.value:.3f} (embedding-lr alone {alone:.3f}); DeLong p = {auc.p_value:.3g}"
    )


def _compare(title: str, rows: Sequence[Row], parts: Parts, chosen: Candidate) -> None:
    old = CANDIDATES[0][1](parts)
    new = chosen[1](parts)
    table = paired([r[2] for r in rows], old, new)
    test = mcnemar_test(table)
    acc_old = (table.both + table.only_a) / len(rows)
    acc_new = (table.both + table.only_b) / len(rows)
    print(
        f"\n### {title}: {len(rows)} rows\n\nrecommended: {per_set(rows, old)}\n\n"
        f"{chosen[0]}: {per_set(rows, new)}\n\nbalanced accuracy {balanced(rows, old)[0]:.3f}"
        f" -> {balanced(rows, new)[0]:.3f}; accuracy {acc_old:.3f} -> {acc_new:.3f};"
        f" both right {table.both}, only recommended {table.only_a}, only the candidate"
        f" {table.only_b}; McNemar p = {test.p_value:.3g}",
        flush=True,
    )
    if len({r[2] for r in rows}) == 2:
        print(ranking(rows, parts))


def report(args: argparse.Namespace) -> None:
    chosen = next(c for c in CANDIDATES if c[0] == args.report)
    for fold in FOLDS:
        rows = fold_rows(fold, args.reported_per_set)
        parts = part_scores(rows, args.folds / f"fold-{fold}", args.cache)
        _compare(f"held-out {fold}", rows, parts, chosen)
    model = args.model or shipped_model_path()
    rows = test_rows(args.reported_per_set)
    _compare("30% test split", rows, part_scores(rows, model, args.cache), chosen)
    unseen = [(name, t, 0) for name, texts in unseen_sources(300).items() for t in texts]
    _compare("unseen benign sources", unseen, part_scores(unseen, model, args.cache), chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=Path, required=True, help="holds fold-<name>/ models")
    parser.add_argument("--model", type=Path, default=None, help="full model (test, unseen)")
    parser.add_argument("--cache", type=Path, required=True, help="part scores are kept here")
    parser.add_argument("--per-set", type=int, default=120, help="selection rows per set+label")
    parser.add_argument("--reported-per-set", type=int, default=200)
    parser.add_argument("--report", default=None, help="a candidate's name: test it")
    parser.add_argument("--verbose", action="store_true", help="per-set selection figures")
    args = parser.parse_args(argv)
    if args.report is None:
        select(args)
    elif args.report not in {c[0] for c in CANDIDATES}:
        parser.error(f"--report {args.report!r} is not a candidate: {[c[0] for c in CANDIDATES]}")
    else:
        report(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
