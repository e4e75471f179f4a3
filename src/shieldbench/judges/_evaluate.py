"""Measuring a judge on labelled answers: sensitivity, specificity, accuracy with intervals.

A labelled set is JSONL, one answer a line: ``answer`` (the model's text),
``success`` (true when the attack succeeded by the judge's criterion: the model
complied, leaked, printed a secret...), optional ``request`` (the user's text,
default empty), ``canary`` and ``system_prompt`` (the context a leak judge needs)
and ``id``. Sets written for the built-in judges ship with the package
(:func:`builtin_set`): ``refusal`` (78 answers in 13 languages, with refusal
look-alikes such as "sorry for the delay"), ``leak`` (28: encodings of the canary,
prompt copies, near misses), ``secrets`` (24: real formats and look-alikes) and
``pii`` (24).

Sensitivity is P(judge says success | success), specificity P(judge says no
success | no success); both feed the Rogan-Gladen correction
(:func:`shieldbench.metrics.corrected_success_rate`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from shieldbench.errors import DatasetError
from shieldbench.judges._protocol import Judge, JudgeContext
from shieldbench.metrics import Rate, rate
from shieldbench.types import Sample

__all__ = [
    "BUILTIN_SETS",
    "JudgeAccuracy",
    "LabelledAnswer",
    "builtin_set",
    "evaluate_judge",
    "load_labelled",
]

BUILTIN_SETS: tuple[str, ...] = ("refusal", "leak", "secrets", "pii")


@dataclass(frozen=True, slots=True)
class LabelledAnswer:
    """One answer with its true label (``success``) and the context to judge it."""

    id: str
    answer: str
    success: bool
    request: str = ""
    canary: str | None = None
    system_prompt: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeAccuracy:
    """How a judge did on a labelled set (Wilson 95% intervals)."""

    judge: str
    data: str
    sensitivity: Rate
    specificity: Rate
    accuracy: Rate
    errors: int
    wrong: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "data": self.data,
            "sensitivity": self.sensitivity.to_dict(),
            "specificity": self.specificity.to_dict(),
            "accuracy": self.accuracy.to_dict(),
            "errors": self.errors,
            "wrong": list(self.wrong),
        }


def load_labelled(path: str | Path) -> tuple[LabelledAnswer, ...]:
    """Read a labelled JSONL set; :class:`DatasetError` naming the line on bad input."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read: {exc.strerror}", path=source) from None
    return _parse(lines, str(source))


def builtin_set(name: str) -> tuple[LabelledAnswer, ...]:
    """The labelled set shipped for built-in judge ``name`` (see :data:`BUILTIN_SETS`)."""
    if name not in BUILTIN_SETS:
        raise DatasetError(
            f"no labelled set ships for judge {name!r}; built-in sets: {', '.join(BUILTIN_SETS)}"
            " (give your own with --data PATH)"
        )
    text = resources.files("shieldbench.judges").joinpath(f"data/{name}_labelled.jsonl")
    return _parse(text.read_text(encoding="utf-8").splitlines(), f"builtin:{name}")


def _parse(lines: Sequence[str], where: str) -> tuple[LabelledAnswer, ...]:
    out: list[LabelledAnswer] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not JSON ({exc.msg})", path=where, line=number) from None
        if not isinstance(record, dict):
            raise DatasetError("expected an object", path=where, line=number)
        answer, success = record.get("answer"), record.get("success")
        if not isinstance(answer, str):
            raise DatasetError(
                "missing or non-text 'answer'", path=where, line=number, field="answer"
            )
        if not isinstance(success, bool):
            raise DatasetError(
                "'success' must be true or false", path=where, line=number, field="success"
            )
        out.append(
            LabelledAnswer(
                id=str(record.get("id") or f"{number}"),
                answer=answer,
                success=success,
                request=str(record.get("request") or ""),
                canary=record.get("canary"),
                system_prompt=record.get("system_prompt"),
            )
        )
    if not out or all(a.success for a in out) or not any(a.success for a in out):
        raise DatasetError(
            "a labelled set needs answers of both kinds (success true and false)", path=where
        )
    return tuple(out)


def evaluate_judge(
    judge: Judge, answers: Sequence[LabelledAnswer], *, data: str = "custom"
) -> JudgeAccuracy:
    """Run ``judge`` over ``answers``; a judge error counts as wrong and is counted."""
    tp = tn = errors = 0
    wrong: list[str] = []
    for item in answers:
        sample = Sample(item.id, item.request or "(request not recorded)", "attack")
        context = JudgeContext(system_prompt=item.system_prompt, canary=item.canary)
        try:
            said = judge.judge(sample, item.answer, context).success
        except Exception:  # a judge that fails on an answer is wrong on it
            errors += 1
            wrong.append(item.id)
            continue
        if said == item.success:
            tp += said
            tn += not said
        else:
            wrong.append(item.id)
    pos = sum(a.success for a in answers)
    neg = len(answers) - pos
    return JudgeAccuracy(
        judge=judge.name,
        data=data,
        sensitivity=rate(tp, pos),
        specificity=rate(tn, neg),
        accuracy=rate(tp + tn, len(answers)),
        errors=errors,
        wrong=tuple(wrong),
    )
