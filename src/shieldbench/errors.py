"""The exception tree. Catch :class:`ShieldbenchError` to catch everything we raise.

::

    ShieldbenchError
    ├── ConfigError            bad option, config file or spec string
    │   └── SpecError          a spec that does not parse or names nothing registered
    ├── PluginUnavailableError a registered plugin whose optional dependency is missing
    ├── DatasetError           bad data: names the file, line and field
    ├── DefenseError           a defense failed on a text (recorded as an error outcome)
    │   └── TransientDefenseError  worth retrying (network blip, rate limit, 5xx)
    ├── RunError               a run cannot be built, resumed or compared
    ├── StoreError             the history database cannot be opened, read or written
    └── StatisticsError        a statistic asked of data that cannot give it

Every message says what went wrong, where, and what to do about it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "DatasetError",
    "DefenseError",
    "PluginUnavailableError",
    "RunError",
    "ShieldbenchError",
    "SpecError",
    "StatisticsError",
    "StoreError",
    "TransientDefenseError",
]


class ShieldbenchError(Exception):
    """Base of every error shieldbench raises on purpose."""


class ConfigError(ShieldbenchError):
    """An option, configuration file or argument is invalid."""


class SpecError(ConfigError):
    """A spec string does not parse, or names no registered plugin."""


class PluginUnavailableError(ShieldbenchError):
    """A plugin is registered but its optional dependency is not installed.

    The message carries the install hint, e.g. ``pip install 'shieldbench[nanoguard]'``.
    """

    def __init__(self, name: str, missing: str, install_hint: str | None) -> None:
        self.name = name
        self.missing = missing
        self.install_hint = install_hint
        hint = f"; install it with: {install_hint}" if install_hint else ""
        super().__init__(f"{name!r} needs the package {missing!r}, which is not installed{hint}")


class DatasetError(ShieldbenchError):
    """Bad input data. Carries where: ``path``, ``line`` (1-based) and ``field``.

    Example:
        >>> print(DatasetError("empty text", path="data.jsonl", line=3, field="text"))
        data.jsonl:3: field 'text': empty text
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
        parts = [p for p in (where, None if field is None else f"field {field!r}") if p]
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class DefenseError(ShieldbenchError):
    """A defense failed to produce a verdict for a text.

    ``timed_out`` is true when it failed because its own request timed out (e.g. an
    HTTP read timeout): the engine records such a failure as a ``timeout`` outcome.
    """

    timed_out: bool = False


class TransientDefenseError(DefenseError):
    """A failure worth retrying: connection reset, rate limit, HTTP 5xx, ...

    ``retry_after_s`` carries a server's requested back-off when it gave one.
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RunError(ShieldbenchError):
    """A run cannot be built, resumed, loaded or compared."""


class StoreError(ShieldbenchError):
    """The history store cannot be opened, migrated, read or written (names the database)."""


class StatisticsError(ShieldbenchError):
    """A statistic was asked of data that cannot give it (e.g. unpaired runs)."""
