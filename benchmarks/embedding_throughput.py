"""Is the engine the bottleneck for the embedding defenses?

Baseline: the embedding model's own batch encoding,
``SentenceTransformer.encode(texts, batch_size=32)`` (sorted by length inside,
the fastest way the model embeds a list), on the same texts. Measured: the same
texts screened by ``semantic`` and ``embedding-lr`` through
:func:`shieldbench.engine.run_defense` (``check_batch`` path, one caller), with
their embedding cache switched off (``cache_size=0``) so every text is really
encoded. Throughput is texts per second of wall time; the ratio is
defense / baseline (goal: at least 0.85, i.e. within 15%).

The engine hands a batch defense ``--engine-batch`` texts per call; the model
pads each of its mini-batches to its longest text, and sorting by length can
only happen inside a call, so small engine batches pad more. Both a moderate
(256) and a large (1024) engine batch are measured: the gap between them is
padding, not engine overhead (``check_batch`` on the whole list matches
``encode`` on it).

Each measurement is repeated ``--rounds`` times, interleaved, in an order
rotated every round (so no contender always runs first), and the median
kept. CPU timings move with what else runs on the machine: compare ratios,
not absolute numbers.

Run: ``.venv/bin/python benchmarks/embedding_throughput.py [--dataset builtin:core]
[--rounds 5] [--engine-batch 256,1024] [--limit N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from shieldbench.datasets import head_dataset, load_dataset
from shieldbench.defenses import build_defense
from shieldbench.defenses.models._embedding import load_minilm
from shieldbench.engine import run_defense
from shieldbench.types import RunConfig

GOAL = 0.85


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="builtin:core")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine-batch", default="256,1024", help="comma-separated sizes")
    parser.add_argument("--encode-batch", type=int, default=32)
    parser.add_argument("--limit", type=int, default=None, help="only the first N texts")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset)
    if args.limit is not None:
        dataset = head_dataset(dataset, args.limit)
    texts = [s.text for s in dataset]
    model = load_minilm()
    model.encode(texts[:64], batch_size=args.encode_batch)  # warm the model up
    specs = [
        f"semantic(cache_size=0, batch_size={args.encode_batch})",
        f"embedding-lr(cache_size=0, batch_size={args.encode_batch})",
    ]
    defenses = {spec: build_defense(spec) for spec in specs}
    sizes = [int(size) for size in args.engine_batch.split(",")]
    configs = {
        f"{spec} | engine batch {size}": (
            spec,
            RunConfig(batch_size=size, concurrency=1, timeout_s=None, retries=0, warmup=0),
        )
        for size in sizes
        for spec in specs
    }
    contenders = ["baseline", *configs]
    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for round_no in range(args.rounds):
        shift = round_no % len(contenders)
        for name in contenders[shift:] + contenders[:shift]:
            if name == "baseline":
                started = time.perf_counter()
                model.encode(texts, batch_size=args.encode_batch, show_progress_bar=False)
                timings[name].append(time.perf_counter() - started)
                continue
            spec, config = configs[name]
            run = run_defense(defenses[spec], dataset, config=config, defense_spec=spec)  # type: ignore[arg-type]
            assert all(o.is_ok for o in run.outcomes), "a defense failed during the benchmark"
            timings[name].append(run.duration_s)

    baseline = len(texts) / statistics.median(timings["baseline"])
    print(f"{len(texts)} texts from {args.dataset}, median of {args.rounds} interleaved rounds")
    print(f"encoder mini-batch {args.encode_batch}\n")
    print(f"{'what':74s} {'texts/s':>9s} {'ratio':>7s}")
    print(f"{'baseline: model.encode(texts) (sentence-transformers)':74s} {baseline:9.1f} {1:7.3f}")
    ratios: dict[int, list[float]] = {size: [] for size in sizes}
    for name, (_, config) in configs.items():
        throughput = len(texts) / statistics.median(timings[name])
        ratios[config.batch_size].append(throughput / baseline)
        print(f"{name + ' (run_defense)':74s} {throughput:9.1f} {throughput / baseline:7.3f}")
    print()
    for size, found in ratios.items():
        verdict = "OK" if min(found) >= GOAL else "BELOW GOAL"
        print(f"engine batch {size}: worst ratio {min(found):.3f} (goal >= {GOAL}): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
