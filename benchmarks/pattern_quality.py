"""How well the ``pattern`` defense separates attacks from benign text on real data.

Prints TPR (share of attacks blocked) and FPR (share of benign texts blocked) with
Wilson 95% intervals for each public dataset in ``../shared/datasets`` (see its
README for sources and licences). Only the tracks ``pattern`` is meant for are
scored: prompt injections and jailbreak prompts as attacks, and everyday, role-play,
over-refusal (XSTest safe) and document texts as benign. Plain harmful questions
(``harmful_request/*``) are not injections and are left out.

Run: ``.venv/bin/python benchmarks/pattern_quality.py [--threshold 0.5] [--data DIR]``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shieldbench.defenses.pattern import DEFAULT_THRESHOLD, PatternDefense

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"

# (file, label, category prefixes kept; empty = every row with that label)
TRACKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("deepset.jsonl", "attack", ()),
    ("giskard_pi.jsonl", "attack", ()),
    ("inthewild_jailbreak.jsonl", "attack", ("jailbreak/",)),
    ("gptfuzz.jsonl", "attack", ("jailbreak/",)),
    ("bipia_train.jsonl", "attack", ()),
    ("alpaca_harmless_5k.jsonl", "benign", ()),
    ("gpteacher_roleplay.jsonl", "benign", ()),
    ("xstest.jsonl", "benign", ()),
    ("deepset.jsonl", "benign", ()),
    ("bipia_train.jsonl", "benign", ()),
)


@dataclass(frozen=True)
class Row:
    dataset: str
    label: str
    n: int
    blocked: int

    @property
    def rate(self) -> float:
        return self.blocked / self.n if self.n else math.nan


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (nan, nan when n == 0)."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def texts(path: Path, label: str, prefixes: tuple[str, ...]) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["label"] != label:
                continue
            if prefixes and not str(row.get("category", "")).startswith(prefixes):
                continue
            yield row["text"]


def evaluate(data: Path, *, threshold: float = DEFAULT_THRESHOLD) -> list[Row]:
    """One row per (dataset, label) track: how many texts, how many blocked."""
    defense = PatternDefense(threshold=threshold)
    rows = []
    for file, label, prefixes in TRACKS:
        samples = list(texts(data / file, label, prefixes))
        blocked = sum(defense.check(text).blocked for text in samples)
        rows.append(Row(file.removesuffix(".jsonl"), label, len(samples), blocked))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no shared datasets at {args.data}; pass --data DIR", file=sys.stderr)
        return 2
    print(f"pattern defense, threshold {args.threshold}")
    print(f"{'dataset':<22} {'label':<7} {'n':>5} {'metric':<4} {'rate':>6}  95% CI")
    for row in evaluate(args.data, threshold=args.threshold):
        low, high = wilson(row.blocked, row.n)
        metric = "TPR" if row.label == "attack" else "FPR"
        print(
            f"{row.dataset:<22} {row.label:<7} {row.n:>5} {metric:<4} {row.rate:>6.1%}"
            f"  [{low:.1%}, {high:.1%}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
