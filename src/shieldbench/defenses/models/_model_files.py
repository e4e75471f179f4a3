"""What the ``hf:`` and ``onnx:`` adapters read from a model folder, and their shared options.

- :func:`model_folder`: the folder a spec names, checked to exist (never a hub name:
  nothing is downloaded, ever);
- :func:`folder_digest`: the model's identity, a SHA-256 over its weights, config
  and tokenizer files (names and bytes), so two models or two exports of one
  model never share a version;
- :func:`id2label` and :func:`resolve_labels`: the label map of ``config.json`` and
  which of its labels count as an attack;
- :func:`model_limit`: the longest input the model takes, from its config and
  tokenizer config;
- :class:`ClassifierOptions`: the options both adapters take, validated once.

Example:
    >>> labels = resolve_labels({0: "BENIGN", 1: "INJECTION", 2: "JAILBREAK"}, None, where="hf")
    >>> labels.positive_names
    ('INJECTION', 'JAILBREAK')
    >>> resolve_labels({0: "SAFE", 1: "INJECTION"}, "injection", where="hf").positive
    (1,)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shieldbench.errors import ConfigError
from shieldbench.spec import Spec

__all__ = [
    "BENIGN_NAMES",
    "ClassifierOptions",
    "Labels",
    "folder_digest",
    "id2label",
    "model_folder",
    "model_limit",
    "optional_json",
    "read_json",
    "resolve_labels",
]

BENIGN_NAMES = frozenset({"benign", "safe", "legit", "legitimate", "normal", "clean", "negative"})
"""Label names read as "not an attack" when the spec names no ``label=``."""

# Files that decide a model's scores: weights (any format, sharded too), config,
# tokenizer, and custom code (only ever run with trust_remote_code=true).
_IDENTITY_SUFFIXES = (".safetensors", ".bin", ".onnx", ".onnx_data", ".data", ".pt", ".model")
_IDENTITY_NAMES = frozenset(
    {
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
    }
)
_DIGESTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}
_DIGEST_LOCK = threading.Lock()


def model_folder(raw: str | None, *, kind: str, what: str) -> Path:
    """The existing folder ``raw`` names, or a :class:`ConfigError` saying what to pass."""
    if not raw:
        raise ConfigError(f"{kind}: name the model folder, e.g. '{kind}:models/{what}'")
    path = Path(os.path.expanduser(raw))
    if not path.exists():
        hub = "/" in raw and not raw.startswith(("/", ".", "~")) and raw.count("/") == 1
        hint = (
            f" ({raw!r} looks like a hub name: shieldbench never downloads; save the model"
            " locally first, e.g. huggingface-cli download ... --local-dir DIR)"
            if hub
            else ""
        )
        raise ConfigError(f"{kind}: model folder {raw!r} does not exist{hint}")
    return path


def read_json(path: Path, *, kind: str) -> dict[str, Any]:
    """A JSON object from ``path``; a :class:`ConfigError` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{kind}: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{kind}: {path} is not a JSON object")
    return data


def optional_json(path: Path, *, kind: str) -> dict[str, Any]:
    """:func:`read_json` of ``path``, or ``{}`` when there is no such file."""
    return read_json(path, kind=kind) if path.is_file() else {}


def folder_digest(folder: Path, *, code: bool = False) -> str:
    """SHA-256 (hex) over the names and bytes of the files that decide the scores.

    Weights, ``config.json`` and tokenizer files directly in ``folder``, in name
    order; ``code=True`` adds its ``*.py`` (custom model code). Cached per process
    by file names, sizes and modification times, so a rebuilt defense does not hash
    a large model twice.
    """
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and (
            p.name in _IDENTITY_NAMES
            or p.name.endswith(_IDENTITY_SUFFIXES)
            or (code and p.suffix == ".py")
        )
    )
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(folder.resolve()), stamp)
    with _DIGEST_LOCK:
        cached = _DIGESTS.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    value = digest.hexdigest()
    with _DIGEST_LOCK:
        _DIGESTS[key] = value
    return value


def id2label(config: Mapping[str, Any], *, where: str) -> dict[int, str]:
    """``config["id2label"]`` with integer keys (``LABEL_i`` names when it only has a count)."""
    raw = config.get("id2label")
    if isinstance(raw, Mapping) and raw:
        try:
            labels = {int(k): str(v) for k, v in raw.items()}
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: id2label keys must be integers, got {list(raw)}") from None
    else:
        count = config.get("num_labels")
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"{where}: the config has no id2label: name the labels with labels=")
        labels = {i: f"LABEL_{i}" for i in range(count)}
    if sorted(labels) != list(range(len(labels))):
        raise ConfigError(f"{where}: id2label must number its labels 0..n-1, got {sorted(labels)}")
    return labels


