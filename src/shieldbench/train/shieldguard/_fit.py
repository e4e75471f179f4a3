"""shieldguard's fine-tuning loop, importable alone and runnable as a script.

This module imports nothing from shieldbench and nothing heavy at import time, so
the fine-tuning step can run on a machine that has only ``torch``, ``transformers``
and ``tokenizers`` (a GPU box without the project's other dependencies)::

    # where shieldbench is installed: assemble the data once
    shieldbench train shieldguard --prepare data.jsonl.gz
    # anywhere with torch (CPU or CUDA): fine-tune, write the trained weights
    python path/to/_fit.py data.jsonl.gz fitted/ --base MINILM_DIR --device cuda
    # back where shieldbench is installed: export 8-bit ONNX, calibrate, write the card
    shieldbench train shieldguard OUT \\
        --data data.jsonl.gz --weights fitted/weights.pt

``shieldbench train shieldguard OUT`` does all three in
one process on the CPU. The recipe is the same on every path: :class:`TrainConfig`.

The prepared file is gzip'd JSON Lines, one example per line:
``{"split": "train" | "dev" | "select", "text", "label": 0 | 1, "source"}``.
``train`` rows are fitted on; ``dev`` rows (benign) calibrate the threshold;
``select`` rows (the dev split's attacks) only report a development TPR for
choosing a recipe. None of them is ever a reported row.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "FROZEN",
    "REFINE_SOURCES",
    "TrainConfig",
    "add_recipe_arguments",
    "build_model",
    "config_from",
    "dev_report",
    "fit",
    "head_tail",
    "in_recipe",
    "load_trained",
    "read_prepared",
    "save_trained",
    "write_prepared",
]

Row = tuple[str, int, str]  # (text, label, source)
FROZEN = "encoder.embeddings.word_embeddings.weight"
# sources fitted only in the optional stage 2 (shieldguard's _variety module writes them)
REFINE_SOURCES = frozenset(
    {"written:sysprompt", "written:roleplay", "written:chat", "installed:python-docs"}
)
SPLITS = ("train", "dev", "select")


@dataclass(frozen=True)
class TrainConfig:
    """Every knob of a training run (recorded in the card).

    ``steps`` x ``batch_size`` = 48,000 examples, about 1.5 passes over the core
    data (every source but :data:`REFINE_SOURCES`), at ``lr``: the shipped recipe.

    ``refine_steps > 0`` adds a second stage (an experiment, not in the shipped
    recipe): that many steps at ``refine_lr``, each batch half benign-variety rows
    (:data:`REFINE_SOURCES`) and half replayed core rows. Measured with 300 steps
    (docs/models/shieldguard.md), it lowered held-out FPR and TPR together, without a
    better balanced accuracy, so it is off by default.
    ``device`` is ``cpu`` or a torch device such as ``cuda``. ``mix`` is the data
    mix the examples were assembled with (``_data.assemble``; recorded, the loop
    itself only sees rows): 1, the shipped model's, is the default; 2 is the second
    recipe, measured and not adopted (docs/research/data-mix-2.md).
    """

    steps: int = 1500
    batch_size: int = 32
    lr: float = 8e-5
    refine_steps: int = 0
    refine_lr: float = 3e-5
    max_len: int = 128
    seed: int = 0
    target_fpr: float = 0.02
    threads: int = 2
    fold: str | None = None
    device: str = "cpu"
    mix: int = 1


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def head_tail(ids: Sequence[int], limit: int) -> list[int]:
    """The first and last ``limit / 2`` tokens of a long text (how training fits it)."""
    if len(ids) <= limit:
        return list(ids)
    head = limit // 2
    return [*ids[:head], *ids[len(ids) - (limit - head) :]]


def write_prepared(path: Path, parts: dict[str, list[Row]]) -> None:
    """Write ``{split: [(text, label, source), ...]}`` as gzip'd JSON Lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for split in SPLITS:
            for text, label, source in parts.get(split, []):
                record = {"split": split, "text": text, "label": label, "source": source}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_prepared(path: Path) -> dict[str, list[Row]]:
    """Read a prepared file; a bad line raises ``ValueError`` naming file and line."""
    parts: dict[str, list[Row]] = {split: [] for split in SPLITS}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
                split, label = record["split"], int(record["label"])
                if split not in parts or label not in (0, 1):
                    raise ValueError(f"split {split!r} / label {label!r}")
                parts[split].append((str(record["text"]), label, str(record["source"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a prepared example ({exc})") from exc
    if not parts["train"]:
        raise ValueError(f"{path}: no train rows")
    return parts


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


def pad(rows: list[list[int]], device: str = "cpu") -> tuple[Any, Any]:
    """Right-padded ``(input_ids, attention_mask)`` int64 tensors."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids.to(device), mask.to(device)


def encode(texts: Sequence[str], base: Path, max_len: int) -> list[list[int]]:
    """``[CLS] head_tail(tokens) [SEP]`` ids of each text (the training inputs)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cls, sep = tokenizer.token_to_id("[CLS]") or 101, tokenizer.token_to_id("[SEP]") or 102
    encoded = tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return [[cls, *head_tail(e.ids, max_len - 2), sep] for e in encoded]


def build_model(base: Path) -> Any:
    """The base MiniLM encoder (fp32) with mean pooling and one linear logit."""
    import torch
    from transformers import AutoModel

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

    return Classifier(AutoModel.from_pretrained(str(base)).float())


def in_recipe(parts: dict[str, list[Row]], config: TrainConfig) -> dict[str, list[Row]]:
    """``parts`` without the variety rows (:data:`REFINE_SOURCES`) unless ``config``
    refines on them: a model is trained and calibrated on them only if it is refined."""
    if config.refine_steps > 0:
        return parts
    return {k: [r for r in v if r[2] not in REFINE_SOURCES] for k, v in parts.items()}


def fit(rows: list[Row], config: TrainConfig, *, base: Path, stage1: Path | None = None) -> Any:
    """Fine-tune every layer but the word embeddings on ``rows``; the model, in eval mode.

    ``stage1``: weights of a stage-1 fit of the same data and config (from
    :func:`save_trained`, e.g. fitted on a GPU); then only stage 2 runs here.
    """
    import torch

    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    core = [r for r in rows if r[2] not in REFINE_SOURCES]
    extra = [r for r in rows if r[2] in REFINE_SOURCES]
    encoded = encode([r[0] for r in core], base, config.max_len)
    labels = [r[1] for r in core]
    model = build_model(base).to(config.device)
    model.get_parameter(FROZEN).requires_grad_(False)
    if stage1 is not None:
        load_trained(model, stage1)
    else:
        lengths = [len(x) for x in encoded]
        batches: list[list[int]] = []

        def stage1_batch() -> list[int]:
            nonlocal batches
            if not batches:
                batches = _batches(lengths, config.batch_size, rng)
            return batches.pop()

        positives = sum(labels)
        weight = (len(labels) - positives) / max(1, positives)
        steps, lr = config.steps, config.lr
        _stage(model, encoded, labels, stage1_batch, config, steps=steps, lr=lr, pos_weight=weight)
    if config.refine_steps > 0 and extra:
        n_core = len(encoded)
        encoded = encoded + encode([r[0] for r in extra], base, config.max_len)
        labels = labels + [r[1] for r in extra]
        half = config.batch_size // 2
        sizes = [len(x) for x in encoded]
        core_batches: list[list[int]] = []
        extra_batches: list[list[int]] = []

        def refine_batch() -> list[int]:
            # a length bucket of core rows plus the variety bucket closest in length,
            # so that neither half is padded to the other's length for nothing
            nonlocal core_batches, extra_batches
            if not core_batches:
                core_batches = _batches(sizes[:n_core], config.batch_size - half, rng)
            if not extra_batches:
                extra_batches = _batches(sizes[n_core:], half, rng)
            core = core_batches.pop()
            longest = max(sizes[i] for i in core)
            pick = min(
                range(len(extra_batches)),
                key=lambda k: abs(max(sizes[n_core + i] for i in extra_batches[k]) - longest),
            )
            return core + [n_core + i for i in extra_batches.pop(pick)]

        # class balance of what stage 2 samples: half core rows, half benign extra rows
        share = sum(labels[:n_core]) / max(1, n_core) * (config.batch_size - half)
        weight = (config.batch_size - share) / max(share, 1e-6)
        steps, lr = config.refine_steps, config.refine_lr
        _stage(model, encoded, labels, refine_batch, config, steps=steps, lr=lr, pos_weight=weight)
    return model.eval()


def _stage(
    model: Any,
    encoded: list[list[int]],
    labels: list[int],
    next_batch: Any,
    config: TrainConfig,
    *,
    steps: int,
    lr: float,
    pos_weight: float,
) -> None:
    """``steps`` AdamW steps (6% warm-up, linear decay, weighted positives) on ``next_batch()``."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warmup = max(1, int(0.06 * steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))),
    )
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pos_weight, device=config.device))
    model.train()
    running, t0 = 0.0, time.perf_counter()
    for step in range(steps):
        batch = next_batch()
        ids, mask = pad([encoded[i] for i in batch], config.device)
        target = torch.tensor([float(labels[i]) for i in batch], device=config.device)
        loss = loss_fn(model(ids, mask), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        running += float(loss.detach())
        if (step + 1) % 100 == 0:
            rate = (step + 1) / (time.perf_counter() - t0)
            log(f"step {step + 1}/{steps} loss {running / 100:.4f} ({rate:.2f} steps/s)")
            running = 0.0


def save_trained(model: Any, path: Path, *, half: bool = False) -> None:
    """Save every trained tensor (all but the frozen word embeddings), fp32 or fp16.

    fp16 halves the file (22 MB) for moving it between machines; the rounding
    (relative 5e-4) is far below what int8 export changes.
    """
    import torch

    dtype = torch.float16 if half else torch.float32
    state = {k: v.detach().to(dtype).cpu() for k, v in model.state_dict().items() if k != FROZEN}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)


def load_trained(model: Any, path: Path) -> Any:
    """Load weights written by :func:`save_trained` into a model from :func:`build_model`."""
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(
        {k: v.float() for k, v in state.items()}, strict=False
    )
    if unexpected or set(missing) - {FROZEN}:
        raise ValueError(f"{path}: weights do not fit the model ({missing=}, {unexpected=})")
    return model.eval()


def logits(model: Any, texts: Sequence[str], *, base: Path, config: TrainConfig) -> list[float]:
    """fp32 logits of the training view (head and tail) of each text."""
    import torch

    encoded = encode(texts, base, config.max_len)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    out = [0.0] * len(encoded)
    with torch.no_grad():
        for start in range(0, len(order), 64):
            chunk = order[start : start + 64]
            values = model(*pad([encoded[i] for i in chunk], config.device)).tolist()
            for i, v in zip(chunk, values, strict=True):
                out[i] = float(v)
    return out


def dev_report(
    model: Any, parts: dict[str, list[Row]], *, base: Path, config: TrainConfig
) -> dict[str, Any]:
    """Development figures (fp32, training view): threshold at the target FPR, TPR per source.

    Only ``dev`` and ``select`` rows are used: this is what a recipe is chosen on.
    """
    benign = sorted(logits(model, [r[0] for r in parts["dev"]], base=base, config=config))
    cut = benign[min(len(benign) - 1, int((1 - config.target_fpr) * len(benign)))]
    attacks = parts["select"]
    scores = logits(model, [r[0] for r in attacks], base=base, config=config)
    per: dict[str, list[int]] = {}
    for (_, _, source), score in zip(attacks, scores, strict=True):
        cell = per.setdefault(source, [0, 0])
        cell[0] += score > cut
        cell[1] += 1
    hit = sum(c[0] for c in per.values())
    return {
        "dev_benign_n": len(benign),
        "threshold_logit": cut,
        "select_tpr": hit / max(1, len(attacks)),
        "select_n": len(attacks),
        "per_source": dict(sorted(per.items())),
    }


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """Every :class:`TrainConfig` knob but ``fold`` as an option of ``parser`` (same defaults)."""
    defaults = TrainConfig()
    for name in ("steps", "refine_steps", "batch_size", "max_len", "seed", "threads", "mix"):
        flag = f"--{name.replace('_', '-')}"
        parser.add_argument(flag, type=int, default=getattr(defaults, name))
    for name in ("lr", "refine_lr", "target_fpr"):
        flag = f"--{name.replace('_', '-')}"
        parser.add_argument(flag, type=float, default=getattr(defaults, name))
    parser.add_argument("--device", default=defaults.device, help="torch device (default cpu)")


def config_from(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` of parsed options (see :func:`add_recipe_arguments`)."""
    names = [f.name for f in fields(TrainConfig)]
    return TrainConfig(**{name: getattr(args, name) for name in names if hasattr(args, name)})


def main(argv: list[str] | None = None) -> int:
    """``_fit.py DATA OUT [--base DIR] [--device cuda] [--steps N] ...``: fit, save, report."""
    parser = argparse.ArgumentParser(prog="_fit.py", description="fine-tune shieldguard only")
    parser.add_argument("data", type=Path, help="prepared .jsonl.gz (the prepare command)")
    parser.add_argument("out", type=Path, help="folder for weights.pt and dev.json")
    parser.add_argument("--base", type=Path, required=True, help="MiniLM folder (config, weights)")
    add_recipe_arguments(parser)
    parser.add_argument("--stage1", type=Path, default=None, help="stage-1 weights: refine only")
    parser.add_argument("--fold", default=None, help="recorded only: the data decides the fold")
    parser.add_argument("--half", action="store_true", help="save the weights as fp16")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    config = config_from(args)
    try:
        parts = in_recipe(read_prepared(args.data), config)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    model = fit(parts["train"], config, base=args.base, stage1=args.stage1)
    save_trained(model, args.out / "weights.pt", half=args.half)
    report = {
        "config": asdict(config),
        "fit_seconds": round(time.perf_counter() - t0, 1),
        **dev_report(model, parts, base=args.base, config=config),
    }
    (args.out / "dev.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {args.out}: dev TPR {report['select_tpr']:.3f} at FPR {config.target_fpr}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
