"""shieldguard's speed on CPU: per text, one at a time and batched, short to long texts.

Texts are ``builtin:core`` samples grown or cut to a target token count (WordPiece
tokens, counted with the model's tokenizer): ~20 (short prompts), 128, 512, and
2,000 (a long document: 11 windows of 256 tokens). For each length it reports
the median per-text time of ``check`` one text at a time and of ``check_batch``
over 32 texts (batch wall time / 32), the windows used, and, for long texts,
the cost of windowing: the same texts cut to their first window (what a
truncating model would pay, while missing everything after it).

A last table measures a realistic mix: up to 256 texts of at most 512 tokens drawn
(seeded) from ``builtin:core`` and the test split of ``../shared/datasets`` when it
is there: the median and 90th percentile of ``check`` one text at a time, and the
mean per text of ``check_batch`` over the whole mix.

Run: ``python benchmarks/shieldguard_speed.py [--model DIR] [--threads 2] [--repeat 5]``.
Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from shieldbench.datasets import load_dataset
from shieldbench.defenses.models.shieldguard import WINDOW, ShieldGuardDefense
from shieldbench.errors import ConfigError

LENGTHS = (20, 128, 512, 2000)


def texts_of(guard: ShieldGuardDefense, tokens: int, n: int = 32) -> list[str]:
    pool = [s.text for s in load_dataset("builtin:core")]
    out = []
    for i in range(n):
        ids: list[int] = []
        j = i
        while len(ids) < tokens:
            ids += guard.scorer.token_ids([pool[j % len(pool)]])[0]
            j += 37
        out.append(guard.scorer.tokenizer.decode(ids[:tokens]))
    return out


def per_text_ms(fn: object, texts: list[str], repeat: int, *, batch: bool) -> float:
    times = []
    for _ in range(repeat):
        if batch:
            start = time.perf_counter()
            fn.check_batch(texts)  # type: ignore[attr-defined]
            times.append((time.perf_counter() - start) / len(texts))
        else:
            for t in texts[:8]:
                start = time.perf_counter()
                fn.check(t)  # type: ignore[attr-defined]
                times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def mix_of(guard: ShieldGuardDefense, n: int = 256, limit: int = 512) -> list[str]:
    """Seeded real texts of at most ``limit`` tokens: builtin:core plus shared test rows."""
    import random

    from shieldbench.train.shieldguard import SHARED, shared_rows, split_of

    pool = [s.text for s in load_dataset("builtin:core")]
    for name in SHARED:
        try:
            pool += [t for i, t, _, _ in shared_rows(name) if split_of(i) == "test"]
        except ConfigError:
            break  # no ../shared/datasets here: builtin:core alone
    random.Random(0).shuffle(pool)
    lengths = [len(ids) for ids in guard.scorer.token_ids(pool[: 4 * n])]
    return [t for t, k in zip(pool, lengths, strict=False) if k <= limit][:n]


def mix(guard: ShieldGuardDefense) -> None:
    texts = mix_of(guard)
    tokens = sorted(len(ids) for ids in guard.scorer.token_ids(texts))
    guard.check_batch(texts[:8])
    single = []
    for t in texts:
        start = time.perf_counter()
        guard.check(t)
        single.append(1000 * (time.perf_counter() - start))
    single.sort()
    start = time.perf_counter()
    guard.check_batch(texts)
    batched = 1000 * (time.perf_counter() - start) / len(texts)
    print()
    print("| mix (n, median tokens) | single median ms | single p90 ms | batched mean ms/text |")
    print("|---|---:|---:|---:|")
    median_tokens = tokens[len(tokens) // 2]
    p90 = single[int(0.9 * (len(single) - 1))]
    print(
        f"| {len(texts)} texts, {median_tokens} tokens | {statistics.median(single):.1f}"
        f" | {p90:.1f} | {batched:.1f} |",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    guard = ShieldGuardDefense(args.model, threads=args.threads)
    print(
        "| tokens | windows | single ms/text | batched (32) ms/text | first window only ms/text |"
    )
    print("|---:|---:|---:|---:|---:|")
    for tokens in LENGTHS:
        texts = texts_of(guard, tokens)
        windows = guard.check(texts[0]).details["windows"]
        single = per_text_ms(guard, texts, args.repeat, batch=False)
        batched = per_text_ms(guard, texts, args.repeat, batch=True)
        first = "same"
        if tokens > WINDOW:
            cut = [
                guard.scorer.tokenizer.decode(guard.scorer.token_ids([t])[0][:WINDOW])
                for t in texts
            ]
            first = f"{per_text_ms(guard, cut, args.repeat, batch=True):.1f}"
        print(f"| {tokens} | {windows} | {single:.1f} | {batched:.1f} | {first} |", flush=True)
    mix(guard)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
