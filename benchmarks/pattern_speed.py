"""Speed of the ``pattern`` defense, as ratios against baselines measured in the same run.

(a) Throughput: ``PatternDefense.check`` against a straightforward loop of
    ``re.search`` over the *same* rule patterns (Python's ``re``), on the same
    realistic texts (the shipped ``builtin:core`` suite), both after the same
    normalisation and both scoring the decoded hidden payloads. The two must agree
    on which rules fire; the run stops if they do not. Target: >= 5x.
(b) Linearity: time per byte on one 1 MB adversarial input against time per byte on
    1 KB adversarial inputs (1,000 of them, same generator). Target: within 2x.
    The adversarial text is a random mix of rule prefixes that never complete
    ("ignore all previous and the of your ...", "<|im_", "system prom", leetspeak,
    zero-width and homoglyph fragments, Morse and base64 shards): the worst case for
    a backtracking engine, and a stress test for RE2's lazily built DFA.

Timings are the best of several repetitions (noise on a shared machine only ever adds
time). Run: ``.venv/bin/python benchmarks/pattern_speed.py``; ``measure()`` returns
the numbers for a combined benchmark script. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import shieldbench.datasets
from shieldbench.defenses.pattern import HIDDEN_MIN_WEIGHT, RULES, PatternDefense
from shieldbench.defenses.rules._normalize import normalize

CORE = Path(shieldbench.datasets.__file__).parent / "builtin" / "core"
THROUGHPUT_TARGET = 5.0
PER_BYTE_TARGET = 2.0

_FRAGMENTS = (
    "ignore all previous and the of your ", "ignore ", "previous ", "all the ", "you are now ",
    "<|im_", "[ins", "system prom", "decode th", "show me your ", "forget every",
    "do anything no", "developer mod", "stay in char", "no matter how ", "1gn0r3 ",
    "pr3v10us ", "a b c d e f g ", "aWdub3Jl", "ignore\u200b ", "іgnоrе ", "### instr", "</us",
    "not bound by the ", "without any ethical ", "regardless of the ", "from now on you ",
    "two different separate ", "\\n \\n ", "-- .- ", ". ", "vergiss alle ", "olvida las ",
)  # fmt: skip


def adversarial_text(n_chars: int, *, seed: int) -> str:
    """``n_chars`` of near-miss rule fragments in random order (deterministic)."""
    rnd = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        fragment = rnd.choice(_FRAGMENTS)
        parts.append(fragment)
        size += len(fragment)
    return "".join(parts)[:n_chars]


def realistic_texts() -> list[str]:
    """Every text of the shipped ``builtin:core`` suite (attacks and benign traffic)."""
    texts: list[str] = []
    for path in sorted(CORE.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            texts.extend(json.loads(line)["text"] for line in handle if line.strip())
    if not texts:
        raise SystemExit(f"no texts found under {CORE}")
    return texts


class ReSearchLoop:
    """The baseline: the same rules, one ``re.search`` each, on the same normalised text."""

    def __init__(self) -> None:
        self.rules = [(rule, re.compile(rule.pattern)) for rule in RULES]

    def fired(self, text: str) -> set[str]:
        norm = normalize(text)
        hits = {rule.id for rule, pattern in self.rules if pattern.search(norm.text)}
        for hidden in norm.hidden:
            hits.update(
                rule.id
                for rule, pattern in self.rules
                if rule.weight >= HIDDEN_MIN_WEIGHT and pattern.search(hidden)
            )
        return hits


def _best_time(fn: Callable[[], object], *, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _pattern_fired(defense: PatternDefense, text: str) -> set[str]:
    # Only regex rules: the baseline has no evasion signals to report.
    return {r.id for r in defense.fired_rules(text) if r.pattern}


def _check_agreement(defense: PatternDefense, baseline: ReSearchLoop, texts: Sequence[str]) -> int:
    for text in texts:
        ours, theirs = _pattern_fired(defense, text), baseline.fired(text)
        if ours != theirs:
            raise SystemExit(f"engines disagree on {text[:80]!r}: {sorted(ours ^ theirs)}")
    return len(texts)


def measure(*, repeat: int = 3) -> dict[str, float]:
    """Run both measurements; returns timings and the two ratios."""
    defense = PatternDefense()
    baseline = ReSearchLoop()
    texts = realistic_texts()
    _check_agreement(defense, baseline, texts)
    n_bytes = sum(len(t.encode()) for t in texts)

    def run_pattern() -> None:
        for text in texts:
            defense.check(text)

    def run_baseline() -> None:
        for text in texts:
            baseline.fired(text)

    run_pattern()  # warm RE2's lazily built DFA
    t_pattern = _best_time(run_pattern, repeat=repeat)
    t_baseline = _best_time(run_baseline, repeat=repeat)

    small = [adversarial_text(1_000, seed=i) for i in range(1_000)]
    big = adversarial_text(1_000_000, seed=10_000)
    for text in small[:50]:
        defense.check(text)
    t_small = _best_time(lambda: [defense.check(t) for t in small], repeat=repeat)
    t_big = _best_time(lambda: defense.check(big), repeat=repeat)
    small_bytes = sum(len(t.encode()) for t in small)
    big_bytes = len(big.encode())
    us_small = t_small / small_bytes * 1e6
    us_big = t_big / big_bytes * 1e6
    return {
        "n_texts": float(len(texts)),
        "mb_realistic": n_bytes / 1e6,
        "pattern_texts_per_s": len(texts) / t_pattern,
        "re_loop_texts_per_s": len(texts) / t_baseline,
        "throughput_ratio": t_baseline / t_pattern,
        "us_per_byte_1kb": us_small,
        "us_per_byte_1mb": us_big,
        "per_byte_ratio_1mb_vs_1kb": us_big / us_small,
    }


def main() -> int:
    m = measure()
    ok_throughput = m["throughput_ratio"] >= THROUGHPUT_TARGET
    ok_linear = m["per_byte_ratio_1mb_vs_1kb"] <= PER_BYTE_TARGET
    print(f"pattern defense speed ({len(RULES)} rules)")
    print(
        f"(a) throughput on {m['n_texts']:.0f} builtin:core texts ({m['mb_realistic']:.2f} MB):"
        f" pattern {m['pattern_texts_per_s']:,.0f} texts/s,"
        f" re.search loop {m['re_loop_texts_per_s']:,.0f} texts/s"
    )
    print(
        f"    ratio pattern / re.search loop = {m['throughput_ratio']:.1f}x"
        f" (target >= {THROUGHPUT_TARGET:.0f}x: {'met' if ok_throughput else 'MISSED'})"
    )
    print(
        f"(b) adversarial input: {m['us_per_byte_1mb']:.3f} us/byte on 1 MB,"
        f" {m['us_per_byte_1kb']:.3f} us/byte on 1 KB inputs"
    )
    print(
        f"    ratio 1 MB / 1 KB per byte = {m['per_byte_ratio_1mb_vs_1kb']:.2f}"
        f" (target <= {PER_BYTE_TARGET:.0f}: {'met' if ok_linear else 'MISSED'})"
    )
    return 0 if ok_throughput and ok_linear else 1


if __name__ == "__main__":
    raise SystemExit(main())
