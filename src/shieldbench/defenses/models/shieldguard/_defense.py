"""The ``shieldguard`` defense: the fine-tuned MiniLM classifier, 8-bit ONNX on CPU."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from shieldbench.defenses.models.shieldguard._scorer import Scorer
from shieldbench.errors import ConfigError, PluginUnavailableError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["INSTALL_HINT", "ShieldGuardDefense", "shipped_model_path"]

INSTALL_HINT = "pip install 'shieldbench[shieldguard]'  (onnxruntime, tokenizers, numpy)"


def shipped_model_path() -> Path:
    """The folder of the model shipped with the package."""
    return Path(str(resources.files("shieldbench.defenses.models.shieldguard").joinpath("model")))


class ShieldGuardDefense:
    """Blocks texts whose P(attack), the max over their token windows, reaches the threshold.

    ``folder`` holds ``model.onnx``, ``tokenizer.json`` and ``card.json`` (the
    shipped model, or one written by ``shieldbench train shieldguard OUT``).
    ``threshold`` defaults to the card's, calibrated on benign development data for
    the card's target false positive rate.

    ``batch_size`` is how many windows go through the model in one call (windows
    are sorted by length first, so little is padding). The quantization is
    weight-only (8-bit weights; activations quantized per row at run time), so a
    text's score does not depend on its batch companions beyond float rounding
    (below 1e-4 in probability): ``check`` and ``check_batch`` agree.
    """

    name = "shieldguard"

    def __init__(
        self,
        folder: str | os.PathLike[str] | None = None,
        *,
        threshold: float | None = None,
        threads: int = 2,
        batch_size: int = 16,
    ) -> None:
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"shieldguard: threshold must be in [0, 1], got {threshold}")
        if threads < 1 or batch_size < 1:
            raise ConfigError("shieldguard: threads and batch_size must be at least 1")
        folder = shipped_model_path() if folder is None else Path(folder)
        card_path = folder / "card.json"
        if not card_path.is_file() or not (folder / "model.onnx").is_file():
            raise ConfigError(f"shieldguard: {folder} has no model.onnx and card.json")
        self.card: dict[str, Any] = json.loads(card_path.read_text(encoding="utf-8"))
        self.threshold = float(self.card["threshold"]) if threshold is None else threshold
        try:
            self.scorer = Scorer(folder, threads=threads, batch_size=batch_size)
        except ImportError as exc:
            missing = exc.name or "onnxruntime"
            raise PluginUnavailableError("shieldguard", missing, INSTALL_HINT) from exc
        self.version = f"shieldguard int8-onnx trained {str(self.card.get('created', ''))[:10]}"

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        verdicts = []
        for p, n_windows in self.scorer.score(texts):
            blocked = p >= self.threshold
            verdicts.append(
                Verdict(
                    blocked=blocked,
                    score=p,
                    label="INJECTION" if blocked else "SAFE",
                    reasons=("shieldguard",) if blocked else (),
                    details={"windows": n_windows},
                )
            )
        return verdicts


@defenses.register(
    "shieldguard",
    description="Fine-tuned MiniLM-L6 injection/jailbreak classifier (8-bit ONNX, windowed).",
    usage="shieldguard | shieldguard:DIR | shieldguard(DIR, threshold=0.9, threads=2)",
    requires=("onnxruntime", "tokenizers", "numpy"),
    install_hint=INSTALL_HINT,
    example="shieldguard",
)
def _shieldguard(spec: Spec) -> ShieldGuardDefense:
    spec.check_options({"threshold", "threads", "batch_size"})
    return ShieldGuardDefense(
        Path(spec.arg) if spec.arg else None,
        threshold=spec.float_option("threshold"),
        threads=spec.int_option("threads", 2) or 2,
        batch_size=spec.int_option("batch_size", 16) or 16,
    )
