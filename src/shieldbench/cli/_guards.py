"""Checks shared by the commands: repeated options, the error-rate limit, Ctrl-C.

- :func:`unique_specs`: a spec given twice (``-d a -d a``) is refused, not run twice.
- :func:`single` : an option that takes one value refuses a repeat (``attack -d a -d b``
  used to attack only ``b``).
- :func:`error_rate_findings`: runs whose share of errors and timeouts passes the
  ``--max-error-rate`` limit (default :data:`DEFAULT_MAX_ERROR_RATE`): such a run
  measured the endpoint's failures, not the defense, so the command says so
  loudly and exits 1 (its files are still written, for diagnosis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shieldbench.errors import ConfigError
from shieldbench.types import Run

__all__ = [
    "DEFAULT_MAX_ERROR_RATE",
    "ErrorRateFinding",
    "check_limit",
    "error_rate_findings",
    "refuse_repeated_options",
    "single",
    "unique_specs",
]

DEFAULT_MAX_ERROR_RATE = 0.1


def unique_specs(values: Sequence[str], *, option: str) -> tuple[str, ...]:
    """``values`` in order; a :class:`ConfigError` naming the first one given twice."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{option} {value!r} is given twice; name each spec once")
        seen.add(value)
    return tuple(values)


def single(values: Sequence[str] | None, *, option: str, what: str) -> str:
    """The one value of an option that takes one; a :class:`ConfigError` for none or more."""
    if not values:
        raise ConfigError(f"missing option {option}: name {what}")
    if len(values) > 1:
        raise ConfigError(
            f"{option} is given {len(values)} times ({', '.join(map(repr, values))});"
            f" this command takes one {what}: run it once per {what}"
        )
    return values[0]


@dataclass(frozen=True, slots=True)
class ErrorRateFinding:
    """A run whose failed calls (errors + timeouts) passed the limit."""

    defense: str
    dataset: str
    errors: int
    timeouts: int
    n: int
    limit: float

    @property
    def rate(self) -> float:
        return (self.errors + self.timeouts) / self.n if self.n else 0.0

    @property
    def message(self) -> str:
        return (
            f"{self.defense} on {self.dataset}: {self.errors + self.timeouts} of {self.n} calls"
            f" failed ({self.rate:.0%}: {self.errors} errors, {self.timeouts} timeouts), above"
            f" the --max-error-rate {self.limit:.0%}; its rates measure the failures, not the"
            " defense. Check the endpoint and its timeout, then run again."
        )


def check_limit(limit: float) -> float:
    if not 0.0 <= limit <= 1.0:
        raise ConfigError(f"--max-error-rate {limit}: give a share between 0 and 1, e.g. 0.1")
    return limit


def error_rate_findings(runs: Sequence[Run], limit: float) -> list[ErrorRateFinding]:
    """The runs whose (errors + timeouts) / outcomes is above ``limit``."""
    found: list[ErrorRateFinding] = []
    for run in runs:
        errors = sum(o.status == "error" for o in run.outcomes)
        timeouts = sum(o.status == "timeout" for o in run.outcomes)
        n = len(run.outcomes)
        if n and (errors + timeouts) / n > limit:
            found.append(
                ErrorRateFinding(run.defense.spec, run.dataset.spec, errors, timeouts, n, limit)
            )
    return found


def refuse_repeated_options(root: Any, argv: Sequence[str]) -> None:
    """Refuse an option that takes one value but is given more than once.

    click keeps the last of ``--out a --out b`` silently; a user who typed both meant
    something else. Options declared repeatable (``-d``/``-D`` of ``run``, ``--check``)
    are not affected. Counting stops at ``--``. ``root`` is the click command of the
    app (``typer.main.get_command(app)``; typer may vendor its own click, so this reads
    commands by their attributes).
    """
    command, args = root, list(argv)
    while hasattr(command, "commands"):
        names = [a for a in args if not a.startswith("-")]
        sub = command.commands.get(names[0]) if names else None
        if sub is None:
            return
        args = args[args.index(names[0]) + 1 :]
        command = sub
    single: dict[str, str] = {}
    for param in command.params:
        opts: list[str] = list(getattr(param, "opts", ()))
        takes_one = not getattr(param, "multiple", True) and not getattr(param, "is_flag", True)
        if getattr(param, "param_type_name", "") == "option" and takes_one:
            longest: str = max(opts, key=len)
            for opt in opts:
                single[opt] = longest
    seen: dict[str, int] = {}
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        key = single.get(name)
        if key is not None:
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                raise ConfigError(f"{key} is given more than once; give it once")
