"""Spec strings: how a defense or dataset is named on the command line and in YAML.

Two forms, one meaning:

- ``name`` or ``name:argument`` -- the argument is everything after the first colon,
  kept verbatim (``jsonl:data/x.jsonl``, ``http:https://guard.local/check``,
  ``python:mypkg.guards:build``).
- ``name(arg, arg, key=value, ...)`` -- a call, for plugins that take several
  arguments or options (``any(pattern, semantic)``,
  ``fail_closed(http:https://x/check, timeout=2)``,
  ``jsonl(data.jsonl, text=prompt, label=is_attack)``). Positional arguments are
  themselves spec strings, kept as text for the plugin to build; nesting and
  quoting (``'...'`` or ``"..."``) are allowed.

``name:argument`` is sugar for ``name(argument)``.

Example:
    >>> s = parse_spec("fail_closed(any(pattern, semantic), timeout=2.5)")
    >>> s.name, s.args, dict(s.kwargs)
    ('fail_closed', ('any(pattern, semantic)',), {'timeout': '2.5'})
    >>> parse_spec("jsonl:data/x.jsonl").args
    ('data/x.jsonl',)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from shieldbench.errors import SpecError

__all__ = ["MAX_SPEC_DEPTH", "Spec", "canonical_spec", "parse_spec", "split_top_level"]

MAX_SPEC_DEPTH = 32
"""Brackets nest at most this deep in a spec (``any(any(...))``): deeper is a SpecError
(building a defense recurses once per level; far deeper than any real composition)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# Option names may hold dots and dashes: header.X-Api-Key=env:KEY (http: headers).
_KWARG = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)\s*=(?!=)")
_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed spec: plugin ``name``, positional ``args`` and keyword ``kwargs``.

    Values stay strings; each plugin converts and validates its own options (use
    :meth:`float_option` and friends so the error names the option and the spec).
    """

    name: str
    args: tuple[str, ...] = ()
    kwargs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    text: str = ""

    @property
    def arg(self) -> str | None:
        """The single positional argument, or ``None`` when there is none."""
        if len(self.args) > 1:
            raise SpecError(
                f"{self.text!r}: {self.name!r} takes one argument, got {len(self.args)}"
            )
        return self.args[0] if self.args else None

    def require_arg(self, what: str) -> str:
        """The single positional argument; a :class:`SpecError` saying ``what`` when absent."""
        value = self.arg
        if not value:
            raise SpecError(f"{self.text!r}: {self.name!r} needs {what}, e.g. '{self.name}:{what}'")
        return value

    def check_options(self, allowed: set[str] | frozenset[str]) -> None:
        """Raise :class:`SpecError` if a keyword option is not in ``allowed``."""
        unknown = sorted(set(self.kwargs) - set(allowed))
        if unknown:
            raise SpecError(
                f"{self.text!r}: unknown option(s) {', '.join(unknown)} for {self.name!r};"
                f" allowed: {', '.join(sorted(allowed)) or 'none'}"
            )

    def str_option(self, key: str, default: str | None = None) -> str | None:
        return self.kwargs.get(key, default)

    def float_option(self, key: str, default: float | None = None) -> float | None:
        raw = self.kwargs.get(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError:
            raise SpecError(f"{self.text!r}: option {key}={raw!r} is not a number") from None

    def int_option(self, key: str, default: int | None = None) -> int | None:
        raw = self.kwargs.get(key)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise SpecError(f"{self.text!r}: option {key}={raw!r} is not an integer") from None

    def bool_option(self, key: str, default: bool = False) -> bool:
        raw = self.kwargs.get(key)
        if raw is None:
            return default
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SpecError(f"{self.text!r}: option {key}={raw!r} is not a boolean (true/false)")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def split_top_level(body: str, *, text: str = "") -> list[str]:
    """Split ``body`` on commas that are outside brackets and quotes."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth >= MAX_SPEC_DEPTH:  # the caller's own bracket is one more level
                shown = text or body
                raise SpecError(
                    f"{shown[:60]!r}{'...' if len(shown) > 60 else ''}: brackets nest more than"
                    f" {MAX_SPEC_DEPTH} levels deep (at character {i + 1} of the arguments);"
                    f" the limit is {MAX_SPEC_DEPTH}: flatten the spec"
                )
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise SpecError(f"{text or body!r}: unbalanced ')' at position {i}")
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if quote:
        raise SpecError(f"{text or body!r}: unterminated quote {quote}")
    if depth != 0:
        raise SpecError(f"{text or body!r}: unbalanced '(' (missing ')')")
    parts.append(body[start:])
    return parts


