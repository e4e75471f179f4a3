"""shieldguard's speed on CPU: per text, one at a time and batched, short to long texts.

Texts are ``builtin:core`` samples grown or cut to a target token count (WordPiece
tokens, counted with the model's tokenizer): ~20 (short prompts), 128, 512, and
2,000 (a long document: 11 windows of 256 tokens). For each length it reports
the median per-text time of ``check`` one text at a time and of ``check_batch``
over 32 texts (batch wall time / 32), the windows used, and, for long texts,
the cost of windowing: the same texts cut to their first window (what a
truncating model would pay, while missing everything after it).

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