@dataclass(frozen=True, slots=True)
class Labels:
    """A model's labels (by output index) and which of them count as an attack."""

    names: tuple[str, ...]
    positive: tuple[int, ...]
    multi_label: bool = False

    @property
    def positive_names(self) -> tuple[str, ...]:
        return tuple(self.names[i] for i in self.positive)

    def describe_score(self) -> str:
        """What the score means, in words (``defenses inspect`` prints it)."""
        if len(self.names) == 1:
            return f"sigmoid of the single logit ({self.names[0]})"
        if self.multi_label:
            terms = " or ".join(f"P({n})" for n in self.positive_names)
            return f"max of {terms}, each a sigmoid (multi-label model)"
        terms = " + ".join(f"P({n})" for n in self.positive_names)
        return f"{terms}, softmax over the {len(self.names)} labels"

    def label_map(self) -> str:
        """``0:BENIGN,1:INJECTION,2:JAILBREAK`` (for the defense's version)."""
        return ",".join(f"{i}:{n}" for i, n in enumerate(self.names))


def resolve_labels(
    names: Mapping[int, str], requested: str | None, *, where: str, multi_label: bool = False
) -> Labels:
    """The positive labels: those ``requested`` names (``A|B``), or every non-benign one.

    Names match exactly, else case-insensitively. With no request, a model with
    exactly one label named like ``BENIGN`` / ``SAFE`` (see :data:`BENIGN_NAMES`)
    counts every other label as an attack; any other model must be told.
    """
    ordered = tuple(names[i] for i in range(len(names)))
    listing = ", ".join(ordered)
    if len(ordered) == 1:
        if requested is not None and _match(ordered, requested.strip()) is None:
            raise ConfigError(
                f"{where}: unknown label {requested!r}; the model's labels: {listing}"
            )
        return Labels(ordered, (0,), multi_label)
    if requested is None:
        benign = [i for i, n in enumerate(ordered) if n.strip().lower() in BENIGN_NAMES]
        if len(benign) != 1:
            raise ConfigError(
                f"{where}: name the attack label(s) with label=NAME (or NAME|NAME);"
                f" the model's labels: {listing}"
            )
        return Labels(ordered, tuple(i for i in range(len(ordered)) if i != benign[0]), multi_label)
    chosen: list[int] = []
    for part in requested.split("|"):
        index = _match(ordered, part.strip())
        if index is None:
            raise ConfigError(
                f"{where}: unknown label {part.strip()!r}; the model's labels: {listing}"
            )
        if index not in chosen:
            chosen.append(index)
    if len(chosen) == len(ordered) and not multi_label:
        raise ConfigError(
            f"{where}: label= names every label ({listing}), so every text would score 1;"
            " name only the attack labels"
        )
    return Labels(ordered, tuple(sorted(chosen)), multi_label)


def _match(names: tuple[str, ...], wanted: str) -> int | None:
    if wanted in names:
        return names.index(wanted)
    folded = [i for i, n in enumerate(names) if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def model_limit(config: Mapping[str, Any], tokenizer_config: Mapping[str, Any]) -> int | None:
    """The longest input (special tokens included) the model takes, when the files say.

    The smaller of the tokenizer's ``model_max_length`` (ignored when it is the
    "no limit" sentinel) and the config's ``max_position_embeddings`` (less the two
    positions RoBERTa-style models reserve after the padding index).
    """
    limits: list[int] = []
    tok = tokenizer_config.get("model_max_length")
    if isinstance(tok, int | float) and 0 < tok < 1_000_000:
        limits.append(int(tok))
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        reserved = 2 if "roberta" in str(config.get("model_type", "")).lower() else 0
        limits.append(positions - reserved)
    return min(limits) if limits else None


@dataclass(frozen=True, slots=True)
class ClassifierOptions:
    """The options ``hf(...)`` and ``onnx(...)`` share, validated from a spec.

    ``window`` is ``None`` for the default stride (three quarters of a window),
    ``0`` for truncation (``window=truncate``), else the stride in tokens.
    """

    label: str | None
    threshold: float
    max_length: int | None
    window: int | None
    batch_size: int
    device: str
    threads: int

    SHARED = frozenset(
        {"label", "threshold", "max_length", "window", "batch_size", "device", "threads"}
    )

    @classmethod
    def from_spec(cls, spec: Spec) -> ClassifierOptions:
        threshold = spec.float_option("threshold", 0.5)
        assert threshold is not None
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"{spec.text!r}: threshold must be in [0, 1], got {threshold}")
        max_length = spec.int_option("max_length")
        if max_length is not None and max_length < 3:
            raise ConfigError(f"{spec.text!r}: max_length must be at least 3, got {max_length}")
        raw_window = (spec.str_option("window") or "").strip().lower()
        window: int | None
        if not raw_window:
            window = None
        elif raw_window == "truncate":
            window = 0
        else:
            window = spec.int_option("window")
            if window is None or window < 1:
                raise ConfigError(
                    f"{spec.text!r}: window= is a stride in tokens (>= 1) or 'truncate',"
                    f" got {raw_window!r}"
                )
        batch_size = spec.int_option("batch_size", 32) or 0
        threads = spec.int_option("threads", 0)
        if batch_size < 1 or threads is None or threads < 0:
            raise ConfigError(f"{spec.text!r}: batch_size must be >= 1 and threads >= 0")
        device = (spec.str_option("device") or "cpu").strip().lower()
        if device not in ("cpu", "cuda", "auto") and not (
            device.startswith("cuda:") and device[5:].isdigit()
        ):
            raise ConfigError(
                f"{spec.text!r}: device must be cpu, cuda, cuda:N or auto, got {device!r}"
            )
        label = spec.str_option("label")
        return cls(label, threshold, max_length, window, batch_size, device, threads)
