"""The ``python:MODULE:ATTRIBUTE`` spec, with real modules written to a temporary folder."""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import pytest

from shieldbench.defenses import Defense, build_defense
from shieldbench.defenses.adapters._python_spec import CallableDefense, convert_option
from shieldbench.errors import ConfigError, DefenseError, SpecError
from shieldbench.types import Verdict

_counter = itertools.count()

GUARDS = '''
from shieldbench.types import Verdict

class KeywordGuard:
    """A factory (a class) with typed options."""
    def __init__(self, word: str = "attack", threshold: float = 0.5, strict: bool = False,
                 label: str | None = None, limit: int = 10) -> None:
        self.name = "keyword"
        self.word, self.threshold, self.strict = word, threshold, strict
        self.label, self.limit = label, limit

    def check(self, text: str) -> Verdict:
        hit = self.word in text
        return Verdict(blocked=hit, score=float(hit), label=self.label)

GUARD = KeywordGuard(word="evil")

def build(word="attack", **extra):
    return KeywordGuard(word=word)

def is_attack(text):
    return "attack" in text

def score(text: str) -> float:
    return 0.8 if "attack" in text else 0.1

def verdict(text):
    return Verdict(blocked=True, score=1.0, reasons=("always",))

def weird(text):
    return {"blocked": True}

def nan_score(text):
    return float("nan")

def make_checker(word: str = "attack"):
    return lambda text: word in text

def make_nothing():
    return 42

def broken_factory(word: str = "x"):
    raise RuntimeError("model file missing")

async def async_check(text):
    return True

class NoName:
    def check(self, text):
        return Verdict(blocked=False)

NO_NAME = NoName()
NUMBER = 7
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """Write ``source`` as a fresh, uniquely named module on sys.path; return its name."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str) -> str:
        name = f"sb_user_guards_{next(_counter)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    yield write
    for name in [m for m in sys.modules if m.startswith("sb_user_guards_")]:
        del sys.modules[name]


def test_factory_class_with_converted_options(module: Callable[[str], str]) -> None:
    mod = module(GUARDS)
    defense = build_defense(
        f"python({mod}:KeywordGuard, word=123, threshold=0.3, strict=yes, label=None, limit=4)"
    )
    assert isinstance(defense, Defense)
    assert defense.word == "123"  # type: ignore[attr-defined]  # annotated str: stays text
    assert defense.threshold == 0.3  # type: ignore[attr-defined]
    assert defense.strict is True  # type: ignore[attr-defined]
    assert defense.label is None  # type: ignore[attr-defined]
    assert defense.limit == 4  # type: ignore[attr-defined]
    assert defense.check("an attack").blocked is False
    assert defense.check("contains 123").blocked is True


def test_colon_form_and_untyped_factory(module: Callable[[str], str]) -> None:
    mod = module(GUARDS)
    assert build_defense(f"python:{mod}:build").check("an attack").blocked
    untyped = build_defense(f"python({mod}:build, word=evil, anything=[1, 2])")
    assert untyped.check("evil plan").blocked  # **extra accepts any option


def test_defense_object_is_used_as_is(module: Callable[[str], str]) -> None:
    mod = module(GUARDS)
    defense = build_defense(f"python:{mod}:GUARD")
    assert defense.check("evil").blocked
    with pytest.raises(SpecError, match="takes no options"):
        build_defense(f"python({mod}:GUARD, word=x)")


@pytest.mark.parametrize(
    ("attribute", "text", "blocked", "score"),
    [
        ("is_attack", "an attack", True, 1.0),
        ("is_attack", "hello", False, 0.0),
        ("score", "an attack", True, 0.8),
        ("score", "hello", False, 0.1),
        ("verdict", "anything", True, 1.0),
    ],
)
def test_check_functions_are_wrapped(
    module: Callable[[str], str], attribute: str, text: str, blocked: bool, score: float
) -> None:
    defense = build_defense(f"python:{module(GUARDS)}:{attribute}")
    assert isinstance(defense, CallableDefense)
    assert defense.name == attribute
    verdict = defense.check(text)
    assert verdict.blocked is blocked
    assert verdict.score == pytest.approx(score)


def test_check_function_options(module: Callable[[str], str]) -> None:
    mod = module(GUARDS)
    strict = build_defense(f"python({mod}:score, threshold=0.9, name=my-scorer)")
    assert strict.name == "my-scorer"
    assert not strict.check("an attack").blocked
    with pytest.raises(SpecError, match="only the options threshold and name"):
        build_defense(f"python({mod}:score, word=x)")
    with pytest.raises(SpecError, match="not a number"):
        build_defense(f"python({mod}:score, threshold=high)")


def test_factory_returning_a_check_function(module: Callable[[str], str]) -> None:
    defense = build_defense(f"python({module(GUARDS)}:make_checker, word=boom)")
    assert isinstance(defense, CallableDefense)
    assert defense.check("boom!").blocked
    assert not defense.check("attack").blocked


def test_wrong_return_types_are_defense_errors_at_check_time(
    module: Callable[[str], str],
) -> None:
    mod = module(GUARDS)
    with pytest.raises(DefenseError, match="must return a Verdict, a bool or a number"):
        build_defense(f"python:{mod}:weird").check("x")
    with pytest.raises(DefenseError, match="NaN"):
        build_defense(f"python:{mod}:nan_score").check("x")


def test_factory_returning_wrong_type(module: Callable[[str], str]) -> None:
    with pytest.raises(ConfigError, match="returned a int; a factory must return a Defense"):
        build_defense(f"python:{module(GUARDS)}:make_nothing")


def test_factory_that_raises_is_reported_with_its_cause(module: Callable[[str], str]) -> None:
    with pytest.raises(ConfigError, match="raised RuntimeError: model file missing") as info:
        build_defense(f"python({module(GUARDS)}:broken_factory, word=y)")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_unknown_option_lists_the_accepted_ones(module: Callable[[str], str]) -> None:
    with pytest.raises(SpecError, match=r"does not accept option.* colour.*accepts: word, thre"):
        build_defense(f"python({module(GUARDS)}:KeywordGuard, colour=red)")


def test_bad_typed_option_value(module: Callable[[str], str]) -> None:
    with pytest.raises(SpecError, match=r"option limit='many'"):
        build_defense(f"python({module(GUARDS)}:KeywordGuard, limit=many)")


def test_module_not_found_explains_sys_path() -> None:
    with pytest.raises(SpecError, match=r"no module named 'sb_no_such_module'.*PYTHONPATH"):
        build_defense("python:sb_no_such_module:build")


def test_module_whose_dependency_is_missing(module: Callable[[str], str]) -> None:
    mod = module("import sb_missing_dependency_xyz\n")
    with pytest.raises(SpecError, match=r"imports 'sb_missing_dependency_xyz'.*not installed"):
        build_defense(f"python:{mod}:build")


def test_module_that_fails_to_import(module: Callable[[str], str]) -> None:
    mod = module("def broken(:\n")
    with pytest.raises(SpecError, match="raised SyntaxError"):
        build_defense(f"python:{mod}:broken")


def test_missing_attribute_suggests_close_names(module: Callable[[str], str]) -> None:
    with pytest.raises(SpecError, match=r"has no attribute 'buidl'.*did you mean build"):
        build_defense(f"python:{module(GUARDS)}:buidl")


def test_not_callable_and_nameless_objects(module: Callable[[str], str]) -> None:
    mod = module(GUARDS)
    with pytest.raises(SpecError, match="is a int, not a Defense"):
        build_defense(f"python:{mod}:NUMBER")
    with pytest.raises(SpecError, match="has check\\(\\) but no 'name'"):
        build_defense(f"python:{mod}:NO_NAME")


def test_async_check_function_is_refused(module: Callable[[str], str]) -> None:
    with pytest.raises(SpecError, match="async check functions are not supported"):
        build_defense(f"python:{module(GUARDS)}:async_check")


@pytest.mark.parametrize("spec", ["python", "python:just_a_module", "python(a:b, c:d)"])
def test_malformed_targets(spec: str) -> None:
    with pytest.raises(SpecError):
        build_defense(spec)


def test_module_in_current_directory_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"sb_cwd_guard_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(GUARDS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        defense = build_defense(f"python:{name}:is_attack")
        assert defense.check("attack").blocked
        assert sys.path[0] == str(tmp_path)
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("raw", "annotation", "expected"),
    [
        ("0.3", None, 0.3),
        ("3", None, 3),
        ("true", None, True),
        ("null", None, None),
        ("[1, 2]", None, [1, 2]),
        ("small", None, "small"),
        ('"3"', None, "3"),
        ("3", str, "3"),
        ("3", float, 3.0),
        ("off", bool, False),
        ("7", Optional[int], 7),  # noqa: UP045  (the typing form is supported too)
        ("7", int | None, 7),
    ],
)
def test_convert_option(raw: str, annotation: object, expected: object) -> None:
    value = convert_option(raw) if annotation is None else convert_option(raw, annotation)
    assert value == expected
    assert type(value) is type(expected)


def test_convert_option_rejects_bad_booleans() -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        convert_option("maybe", bool)


def test_callable_defense_validates_its_arguments() -> None:
    with pytest.raises(ConfigError, match="not callable"):
        CallableDefense("nope", name="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="threshold"):
        CallableDefense(lambda t: True, name="x", threshold=2.0)
    verdict = CallableDefense(lambda t: Verdict(blocked=False), name="v").check("t")
    assert verdict == Verdict(blocked=False)
