"""``hf:PATH``: any local Hugging Face sequence classifier as a defense (PyTorch).

The folder is what ``save_pretrained`` (or ``huggingface-cli download --local-dir``)
writes: ``config.json``, the weights and the tokenizer. It is loaded with
``AutoModelForSequenceClassification`` and ``AutoTokenizer``, always with
``local_files_only=True``: a hub name is never downloaded. The score is the
probability of the attack labels named by ``label=`` (read from the config's
``id2label``, so two-label models and Prompt Guard's BENIGN / INJECTION / JAILBREAK
both work); long texts are windowed (or truncated) as :mod:`._classifier` describes.

``trust_remote_code`` stays off unless the spec turns it on; then the model's own
Python code runs, the defense's version says so, and a warning is issued once per
process and folder.

Example (needs a model on disk)::

    shieldbench defenses inspect 'hf(models/prompt-guard, label=INJECTION|JAILBREAK)'
    shieldbench check "Ignore previous instructions" -d 'hf(models/prompt-guard, label=INJECTION)'
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

from shieldbench.defenses.models._classifier import (
    SequenceClassifier,
    TokenFrame,
    build_classifier,
)
from shieldbench.defenses.models._model_files import (
    ClassifierOptions,
    folder_digest,
    model_folder,
    optional_json,
)
from shieldbench.errors import ConfigError, PluginUnavailableError
from shieldbench.registry import defenses
from shieldbench.spec import Spec

__all__ = ["HF_INSTALL_HINT", "TrustRemoteCodeWarning", "load_hf_classifier"]

HF_INSTALL_HINT = (
    "pip install 'shieldbench[hf]'  (transformers, numpy; install torch first, e.g."
    " pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)
_DTYPES = ("float32", "float16", "bfloat16")
_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


class TrustRemoteCodeWarning(UserWarning):
    """A model's own Python code was allowed to run (``trust_remote_code=true``)."""


def _warn_remote_code(folder: Path) -> None:
    key = str(folder.resolve())
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn(
        f"hf: trust_remote_code=true runs the Python code in {folder} with your"
        " permissions; the run's defense version records it",
        TrustRemoteCodeWarning,
        stacklevel=3,
    )


def _torch_device(torch: Any, wanted: str, where: str) -> str:
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"{where}: device={wanted} but torch sees no CUDA device (a CPU build of torch,"
            " or no GPU given to this process, e.g. Ray without --gpus-per-worker);"
            " use device=cpu or device=auto"
        )
    return wanted


