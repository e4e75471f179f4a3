"""The service's configuration: one frozen record, from ``serve.yaml`` and the command line.

``serve.yaml`` (every key optional; the command line wins over the file)::

    defense: recommended            # inline, blocking
    warn: "llm:ollama/phi3.5"       # asynchronous, warn-only (dual mode)
    output_defense: "python:mymod:leak_detector"   # screens the upstream's answers
    mode: enforce                   # or monitor: decide and record, never block
    fail_open: false                # true: errors/timeouts allow (logged at ERROR)
    timeout_s: 2.0                  # inline defense budget
    warn_timeout_s: 30.0            # warn-only defense budget
    max_pending_warn: 10000         # warn checks queued beyond this are dropped (counted)
    dedup_window_s: 5.0
    strip: [ansi, caveat, tags, tool-envelope]
    trusted_roles: []               # message roles NOT screened (default: every role is)
    expose_reasons: false           # true: a blocked caller is told which rules fired
    upstream: http://127.0.0.1:8000/v1
    upstream_key_env: OPENAI_API_KEY
    upstream_timeout_s: 60
    stream_holdback_chars: 256      # output screening of streams: held-back characters
                                    # (default: the output defense's max_match_chars)
    stream_check_every_chars: 256
    db: sqlite:///.shieldbench/history.db
    store_text: false               # audit log keeps a redacted preview unless true
    retention_days: 90
    journal_fsync_s: 1.0            # audit journal: fsync at most 1 s apart (0: every
                                    # record; absent: the kernel's own flush)
    api_keys_env: SHIELDBENCH_API_KEYS   # comma separated
    api_keys_file: /etc/shieldbench/keys # one per line
    max_body_bytes: 1000000
    max_text_chars: 100000
    header_timeout_s: 10.0          # a request's headers must arrive within this (slowloris)
    max_header_bytes: 16384         # the request target and headers may be at most this (431)
    alerts: {min_recall: 0.8, max_fpr: 0.05, max_p95_ms: 250, max_error_rate: 0.01,
             window_s: 3600, every_s: 60, cooldown_s: 3600, webhook: https://hooks...}

Every key is checked at start, strictly (no coercion: ``fail_open: "false"`` is a
string, not a boolean) and for its range; an unknown key, a wrong type or a value out
of range is a :class:`~shieldbench.errors.ConfigError` naming the file, the key and
the value (``serve`` exits 2 before opening a port). The types come from the
annotations of :class:`ServeConfig` and :class:`AlertThresholds`, so a new key is
checked as soon as it is declared there.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ConfigDict, TypeAdapter, ValidationError

from shieldbench.errors import ConfigError
from shieldbench.service._chat import check_roles
from shieldbench.service._preprocess import SERVICE_STRIPPERS, check_strippers

__all__ = ["AlertThresholds", "ServeConfig", "load_api_keys", "load_config"]

Mode = Literal["enforce", "monitor"]

#: How to write a value that is not of its key's type, by pydantic's error type.
_HOW = {
    "bool_type": "write true or false, unquoted",
    "float_type": "write a number, unquoted",
    "int_type": "write a whole number, unquoted",
    "finite_number": "write a finite number",
    "string_type": "write a string",
    "tuple_type": "write a list of strings, e.g. [user, tool]",
    "literal_error": "use one of the values named",
}
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)


@dataclass(frozen=True, slots=True)
class _Check:
    """How one field of a config record is type-checked."""

    adapter: TypeAdapter[Any] | None  # None: the field is itself a config record
    record: type[Any] | None
    is_tuple: bool


@functools.cache
def _checks(cls: Any) -> dict[str, _Check]:
    """A strict validator per field of a config record, made from its annotation, so a
    key added to the record is type-checked without more code."""
    hints = typing.get_type_hints(cls)
    checks = {}
    for f in fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            checks[f.name] = _Check(None, typing.cast(type[Any], hint), False)
        else:
            is_tuple = typing.get_origin(hint) is tuple
            checks[f.name] = _Check(TypeAdapter(hint, config=_STRICT), None, is_tuple)
    return checks


def _check_types(record: Any) -> None:
    """Raise :class:`ConfigError` naming the first field whose value is not of its type.

    Strict, like the request models: no coercion, so ``"false"`` is not a boolean,
    ``"1"`` not a number and ``1`` not a string (in YAML, quotes make a string). A list
    given for a tuple field becomes a tuple (YAML has no tuples)."""
    kind: Any = type(record)
    checks: dict[str, _Check] = _checks(kind)
    for name, check in checks.items():
        given = value = getattr(record, name)
        if check.is_tuple and isinstance(value, list):
            value = tuple(value)
            object.__setattr__(record, name, value)
        if check.record is not None:
            if not isinstance(value, check.record):
                raise ConfigError(f"{name} = {given!r}: must be a mapping of {name} keys")
            continue
        assert check.adapter is not None
        try:
            check.adapter.validate_python(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            how = _HOW.get(error["type"], "serve.yaml keys: docs/service/hardening.md")
            raise ConfigError(f"{name} = {given!r}: {error['msg'].lower()} ({how})") from None


def _require(record: Any, test: Callable[[Any], bool], rule: str, *names: str) -> None:
    for name in names:
        value = getattr(record, name)
        if value is not None and not test(value):
            raise ConfigError(f"{name} = {value!r}: must be {rule}")


@dataclass(frozen=True, slots=True)
class AlertThresholds:
    """Limits checked on the rolling window; ``None`` disables a check."""

    min_recall: float | None = None
    max_fpr: float | None = None
    max_p95_ms: float | None = None
    max_error_rate: float | None = None
    window_s: float = 3600.0
    every_s: float = 60.0
    cooldown_s: float = 3600.0
    webhook: str | None = None

    def __post_init__(self) -> None:
        _check_types(self)
        _require(self, lambda v: 0 <= v <= 1, "in [0, 1]", "min_recall", "max_fpr")
        _require(self, lambda v: 0 <= v <= 1, "in [0, 1]", "max_error_rate")
        _require(self, lambda v: v > 0, "> 0 (seconds)", "window_s", "every_s")
        _require(self, lambda v: v > 0, "> 0 (milliseconds)", "max_p95_ms")
        _require(self, lambda v: v >= 0, ">= 0 (seconds)", "cooldown_s")
        _require(self, lambda v: v.startswith(("http://", "https://")), "an http(s) URL", "webhook")

    @property
    def enabled(self) -> bool:
        """Whether any threshold is set."""
        limits = (self.min_recall, self.max_fpr, self.max_p95_ms, self.max_error_rate)
        return any(x is not None for x in limits)


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``shieldbench serve`` needs; see the module docstring for the keys.

    Every field is type-checked strictly from its annotation when the record is made
    (from ``serve.yaml``, the command line or code), then its value is range-checked:
    a new field needs only its annotation (and a range rule if it has one)."""

    defense: str = "recommended"
    warn: str | None = None
    output_defense: str | None = None
    mode: Mode = "enforce"
    fail_open: bool = False
    timeout_s: float = 2.0
    warn_timeout_s: float = 30.0
    max_pending_warn: int = 10_000
    dedup_window_s: float = 5.0
    strip: tuple[str, ...] = tuple(SERVICE_STRIPPERS)
    trusted_roles: tuple[str, ...] = ()
    expose_reasons: bool = False
    upstream: str | None = None
    upstream_key_env: str = "OPENAI_API_KEY"
    upstream_timeout_s: float = 60.0
    stream_holdback_chars: int | None = None
    stream_check_every_chars: int = 256
    db: str | None = None
    store_text: bool = False
    retention_days: float | None = None
    journal_fsync_s: float | None = None
    api_keys_env: str = "SHIELDBENCH_API_KEYS"
    api_keys_file: str | None = None
    max_body_bytes: int = 1_000_000
    max_text_chars: int = 100_000
    header_timeout_s: float = 10.0
    max_header_bytes: int = 16 * 1024
    alerts: AlertThresholds = field(default_factory=AlertThresholds)

    def __post_init__(self) -> None:
        _check_types(self)
        positive = ("timeout_s", "warn_timeout_s", "dedup_window_s", "upstream_timeout_s")
        _require(self, lambda v: v > 0, "> 0", *positive, "retention_days", "header_timeout_s")
        at_least_one = (
            "max_body_bytes",
            "max_text_chars",
            "max_header_bytes",
            "stream_check_every_chars",
        )
        _require(self, lambda v: v >= 1, ">= 1", *at_least_one, "max_pending_warn")
        _require(self, lambda v: v >= 1, ">= 1 (characters)", "stream_holdback_chars")
        _require(self, lambda v: v >= 0, ">= 0 (seconds)", "journal_fsync_s")
        object.__setattr__(self, "strip", check_strippers(self.strip))
        object.__setattr__(self, "trusted_roles", check_roles(self.trusted_roles))

    def with_overrides(self, **values: Any) -> ServeConfig:
        """A copy with the given keys replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})


_KEYS = {f.name for f in fields(ServeConfig)}
_ALERT_KEYS = {f.name for f in fields(AlertThresholds)}


def _alerts(value: Any) -> AlertThresholds:
    if not isinstance(value, Mapping):
        raise ConfigError(f"alerts = {value!r}: must be a mapping of alert keys")
    unknown = sorted(map(str, set(value) - _ALERT_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown alerts key(s) {', '.join(unknown)}; known: {', '.join(sorted(_ALERT_KEYS))}"
        )
    try:
        return AlertThresholds(**dict(value))
    except ConfigError as exc:
        raise ConfigError(f"alerts.{exc}") from None


def load_config(path: str | Path) -> ServeConfig:
    """Read ``serve.yaml``: an unknown key, a value of the wrong type (strictly: no
    coercion) or out of range is a :class:`ConfigError` naming the file, key and value."""
    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {where}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: the top level must be a mapping of keys")
    if "roles" in raw:
        raise ConfigError(
            f"{where}: 'roles' was replaced by 'trusted_roles' (every role is screened unless"
            " listed there): name the roles that must NOT be screened, e.g. trusted_roles: [system]"
        )
    unknown = sorted(map(str, set(raw) - _KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    try:
        values: dict[str, Any] = {k: _alerts(v) if k == "alerts" else v for k, v in raw.items()}
        return ServeConfig(**values)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_api_keys(config: ServeConfig) -> tuple[bytes, ...]:
    """The accepted API keys (from the environment variable and the file); empty: no auth."""
    keys: list[str] = []
    env = os.environ.get(config.api_keys_env, "")
    keys.extend(k.strip() for k in env.split(","))
    if config.api_keys_file:
        try:
            text = Path(config.api_keys_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read api_keys_file {config.api_keys_file}: {exc.strerror or exc}"
            ) from None
        keys.extend(line.strip() for line in text.splitlines())
    return tuple(dict.fromkeys(k.encode() for k in keys if k and not k.startswith("#")))
