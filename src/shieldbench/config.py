"""Benchmark configuration files (YAML): which defenses, which datasets, how to run.

A config file names everything a ``shieldbench run`` needs, so a benchmark is one
file under version control::

    # shieldbench run --config bench.yaml
    defenses:            # spec strings, see `shieldbench defenses list`
      - pattern
      - semantic
    datasets:            # each defense runs on each dataset
      - builtin:core
      - jsonl:data/my_traffic.jsonl
    run:                 # RunConfig fields, all optional
      error_policy: fail_closed
      timeout_s: 30
      concurrency: 8
      retries: 2
      warmup: 3
      batch_size: 32
      latency_sample: 100  # texts of a batched run timed one per call
    margin: 0.1          # warn when a category is too small for this CI half-width
    out: reports/nightly # where the reports go (default reports/<id>/)
    end_to_end:          # optional: send what the defense lets through to a model
      target: llm:ollama/llama3.2
      judges: [refusal, leak]
      rule: any                    # any | all | majority
      output_defenses: [secrets]   # screen the answers too
      system_prompt: null          # text or @FILE; default: a prompt with a canary
      screen: text                 # text | last_user | user_turns | tool_results | all

Relative paths in a config file are resolved against the folder of the config
file (not the current directory), so a benchmark runs the same from anywhere:
``out:`` and the file of a file dataset (``jsonl:``, ``csv:``, ``parquet:``,
``pint:``, ``hf-disk:``, in either spec form). On the command line, paths are
relative to the current directory as usual. Unknown keys are errors (a typo must not silently
change a benchmark).

Example:
    >>> cfg = parse_config({"defenses": ["pattern"], "datasets": ["builtin:smoke"],
    ...                     "run": {"timeout_s": 5}})
    >>> cfg.defenses, cfg.run.timeout_s
    (('pattern',), 5.0)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shieldbench._textio import read_text_input
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

__all__ = ["BenchmarkConfig", "load_config", "parse_config"]

_TOP_KEYS = frozenset({"defenses", "datasets", "run", "margin", "out", "end_to_end"})
_E2E_KEYS = frozenset({"target", "judges", "rule", "output_defenses", "system_prompt", "screen"})
_FLOAT_FIELDS = frozenset({"timeout_s", "retry_backoff_s"})
_INT_FIELDS = frozenset({"concurrency", "retries", "warmup", "batch_size", "latency_sample"})


@dataclass(frozen=True, slots=True)
class BenchmarkConfig:
    """A whole benchmark: every defense runs on every dataset with ``run`` settings."""

    defenses: tuple[str, ...]
    datasets: tuple[str, ...]
    run: RunConfig = field(default_factory=RunConfig)
    margin: float = 0.1
    out: Path | None = None
    end_to_end: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        """Check every field, so a config built in Python is as safe as a file's.

        A list of specs becomes a tuple and a ``str`` ``out`` a :class:`Path`; anything
        else of the wrong type or out of range is a :class:`ConfigError` naming the field.
        """
        where = "BenchmarkConfig"
        for key in ("defenses", "datasets"):
            specs = _unique(_spec_list({key: getattr(self, key)}, key, where), key, where)
            object.__setattr__(self, key, specs)
        if not isinstance(self.run, RunConfig):
            raise ConfigError(f"{where}: run must be a RunConfig, got {self.run!r}")
        _check_margin(self.margin, where)
        out: object = self.out
        if isinstance(out, str):
            out = Path(out)
        if out is not None and not isinstance(out, Path):
            raise ConfigError(f"{where}: out must be a directory path, got {out!r}")
        object.__setattr__(self, "out", out)
        object.__setattr__(self, "end_to_end", _end_to_end(self.end_to_end, where))


def _unique(specs: tuple[str, ...], key: str, source: str) -> tuple[str, ...]:
    repeated = sorted({s for s in specs if specs.count(s) > 1})
    if repeated:
        raise ConfigError(f"{source}: {key} names {', '.join(repeated)} twice; name each once")
    return specs


def _check_margin(margin: object, source: str) -> None:
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin <= 0.5:
        raise ConfigError(f"{source}: margin must be a number in (0, 0.5], got {margin!r}")


def _spec_list(data: Mapping[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        raise ConfigError(f"{source}: missing '{key}:' (a list of spec strings)")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise ConfigError(f"{source}: '{key}:' must be a non-empty list of spec strings")
    specs: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{source}: {key}[{i}] must be a spec string, got {item!r}")
        specs.append(item.strip())
    return tuple(specs)


def _run_config(raw: Any, source: str) -> RunConfig:
    if raw is None:
        return RunConfig()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: 'run:' must be a mapping of RunConfig fields")
    known = set(RunConfig.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"{source}: unknown run setting(s) {', '.join(map(str, unknown))};"
            f" allowed: {', '.join(sorted(known))}"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            if key in _FLOAT_FIELDS and value is not None:
                values[key] = float(value)
            elif key in _INT_FIELDS:
                if isinstance(value, bool) or int(value) != value:
                    raise ValueError
                values[key] = int(value)
            else:
                values[key] = value
        except (TypeError, ValueError):
            raise ConfigError(f"{source}: run.{key} has an invalid value {value!r}") from None
    try:
        return RunConfig(**values)
    except ValueError as exc:
        raise ConfigError(f"{source}: run: {exc}") from None


def _end_to_end(raw: Any, source: str) -> Mapping[str, Any] | None:
    """The ``end_to_end:`` section, checked for shape (the specs are built by ``run``)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: 'end_to_end:' must be a mapping (target:, judges:, ...)")
    unknown = sorted(set(map(str, raw)) - _E2E_KEYS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown end_to_end key(s) {', '.join(unknown)};"
            f" allowed: {', '.join(sorted(_E2E_KEYS))}"
        )
    if not isinstance(raw.get("target"), str):
        raise ConfigError(f"{source}: end_to_end.target must be a target spec string")
    out: dict[str, Any] = {"target": raw["target"]}
    for key in ("judges", "output_defenses"):
        if raw.get(key) is not None:
            out[key] = _spec_list(raw, key, f"{source}: end_to_end")
    for key in ("rule", "system_prompt", "screen"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{source}: end_to_end.{key} must be a string, got {value!r}")
        if value is not None:
            out[key] = value
    return out


def parse_config(data: Any, *, source: str = "<config>") -> BenchmarkConfig:
    """Validate a parsed YAML mapping into a :class:`BenchmarkConfig`."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a config file holds a mapping (defenses:, datasets:, ...)")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)};"
            f" allowed: {', '.join(sorted(_TOP_KEYS))}"
        )
    margin = data.get("margin", 0.1)
    _check_margin(margin, source)
    out = data.get("out")
    if out is not None and not isinstance(out, str):
        raise ConfigError(f"{source}: out must be a directory path, got {out!r}")
    return BenchmarkConfig(
        defenses=_unique(_spec_list(data, "defenses", source), "defenses", source),
        datasets=_unique(_spec_list(data, "datasets", source), "datasets", source),
        run=_run_config(data.get("run"), source),
        margin=float(margin),
        out=None if out is None else Path(out),
        end_to_end=_end_to_end(data.get("end_to_end"), source),
    )


def load_config(path: str | Path) -> BenchmarkConfig:
    """Read and validate a YAML config file; errors name the file (and line for YAML)."""
    source = Path(path)
    text = read_text_input(source, error=ConfigError, what="config file")
    import yaml  # on first use: not every command reads a config

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else str(source)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML ({problem})") from None
    cfg = parse_config(data, source=str(source))
    base = source.parent
    return replace(
        cfg,
        datasets=tuple(_rebase(spec, base) for spec in cfg.datasets),
        out=None if cfg.out is None else _join(base, str(cfg.out)),  # absolute stays as is
    )


_FILE_LOADERS = ("jsonl", "csv", "parquet", "pint", "hf-disk")


def _join(base: Path, path: str) -> Path:
    """``base / path`` with ``..`` folded (``configs/../reports`` -> ``reports``)."""
    return Path(os.path.normpath(base / path))


def _rebase(spec: str, base: Path) -> str:
    """``spec`` with the relative file path of a file dataset made relative to ``base``.

    >>> _rebase("jsonl:data/x.jsonl", Path("configs")), _rebase("builtin:core", Path("c"))
    ('jsonl:configs/data/x.jsonl', 'builtin:core')
    >>> _rebase("csv(d.csv, text=prompt)", Path("c"))
    'csv(c/d.csv, text=prompt)'
    """
    for name in _FILE_LOADERS:
        if spec.startswith(name + ":"):
            path = spec[len(name) + 1 :]
            if path and not Path(path).is_absolute():
                return f"{name}:{_join(base, path)}"
            return spec
        if spec.startswith(name + "("):
            body = spec[len(name) + 1 :]
            first, sep, rest = body.partition(",")
            if not sep:
                first, sep, rest = body.rpartition(")")[0], ")", ""
                rest = ""
            path = first.strip().strip("'\"")
            if not path or "=" in first or Path(path).is_absolute():
                return spec
            joined = str(_join(base, path))
            if any(c in joined for c in ",()=[]'\" "):
                joined = "'" + joined + "'"
            new = f"{name}({joined}"
            return new + ("," + rest if sep == "," else ")")
    return spec
