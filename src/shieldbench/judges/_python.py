"""``python:MODULE:ATTRIBUTE`` judges: your own criterion.

The attribute may be a judge object (``name`` + ``judge(sample, answer, context)``),
a function ``(sample, answer, context) -> Judgement | bool``, or a factory called
with the spec's options returning either.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from shieldbench.defenses import factory_kwargs, resolve_attribute
from shieldbench.errors import DefenseError, SpecError
from shieldbench.judges._protocol import Judge, JudgeContext, Judgement
from shieldbench.spec import Spec
from shieldbench.types import Sample

__all__ = ["FunctionJudge", "build_python_judge"]


class FunctionJudge:
    """A function ``(sample, answer, context) -> Judgement | bool`` as a judge."""

    def __init__(self, fn: Callable[[Sample, str, JudgeContext], Any], *, name: str) -> None:
        self._fn = fn
        self.name = name

    def judge(self, sample: Sample, answer: str, context: JudgeContext) -> Judgement:
        value = self._fn(sample, answer, context)
        if isinstance(value, Judgement):
            return value
        if isinstance(value, bool):
            return Judgement(success=value, score=float(value))
        raise DefenseError(f"judge {self.name}: returned {type(value).__name__}, not a Judgement")


def build_python_judge(spec: Spec) -> Judge:
    where = spec.require_arg("MODULE:ATTRIBUTE")
    obj, attr = resolve_attribute(where, spec.text)
    name = spec.kwargs.get("name") or f"python:{where}"
    options = {k: v for k, v in spec.kwargs.items() if k != "name"}
    if callable(getattr(obj, "judge", None)) and not inspect.isclass(obj):
        return obj  # type: ignore[no-any-return]
    if not callable(obj):
        raise SpecError(f"{spec.text!r}: {attr} is neither a judge nor callable")
    if inspect.isclass(obj) or options:
        made = obj(**factory_kwargs(obj, options, spec.text))
        if callable(getattr(made, "judge", None)):
            return made  # type: ignore[no-any-return]
        if not callable(made):
            raise SpecError(f"{spec.text!r}: {attr}(...) returned {type(made).__name__}")
        return FunctionJudge(made, name=name)
    return FunctionJudge(obj, name=name)
