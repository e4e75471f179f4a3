"""``python:MODULE:ATTRIBUTE`` targets: your own model in-process.

The attribute may be an object with ``generate(messages) -> str`` (used as is), a
function taking the messages (wrapped), or a factory called with the spec's
options (``python(mypkg.models:build, size=small)``) returning either.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from shieldbench.defenses import factory_kwargs, resolve_attribute
from shieldbench.errors import DefenseError, SpecError
from shieldbench.spec import Spec
from shieldbench.targets._protocol import Message, Target

__all__ = ["FunctionTarget", "build_python_target"]


class FunctionTarget:
    """A plain function ``generate(messages) -> str`` as a target."""

    def __init__(self, fn: Callable[[Sequence[Message]], object], *, name: str) -> None:
        self._fn = fn
        self.name = name

    def generate(self, messages: Sequence[Message]) -> str:
        answer = self._fn(messages)
        if not isinstance(answer, str):
            raise DefenseError(f"target {self.name}: returned {type(answer).__name__}, not str")
        return answer


def _takes_one_argument(obj: Any) -> bool:
    try:
        params = [
            p
            for p in inspect.signature(obj).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return False
    return len(params) == 1


def build_python_target(spec: Spec) -> Target:
    where = spec.require_arg("MODULE:ATTRIBUTE")
    obj, attr = resolve_attribute(where, spec.text)
    name = spec.kwargs.get("name") or f"python:{where}"
    options = {k: v for k, v in spec.kwargs.items() if k != "name"}
    if callable(getattr(obj, "generate", None)) and not inspect.isclass(obj):
        if options:
            raise SpecError(f"{spec.text!r}: {attr} is a target object; it takes no options")
        return obj  # type: ignore[no-any-return]
    if not callable(obj):
        raise SpecError(f"{spec.text!r}: {attr} is neither a target nor callable")
    if not inspect.isclass(obj) and _takes_one_argument(obj) and not options:
        return FunctionTarget(obj, name=name)
    made = obj(**factory_kwargs(obj, options, spec.text))
    if callable(getattr(made, "generate", None)):
        return made  # type: ignore[no-any-return]
    if callable(made):
        return FunctionTarget(made, name=name)
    raise SpecError(f"{spec.text!r}: {attr}(...) returned {type(made).__name__}, not a target")
