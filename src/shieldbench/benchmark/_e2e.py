"""The end-to-end plan of a benchmark: from its settings to the engine's :class:`EndToEnd`.

A benchmark with an ``end_to_end:`` section (or ``run --target``) sends what the
defense lets through to a model and judges the answer. :class:`EndToEndOptions` is
that section as plain data; :func:`build_end_to_end` checks every spec and builds
the engine's plan (target, judges, output defenses, the system prompt with its
canary); :func:`close_end_to_end` closes what the plan opened. Specs are checked
before anything runs: an unknown judge, a bad target spec or a missing API key
variable is one :class:`~shieldbench.errors.ConfigError`, never a half-written
benchmark.

Example:
    >>> options = EndToEndOptions.from_config({"target": "openai:m@http://127.0.0.1:9/v1"})
    >>> options.judges, options.rule, options.screen
    ((), 'any', 'text')
    >>> build_end_to_end(EndToEndOptions(None, ())) is None   # no target: no plan
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd

__all__ = ["EndToEndOptions", "build_end_to_end", "close_end_to_end"]


@dataclass(frozen=True, slots=True)
class EndToEndOptions:
    """The end-to-end settings (a config's ``end_to_end:`` section, or ``run``'s options).

    ``target`` is ``None`` for a benchmark that is not end to end; ``system_prompt``
    is the text, ``@FILE``, or ``None`` for the default prompt with a canary.
    """

    target: str | None
    judges: Sequence[str] = ()
    rule: str = "any"
    output_defenses: Sequence[str] = ()
    system_prompt: str | None = None
    screen: str = "text"

    def __post_init__(self) -> None:
        object.__setattr__(self, "judges", tuple(self.judges))
        object.__setattr__(self, "output_defenses", tuple(self.output_defenses))

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> EndToEndOptions:
        """From a config file's ``end_to_end:`` section (see :mod:`shieldbench.config`)."""
        return cls(
            section["target"],
            section.get("judges") or (),
            rule=section.get("rule") or "any",
            output_defenses=section.get("output_defenses") or (),
            system_prompt=section.get("system_prompt"),
            screen=section.get("screen") or "text",
        )

    @property
    def active(self) -> bool:
        """Whether there is a model to send to."""
        return self.target is not None

    def check(self) -> None:
        """Refuse contradictory options before anything is built."""
        if self.target is None:
            given = [
                n
                for n, v in (
                    ("--judge", self.judges),
                    ("--output-defense", self.output_defenses),
                    ("--system-prompt", self.system_prompt),
                )
                if v
            ]
            if given:
                raise ConfigError(f"{', '.join(given)} need a --target (the model to send to)")
            return
        if not self.judges:
            raise ConfigError(
                "an end-to-end run needs at least one --judge, e.g. --judge refusal --judge leak"
            )

    def to_dict(self, canary: str | None) -> dict[str, Any]:
        """What the benchmark manifest records (resume checks it, and reuses the canary)."""
        return {
            "target": self.target,
            "judges": list(self.judges),
            "rule": self.rule,
            "output_defenses": list(self.output_defenses),
            "system_prompt": self.system_prompt,
            "screen": self.screen,
            "canary": canary,
        }


def _system_prompt(value: str | None) -> str:
    from shieldbench.targets import DEFAULT_SYSTEM_PROMPT

    if value is None:
        return DEFAULT_SYSTEM_PROMPT
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"--system-prompt {value}: cannot read {path}: {exc.strerror}"
            ) from None
    return value


def build_end_to_end(options: EndToEndOptions, canary: str | None = None) -> EndToEnd | None:
    """The engine's :class:`EndToEnd` from ``options``; ``None`` without a target.

    ``canary``: the one to put in the system prompt (a resumed benchmark's stored
    one); ``None`` draws a new one when the prompt has a ``{canary}`` slot.
    """
    options.check()
    if options.target is None:
        return None
    from shieldbench.defenses import build_defense
    from shieldbench.engine import EndToEnd
    from shieldbench.judges import COMBINE_RULES, build_judge
    from shieldbench.targets import SCREEN_MODES, build_target, new_canary, system_prompt_with

    if options.rule not in COMBINE_RULES:
        raise ConfigError(
            f"--judge-rule {options.rule!r}: choose one of {', '.join(COMBINE_RULES)}"
        )
    if options.screen not in SCREEN_MODES:
        raise ConfigError(f"--screen {options.screen!r}: choose one of {', '.join(SCREEN_MODES)}")
    template = _system_prompt(options.system_prompt)
    if canary is None and "{canary}" in template:
        canary = new_canary()
    prompt = system_prompt_with(template, canary)
    judges = tuple(build_judge(spec) for spec in options.judges)
    outputs = []
    for spec in options.output_defenses:
        output = build_defense(spec)
        bind = getattr(output, "bind", None)  # leak: the run's canary and system prompt
        outputs.append(bind(canary=canary, system_prompt=prompt) if callable(bind) else output)
    return EndToEnd(
        target=build_target(options.target),
        judges=judges,
        rule=options.rule,  # type: ignore[arg-type]
        output_defenses=tuple(outputs),
        system_prompt=prompt,
        canary=canary if "{canary}" in template else None,
        screen=options.screen,  # type: ignore[arg-type]
        target_spec=options.target,
        judge_specs=tuple(options.judges),
        output_defense_specs=tuple(options.output_defenses),
    )


def close_end_to_end(plan: EndToEnd | None) -> None:
    """Close the target, the judges and the output defenses that have a ``close()``."""
    if plan is None:
        return
    from shieldbench.defenses import close_every

    close_every((plan.target, *plan.judges, *plan.output_defenses))