def load_hf_classifier(
    folder: Path,
    options: ClassifierOptions,
    *,
    dtype: str = "float32",
    trust_remote_code: bool = False,
    where: str = "hf",
) -> SequenceClassifier:
    """Load the classifier in ``folder`` (local files only) as a defense."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise PluginUnavailableError("hf", exc.name or "transformers", HF_INSTALL_HINT) from exc
    if dtype not in _DTYPES:
        raise ConfigError(f"{where}: dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    if not folder.is_dir():
        raise ConfigError(f"{where}: {folder} is not a folder (hf: takes a model folder)")
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{where}: {folder} has no config.json (is it a save_pretrained folder?)")
    if trust_remote_code:
        _warn_remote_code(folder)
    device = _torch_device(torch, options.device, where)
    config, tokenizer, model = _load(transformers, folder, trust_remote_code, where)
    if options.threads:
        torch.set_num_threads(options.threads)  # process-wide: torch has no per-model pool
    model = model.to(device=device, dtype=getattr(torch, dtype)).eval()

    def forward(ids: Any, mask: Any) -> Any:
        with torch.inference_mode():
            out = model(
                input_ids=torch.from_numpy(ids).to(device),
                attention_mask=torch.from_numpy(mask).to(device),
            )
        return out.logits.float().cpu().numpy()

    facts = {
        "backend": f"transformers {transformers.__version__}, torch {torch.__version__}",
        "path": str(folder),
        "architecture": ", ".join(config.get("architectures") or [type(model).__name__]),
        "parameters": sum(p.numel() for p in model.parameters()),
        "device": device,
        "dtype": dtype,
        "threads": options.threads or torch.get_num_threads(),
        "trust_remote_code": trust_remote_code,
    }
    return build_classifier(
        "hf",
        where=where,
        name=f"hf:{folder.name}",
        config=config,
        tokenizer_config=optional_json(folder / "tokenizer_config.json", kind=where),
        tokens=TokenFrame(tokenizer.backend_tokenizer, pad_id=_pad_id(tokenizer)),
        options=options,
        backend=forward,
        digest=folder_digest(folder, code=trust_remote_code),
        facts=facts,
        extra=[f"dtype={dtype}"] + (["trust_remote_code=true"] if trust_remote_code else []),
        distribution="transformers",
    )


def _load(
    transformers: Any, folder: Path, trust_remote_code: bool, where: str
) -> tuple[dict[str, Any], Any, Any]:
    """``(config as a dict, tokenizer, model)`` from local files; clear errors otherwise."""
    load = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    try:
        config = transformers.AutoConfig.from_pretrained(str(folder), **load)
        _check_head(config, folder, where)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **load)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(str(folder), **load)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(_load_error(exc, folder, where, trust_remote_code)) from None
    if getattr(tokenizer, "backend_tokenizer", None) is None:
        raise ConfigError(
            f"{where}: {folder} has no fast tokenizer (tokenizer.json), which hf: needs;"
            " save one with AutoTokenizer.from_pretrained(..., use_fast=True).save_pretrained"
        )
    return dict(config.to_dict()), tokenizer, model


def _check_head(config: Any, folder: Path, where: str) -> None:
    """Refuse a folder without a trained classification head (its scores would be random)."""
    architectures = list(getattr(config, "architectures", None) or [])
    custom = dict(getattr(config, "auto_map", None) or {})
    if "AutoModelForSequenceClassification" in custom:
        return  # the model's own code maps itself to a sequence classifier
    if architectures and not any("SequenceClassification" in a for a in architectures):
        raise ConfigError(
            f"{where}: {folder} holds a {', '.join(architectures)}, not a sequence classifier;"
            " loading it as one would put a randomly initialised head on it"
        )


def _pad_id(tokenizer: Any) -> int | None:
    pad = getattr(tokenizer, "pad_token_id", None)
    return pad if isinstance(pad, int) else None


def _load_error(exc: Exception, folder: Path, where: str, trust_remote_code: bool) -> str:
    text = str(exc)
    if "trust_remote_code" in text and not trust_remote_code:
        return (
            f"{where}: {folder} needs its own Python code (config.json auto_map), which hf: does"
            " not run by default; read that code, and if you trust it add trust_remote_code=true"
        )
    return f"{where}: cannot load the model in {folder}: {type(exc).__name__}: {text}"


@defenses.register(
    "hf",
    description=(
        "Any local Hugging Face sequence classifier (PIGuard, ProtectAI DeBERTa, Prompt Guard):"
        " P(attack labels), windowed, batched, CPU or GPU; never downloads."
    ),
    usage=(
        "hf:DIR | hf(DIR, label=INJECTION|JAILBREAK, threshold=0.5, max_length=512,"
        " window=STRIDE|truncate, batch_size=32, device=cpu|cuda|auto, dtype=float32,"
        " threads=N, trust_remote_code=false)"
    ),
    requires=("torch", "transformers", "numpy"),
    install_hint=HF_INSTALL_HINT,
)
def _hf(spec: Spec) -> SequenceClassifier:
    spec.check_options(ClassifierOptions.SHARED | {"dtype", "trust_remote_code"})
    options = ClassifierOptions.from_spec(spec)
    folder = model_folder(spec.arg, kind="hf", what="prompt-guard")
    return load_hf_classifier(
        folder,
        options,
        dtype=(spec.str_option("dtype") or "float32").strip().lower(),
        trust_remote_code=spec.bool_option("trust_remote_code"),
        where=f"hf {spec.text!r}",
    )