def parse_spec(text: str) -> Spec:
    """Parse a spec string (see the module docstring). Raises :class:`SpecError`."""
    if not isinstance(text, str):
        raise SpecError(f"a spec must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise SpecError("empty spec: name a plugin, e.g. 'pattern' or 'jsonl:data.jsonl'")
    match = _NAME.match(stripped)
    if match is None:
        raise SpecError(f"{text!r}: a spec starts with a plugin name (letters, digits, _ . -)")
    name = match.group(0)
    rest = stripped[match.end() :]
    if not rest:
        return Spec(name=name, text=stripped)
    if rest.startswith(":"):
        arg = rest[1:]
        if not arg.strip():
            raise SpecError(f"{text!r}: nothing after ':'; write '{name}' or '{name}:ARGUMENT'")
        return Spec(name=name, args=(arg.strip(),), text=stripped)
    if rest.startswith("(") and rest.endswith(")"):
        body = rest[1:-1]
        args: list[str] = []
        kwargs: dict[str, str] = {}
        if body.strip():
            for raw in split_top_level(body, text=stripped):
                part = raw.strip()
                if not part:
                    raise SpecError(f"{text!r}: empty argument (two commas in a row?)")
                kw = _KWARG.match(part)
                if kw and not part.startswith(("'", '"')):
                    key = kw.group(1)
                    if key in kwargs:
                        raise SpecError(f"{text!r}: option {key!r} given twice")
                    kwargs[key] = _unquote(part[kw.end() :])
                else:
                    if kwargs:
                        raise SpecError(f"{text!r}: positional argument {part!r} after an option")
                    args.append(_unquote(part))
        return Spec(name=name, args=tuple(args), kwargs=MappingProxyType(kwargs), text=stripped)
    raise SpecError(
        f"{text!r}: expected '{name}', '{name}:ARGUMENT' or '{name}(ARG, key=value)'"
        f" but found {rest[:20]!r} after the name"
    )


def _needs_quotes(value: str) -> bool:
    if not value or value != value.strip() or value[0] in "'\"" or _KWARG.match(value):
        return True
    try:
        return len(split_top_level(value)) > 1
    except SpecError:  # unbalanced brackets or quotes: only quoting keeps them
        return True


def _render_value(value: str) -> str:
    """``value`` as it must be written inside ``name(...)`` to parse back as itself."""
    if not _needs_quotes(value):
        return value
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise SpecError(f"{value!r} holds both quote characters and cannot be written in a spec")


def _canonical_value(value: str) -> str:
    """A nested spec argument in canonical form; any other value (a path, a number, a
    URL that does not parse as a spec) verbatim."""
    try:
        return canonical_spec(value)
    except SpecError:
        return value


def canonical_spec(text: str) -> str:
    """The one spelling of a spec: what two spellings of the same defense share.

    Whitespace around names, arguments and ``=`` is dropped, options are sorted by
    name, quotes are kept only where a value needs them, ``name()`` is ``name``, and
    nested spec arguments are canonical too. ``name:argument`` stays in that form
    (it is a different spelling of ``name(argument)`` only for plugins that read
    one argument, which the parser cannot know). A spelling that would not parse
    back to the same spec is returned stripped but otherwise as written.

    Example:
        >>> canonical_spec("  fail_closed( any(pattern , semantic),timeout = 2 )")
        'fail_closed(any(pattern, semantic), timeout=2)'
        >>> canonical_spec("vote(a, b, min=2, k=3)") == canonical_spec("vote(a,b,k=3,min=2)")
        True
        >>> canonical_spec("pattern()"), canonical_spec("jsonl:data/x.jsonl")
        ('pattern', 'jsonl:data/x.jsonl')
    """
    spec = parse_spec(text)
    stripped = text.strip()
    if not spec.args and not spec.kwargs:
        return spec.name
    if stripped[len(spec.name)] == ":":
        return f"{spec.name}:{_canonical_value(spec.args[0])}"
    try:
        parts = [_render_value(_canonical_value(a)) for a in spec.args]
        parts += [
            f"{k}={_render_value(_canonical_value(v))}" for k, v in sorted(spec.kwargs.items())
        ]
    except SpecError:
        return stripped
    rendered = f"{spec.name}({', '.join(parts)})"
    again = parse_spec(rendered)
    same = again.args == tuple(_canonical_value(a) for a in spec.args) and dict(again.kwargs) == {
        k: _canonical_value(v) for k, v in spec.kwargs.items()
    }
    return rendered if same else stripped
