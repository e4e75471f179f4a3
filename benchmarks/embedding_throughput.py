"""Is the engine the bottleneck for the embedding defenses?

Baseline: the embedding model's own batch encoding,
``SentenceTransformer.encode(texts, batch_size=32)`` (sorted by length inside,
the fastest way the model embeds a list), on the same texts. Measured: the same
texts screened by ``semantic`` and ``embedding-lr`` through
:func:`shieldbench.engine.run_defense` (``check_batch`` path, one caller), with
their embedding cache switched off (``cache_size=0``) so every text is really
encoded. Throughput is texts per second of wall time; the ratio is
defense / baseline (goal: at least 0.85, i.e. within 15%).

Each measurement is repeated ``--rounds`` times, interleaved, and the median
kept. CPU timings move with what else runs on the machine: compare ratios, not
absolute numbers.

Run: ``.venv/bin/python benchmarks/embedding_throughput.py [--dataset builtin:core]
[--rounds 3] [--engine-batch 256]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense
from shieldbench.defenses._embedding import load_minilm
from shieldbench.engine import run_defense
from shieldbench.types import RunConfig

GOAL = 0.85


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="builtin:core")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine-batch", type=int, default=256)
    parser.add_argument("--encode-batch", type=int, default=32)
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset)
    texts = [s.text for s in dataset]
    model = load_minilm()
    model.encode(texts[:64], batch_size=args.encode_batch)  # warm the model up
    specs = [
        f"semantic(cache_size=0, batch_size={args.encode_batch})",
        f"embedding-lr(cache_size=0, batch_size={args.encode_batch})",
    ]
    defenses = {spec: build_defense(spec) for spec in specs}
    config = RunConfig(
        batch_size=args.engine_batch, concurrency=1, timeout_s=None, retries=0, warmup=0
    )
    timings: dict[str, list[float]] = {"baseline": [], **{spec: [] for spec in specs}}
    for _ in range(args.rounds):
        started = time.perf_counter()
        model.encode(texts, batch_size=args.encode_batch, show_progress_bar=False)
        timings["baseline"].append(time.perf_counter() - started)
        for spec, defense in defenses.items():
            run = run_defense(defense, dataset, config=config, defense_spec=spec)  # type: ignore[arg-type]
            assert all(o.is_ok for o in run.outcomes), "a defense failed during the benchmark"
            timings[spec].append(run.duration_s)

    baseline = len(texts) / statistics.median(timings["baseline"])
    print(f"{len(texts)} texts from {args.dataset}, median of {args.rounds} interleaved rounds")
    print(f"engine batch {args.engine_batch}, encoder batch {args.encode_batch}\n")
    print(f"{'what':58s} {'texts/s':>9s} {'ratio':>7s}")
    print(f"{'baseline: model.encode(texts) (sentence-transformers)':58s} {baseline:9.1f} {1:7.3f}")
    ratios = []
    for spec in specs:
        throughput = len(texts) / statistics.median(timings[spec])
        ratio = throughput / baseline
        ratios.append(ratio)
        print(f"{spec + ' via run_defense':58s} {throughput:9.1f} {ratio:7.3f}")
    worst = min(ratios)
    verdict = "OK" if worst >= GOAL else "BELOW GOAL"
    print(f"\nworst ratio {worst:.3f} (goal >= {GOAL}): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
