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
    alerts: {min_recall: 0.8, max_fpr: 0.05, max_p95_ms: 250, max_error_rate: 0.01,
             window_s: 3600, every_s: 60, cooldown_s: 3600, webhook: https://hooks...}
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from shieldbench.errors import ConfigError
from shieldbench.service._chat import check_roles
from shieldbench.service._preprocess import SERVICE_STRIPPERS, check_strippers

__all__ = ["AlertThresholds", "ServeConfig", "load_api_keys", "load_config"]

Mode = Literal["enforce", "monitor"]


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

    @property
    def enabled(self) -> bool:
        """Whether any threshold is set."""
        limits = (self.min_recall, self.max_fpr, self.max_p95_ms, self.max_error_rate)
        return any(x is not None for x in limits)


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``shieldbench serve`` needs; see the module docstring for the keys."""

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
    alerts: AlertThresholds = field(default_factory=AlertThresholds)

    def __post_init__(self) -> None:
        if self.mode not in ("enforce", "monitor"):
            raise ConfigError(f"mode must be 'enforce' or 'monitor', got {self.mode!r}")
        for name in ("timeout_s", "warn_timeout_s", "dedup_window_s", "upstream_timeout_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("max_body_bytes", "max_text_chars", "max_pending_warn"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.stream_check_every_chars >= 1:
            raise ConfigError(
                f"stream_check_every_chars must be >= 1, got {self.stream_check_every_chars!r}"
            )
        holdback = self.stream_holdback_chars
        if holdback is not None and (isinstance(holdback, bool) or not holdback >= 1):
            raise ConfigError(f"stream_holdback_chars must be >= 1 (characters), got {holdback!r}")
        if not isinstance(self.expose_reasons, bool):
            raise ConfigError(f"expose_reasons must be true or false, got {self.expose_reasons!r}")
        if self.retention_days is not None and not self.retention_days > 0:
            raise ConfigError(f"retention_days must be > 0, got {self.retention_days!r}")
        fsync = self.journal_fsync_s
        if fsync is not None and (isinstance(fsync, bool) or not fsync >= 0):
            raise ConfigError(f"journal_fsync_s must be >= 0 (seconds), got {fsync!r}")
        object.__setattr__(self, "strip", check_strippers(self.strip))
        object.__setattr__(self, "trusted_roles", check_roles(self.trusted_roles))

    def with_overrides(self, **values: Any) -> ServeConfig:
        """A copy with the given keys replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})


_KEYS = {f.name for f in fields(ServeConfig)}
_ALERT_KEYS = {f.name for f in fields(AlertThresholds)}


def _coerce(key: str, value: Any, where: str) -> Any:
    if key in ("strip", "trusted_roles"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key!r} must be a list of strings")
        return tuple(value)
    if key == "alerts":
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: 'alerts' must be a mapping")
        unknown = sorted(set(value) - _ALERT_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown alerts key(s) {', '.join(unknown)}")
        try:
            return AlertThresholds(**dict(value))
        except TypeError as exc:
            raise ConfigError(f"{where}: alerts: {exc}") from None
    return value


def load_config(path: str | Path) -> ServeConfig:
    """Read ``serve.yaml``: unknown keys and wrong types are a :class:`ConfigError`."""
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
    unknown = sorted(set(map(str, raw)) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    values = {k: _coerce(k, v, where) for k, v in raw.items()}
    try:
        return ServeConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
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
