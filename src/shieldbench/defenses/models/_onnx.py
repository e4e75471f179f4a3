"""``onnx:PATH``: an exported sequence classifier run by ONNX Runtime, as a defense.

``PATH`` is a folder holding ``model.onnx`` (or a single ``*.onnx``) with the
tokenizer beside it (``tokenizer.json``) and ``config.json`` for the labels, what
``optimum-cli export onnx`` and ``torch.onnx.export`` plus ``save_pretrained``
write; or the ``.onnx`` file itself, its folder holding the rest. A folder without
``config.json`` names its labels in the spec: ``onnx(DIR, labels=SAFE|INJECTION)``.

Only ``onnxruntime``, ``tokenizers`` and ``numpy`` are needed at run time
(``pip install 'shieldbench[onnx]'``), no torch, which is why teams deploy these
models this way on CPU. The graph's inputs are fed by name: ``input_ids``,
``attention_mask`` and, when the graph has it, ``token_type_ids`` (zeros); the
logits are the output named ``logits``, else the first. Scoring, windowing and
labels are shared with ``hf:`` (:mod:`._classifier`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from shieldbench.defenses.models._classifier import (
    Backend,
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

__all__ = ["ONNX_INSTALL_HINT", "load_onnx_classifier"]

ONNX_INSTALL_HINT = "pip install 'shieldbench[onnx]'  (onnxruntime, tokenizers, numpy)"
_FEEDS = ("input_ids", "attention_mask", "token_type_ids")


def _graph_file(path: Path, where: str) -> Path:
    if path.is_file():
        return path
    preferred = path / "model.onnx"
    if preferred.is_file():
        return preferred
    found = sorted(path.glob("*.onnx"))
    if len(found) != 1:
        listing = ", ".join(p.name for p in found) or "none"
        raise ConfigError(
            f"{where}: {path} must hold model.onnx or exactly one .onnx file (found: {listing});"
            " or name the file: onnx:DIR/NAME.onnx"
        )
    return found[0]


def _providers(ort: Any, device: str, where: str) -> list[Any]:
    cpu = "CPUExecutionProvider"
    if device == "cpu":
        return [cpu]
    available = ort.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        if device == "auto":
            return [cpu]
        raise ConfigError(
            f"{where}: device={device} but this onnxruntime has no CUDA provider"
            f" (available: {', '.join(available)}); pip install onnxruntime-gpu, or device=cpu"
        )
    index = int(device.partition(":")[2] or 0)
    return [("CUDAExecutionProvider", {"device_id": index}), cpu]


def load_onnx_classifier(
    path: Path, options: ClassifierOptions, *, labels: str | None = None, where: str = "onnx"
) -> SequenceClassifier:
    """Load the ONNX classifier at ``path`` (a folder or its ``.onnx`` file) as a defense."""
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise PluginUnavailableError("onnx", exc.name or "onnxruntime", ONNX_INSTALL_HINT) from exc
    graph = _graph_file(path, where)
    folder = graph.parent
    config = _config(folder, graph, labels, where)
    if not (folder / "tokenizer.json").is_file():
        raise ConfigError(
            f"{where}: no tokenizer.json beside {graph.name} in {folder}: save the model's fast"
            " tokenizer there (AutoTokenizer.from_pretrained(...).save_pretrained(DIR))"
        )
    pad = config.get("pad_token_id")
    session, forward = _session(ort, graph, options, where)
    facts = {
        "backend": f"onnxruntime {ort.__version__}",
        "path": str(graph),
        "architecture": ", ".join(config.get("architectures") or ["unknown (no config.json)"]),
        "parameters": lambda: _parameter_count(graph),
        "device": ", ".join(session.get_providers()),
        "dtype": "as exported",
        "threads": options.threads or "onnxruntime's default",
        "trust_remote_code": False,
    }
    return build_classifier(
        "onnx",
        where=where,
        name=f"onnx:{folder.name}",
        config=config,
        tokenizer_config=optional_json(folder / "tokenizer_config.json", kind=where),
        tokens=TokenFrame(
            Tokenizer.from_file(str(folder / "tokenizer.json")),
            pad_id=pad if isinstance(pad, int) else None,
        ),
        options=options,
        backend=forward,
        digest=folder_digest(folder),
        facts=facts,
        distribution="onnxruntime",
    )


def _config(folder: Path, graph: Path, labels: str | None, where: str) -> dict[str, Any]:
    """``config.json`` beside the graph, with ``labels=`` as its ``id2label`` when given."""
    config = optional_json(folder / "config.json", kind=where)
    if labels is not None:
        names = [n.strip() for n in labels.split("|")]
        if not all(names):
            raise ConfigError(f"{where}: labels= needs names separated by '|', got {labels!r}")
        return {**config, "id2label": dict(enumerate(names))}
    if "id2label" not in config:
        raise ConfigError(
            f"{where}: no config.json with id2label beside {graph.name}: copy the model's"
            " config.json there, or name the outputs with labels=NAME|NAME"
        )
    return config


def _session(ort: Any, graph: Path, options: ClassifierOptions, where: str) -> tuple[Any, Backend]:
    """The ONNX Runtime session and the backend feeding it by input name."""
    import numpy as np

    session_options = ort.SessionOptions()
    session_options.intra_op_num_threads = options.threads
    session_options.inter_op_num_threads = 1
    providers = _providers(ort, options.device, where)
    try:
        session = ort.InferenceSession(str(graph), session_options, providers=providers)
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ConfigError(f"{where}: cannot load {graph}: {type(exc).__name__}: {exc}") from None
    inputs = {i.name: i for i in session.get_inputs()}
    if set(inputs) - set(_FEEDS) or "input_ids" not in inputs:
        raise ConfigError(
            f"{where}: {graph.name} takes inputs {', '.join(inputs)}; onnx: feeds"
            f" {', '.join(_FEEDS)} (input_ids required)"
        )
    dtypes = {n: np.int32 if "int32" in i.type else np.int64 for n, i in inputs.items()}
    outputs = [o.name for o in session.get_outputs()]
    output = "logits" if "logits" in outputs else outputs[0]

    def forward(ids: Any, mask: Any) -> Any:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        run = {n: feeds[n].astype(dtypes[n], copy=False) for n in inputs}
        return session.run([output], run)[0]

    return session, forward


def _parameter_count(graph: Path) -> int | str:
    """The number of weights in the graph's initializers (needs the ``onnx`` package)."""
    try:
        import onnx
    except ImportError:
        return "unknown (pip install onnx to count)"
    model = onnx.load(str(graph), load_external_data=False)
    return int(sum(math.prod(t.dims) for t in model.graph.initializer))


@defenses.register(
    "onnx",
    description=(
        "An exported sequence classifier on ONNX Runtime (tokenizer.json and config.json"
        " beside it): P(attack labels), windowed, batched; no torch needed."
    ),
    usage=(
        "onnx:DIR | onnx:DIR/model.onnx | onnx(DIR, label=INJECTION|JAILBREAK, threshold=0.5,"
        " max_length=512, window=STRIDE|truncate, batch_size=32, device=cpu|cuda|auto,"
        " threads=N, labels=SAFE|INJECTION)"
    ),
    requires=("onnxruntime", "tokenizers", "numpy"),
    install_hint=ONNX_INSTALL_HINT,
)
def _onnx(spec: Spec) -> SequenceClassifier:
    spec.check_options(ClassifierOptions.SHARED | {"labels"})
    options = ClassifierOptions.from_spec(spec)
    path = model_folder(spec.arg, kind="onnx", what="prompt-guard-onnx")
    return load_onnx_classifier(
        path, options, labels=spec.str_option("labels"), where=f"onnx {spec.text!r}"
    )
