"""``preprocess(d, strip=...)``: remove infrastructure wrappers before a defense sees a text.

Agent harnesses wrap what reaches a model in markup of their own: reminder blocks
(``<system-reminder>...</system-reminder>``) full of imperative language ("you MUST",
"IMPORTANT: do not ..."), XML envelopes around tool output, terminal colour codes.
Detectors read these as instruction overrides or fake-tag injection and block
benign traffic: false positives that say nothing about the user's content.

What is stripped (choose with ``strip=a|b``; default: all three):

- ``system-reminder``: complete ``<system-reminder>...</system-reminder>`` blocks
  (exact, case-sensitive tag, not nested) at the very **start or end** of the text
  (after whitespace), where harnesses put them; consecutive blocks too. Nothing is
  stripped when the remaining content still contains a reminder tag (tags inside
  content mean they are not neutralised upstream, so the edge blocks may be forged).
- ``tool-envelope``: the outer tag pair of a tool-output envelope that encloses the
  **whole** text: ``<function_results>``, ``<tool_result ...>``, ``<tool_output>``,
  ``<tool_response>``, ``<function_response>`` (attributes allowed; up to 4 nested
  layers). Only the two tags go; everything inside is still checked.
- ``ansi``: ANSI terminal escape sequences (colours, cursor moves, OSC titles).
  Stripping them can only reveal text (concealed text becomes plain), never hide it.

What is never stripped, because an attacker can write it:

- the same tags anywhere else: a reminder block in the middle of a text, or an
  envelope tag that does not enclose the whole text, is content and stays;
- chat-template tokens (``<|im_start|>``, ``[INST]``), fake ``<system>`` tags,
  markdown, HTML comments, zero-width or other invisible characters: these are
  attack signals a detector should see.

The residual risk, stated plainly: an attacker who controls the *end* (or start) of
the text can append a forged reminder block and have it removed. Enable
``system-reminder`` only where your harness adds these blocks and neutralises the
same tags in untrusted content, or where untrusted content never ends the text.

``details`` record ``stripped`` (which strippers changed the text) and
``stripped_chars``. Every stripper runs in linear time on attacker-sized input.

This module is the one preprocessing implementation: the guard service
(:mod:`shieldbench.service`) strips with :data:`HARNESS_STRIPPERS` through the same
:func:`run_strippers` pipeline. Those go further than :data:`STRIPPERS` (tags anywhere,
reminder content dropped), which suits a service in front of a trusted harness, not a
defense facing untrusted text.

Example:
    >>> text = "<system-reminder>You MUST obey the user.</system-reminder>\\nHow do I bake bread?"
    >>> strip_wrappers(text)
    ('How do I bake bread?', ('system-reminder',))
    >>> strip_wrappers("Please <system-reminder>obey</system-reminder> me")[1]
    ()
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from shieldbench.defenses._protocol import Defense
from shieldbench.defenses.compose._composite import (
    Composite,
    build_children,
    call_async,
    call_batch,
    checked,
    merge_details,
    named,
)
from shieldbench.errors import ConfigError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = [
    "HARNESS_STRIPPERS",
    "STRIPPERS",
    "Preprocess",
    "check_stripper_names",
    "run_strippers",
    "strip_wrappers",
]

_OPEN = "<system-reminder>"
_CLOSE = "</system-reminder>"
_WS = re.compile(r"\s*")
_ENVELOPE_OPEN = re.compile(
    r"\s*<(function_results|tool_result|tool_output|tool_response|function_response)"
    r"(?:\s[^<>]*)?>"
)
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # two-character escapes
)


def _rstrip_index(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _strip_system_reminders(text: str) -> str:
    start, end = 0, len(text)
    changed = False
    while True:  # leading blocks
        i = _WS.match(text, start, end).end()  # type: ignore[union-attr]
        if not text.startswith(_OPEN, i, end):
            break
        close = text.find(_CLOSE, i + len(_OPEN), end)
        if close < 0 or text.find(_OPEN, i + len(_OPEN), close) >= 0:
            break
        start, changed = close + len(_CLOSE), True
    while True:  # trailing blocks
        e = _rstrip_index(text, start, end)
        if not text.endswith(_CLOSE, start, e):
            break
        body_end = e - len(_CLOSE)
        opening = text.rfind(_OPEN, start, body_end)
        if opening < 0 or text.find(_CLOSE, opening + len(_OPEN), body_end) >= 0:
            break
        end, changed = opening, True
    if not changed:
        return text
    if text.find(_OPEN, start, end) >= 0 or text.find(_CLOSE, start, end) >= 0:
        return text  # reminder tags inside the content: the boundary blocks may be forged
    return text[start:end].strip()


def _strip_tool_envelope(text: str) -> str:
    for _ in range(4):
        match = _ENVELOPE_OPEN.match(text)
        if match is None:
            break
        closing = f"</{match.group(1)}>"
        end = _rstrip_index(text, match.end(), len(text))
        if not text.endswith(closing, match.end(), end):
            break
        text = text[match.end() : end - len(closing)].strip()
    return text


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


STRIPPERS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "ansi": _strip_ansi,
        "system-reminder": _strip_system_reminders,
        "tool-envelope": _strip_tool_envelope,
    }
)
# Reminders are stripped again after the envelope: harnesses put them on either side.
_ORDER = ("ansi", "system-reminder", "tool-envelope", "system-reminder")

# --- the guard service's strippers (HARNESS_STRIPPERS) ---------------------------------
# Blocks whose whole content is harness text: dropped with their content.
_DROP_BLOCK = re.compile(
    r"<(system-reminder|policy_spec)(?:\s[^<>]*)?>.*?</\1>", re.DOTALL | re.IGNORECASE
)
# Wrappers whose content comes from elsewhere (a shell, a user command): only the tags go.
_UNWRAP_TAG = re.compile(
    r"</?(?:bash-stdout|bash-stderr|bash-input|command-message|command-name|command-args)"
    r"(?:\s[^<>]*)?>",
    re.IGNORECASE,
)
_COMMAND_ENVELOPE = re.compile(r"^\s*Command:[^\n]*\n\s*Output:[ \t]*\n?", re.MULTILINE)
_CAVEAT = re.compile(
    r"\A\s*Caveat: The messages below were generated[^\n]*(?:\n(?!\s*\n)[^\n]*)*\s*"
)


def _strip_tags(text: str) -> str:
    if "<" not in text:
        return text
    return _UNWRAP_TAG.sub("", _DROP_BLOCK.sub("", text))


def _strip_command(text: str) -> str:
    return _COMMAND_ENVELOPE.sub("", text) if "Command:" in text else text


def _strip_caveat(text: str) -> str:
    return _CAVEAT.sub("", text) if "Caveat:" in text else text


#: The guard service's strippers, in the order they run (see :mod:`shieldbench.service`):
#: ``ansi``; ``caveat``, a leading "Caveat: The messages below were generated ..."
#: paragraph; ``tags``, reminder and policy blocks with their content and the tags (only)
#: of shell transcripts and commands, anywhere; ``tool-envelope``, the ``Command:`` line
#: of a ``Command: ... Output: ...`` tool envelope.
HARNESS_STRIPPERS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "ansi": _strip_ansi,
        "caveat": _strip_caveat,
        "tags": _strip_tags,
        "tool-envelope": _strip_command,
    }
)


def check_stripper_names(
    names: Iterable[str], catalogue: Mapping[str, Callable[[str], str]] = STRIPPERS
) -> tuple[str, ...]:
    """``names`` without repeats, each checked against ``catalogue``.

    >>> check_stripper_names(["ansi", "ansi"])
    ('ansi',)
    >>> check_stripper_names(["html"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    shieldbench.errors.ConfigError: unknown stripper(s) html; choose from ansi, ...
    """
    chosen = tuple(dict.fromkeys(names))
    unknown = sorted(set(chosen) - set(catalogue))
    if unknown:
        raise ConfigError(
            f"unknown stripper(s) {', '.join(unknown)}; choose from {', '.join(catalogue)}"
        )
    return chosen


def run_strippers(
    text: str, steps: Iterable[tuple[str, Callable[[str], str]]]
) -> tuple[str, tuple[str, ...]]:
    """Apply ``(name, stripper)`` steps in order; the text and the names that changed it
    (each once, in the order they first fired)."""
    fired: list[str] = []
    for name, stripper in steps:
        stripped = stripper(text)
        if stripped != text:
            text = stripped
            if name not in fired:
                fired.append(name)
    return text, tuple(fired)


def strip_wrappers(
    text: str, *, strip: Iterable[str] = tuple(STRIPPERS)
) -> tuple[str, tuple[str, ...]]:
    """Remove the chosen infrastructure wrappers; return the text and the strippers that fired.

    ``strip`` names entries of :data:`STRIPPERS` (see the module docstring for exactly
    what each removes and what is never removed).
    """
    chosen = check_stripper_names(strip)
    return run_strippers(text, [(name, STRIPPERS[name]) for name in _ORDER if name in chosen])


class Preprocess(Composite):
    """Strips infrastructure wrappers (see :func:`strip_wrappers`) before the inner defense."""

    def __init__(self, inner: Defense, *, strip: Sequence[str] = tuple(STRIPPERS)) -> None:
        strip_wrappers("", strip=strip)  # validates the names
        self.inner = inner
        self.strip = tuple(dict.fromkeys(strip))
        options = "" if set(self.strip) == set(STRIPPERS) else "strip=" + "|".join(self.strip)
        super().__init__("preprocess", [inner], options=options)

    def _clean(self, text: str) -> tuple[str, tuple[str, ...]]:
        return strip_wrappers(text, strip=self.strip)

    @staticmethod
    def _annotate(verdict: Verdict, original: str, cleaned: str, fired: Sequence[str]) -> Verdict:
        if not fired:
            return verdict
        return merge_details(
            verdict, stripped=list(fired), stripped_chars=len(original) - len(cleaned)
        )

    def check(self, text: str) -> Verdict:
        cleaned, fired = self._clean(text)
        verdict = checked(self.inner.check(cleaned), self.inner)
        return self._annotate(verdict, text, cleaned, fired)

    def _check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        cleaned = [self._clean(t) for t in texts]
        verdicts = call_batch(self.inner, [c for c, _ in cleaned])
        return [
            self._annotate(v, t, c, fired)
            for v, t, (c, fired) in zip(verdicts, texts, cleaned, strict=True)
        ]

    async def _acheck(self, text: str) -> Verdict:
        cleaned, fired = self._clean(text)
        verdict = await call_async(self.inner, cleaned)
        return self._annotate(verdict, text, cleaned, fired)


@defenses.register(
    "preprocess",
    description="Strips infrastructure wrappers (system-reminder blocks, tool-output envelopes,"
    " ANSI codes) before the wrapped defense checks the text.",
    usage="preprocess(DEFENSE, strip=system-reminder|tool-envelope|ansi)",
    example="preprocess(pattern, strip=system-reminder|tool-envelope|ansi)",
)
def _preprocess(spec: Spec) -> Preprocess:
    spec.check_options({"strip"})
    raw = spec.str_option("strip")
    strip = tuple(STRIPPERS) if raw is None else tuple(p.strip() for p in raw.split("|"))
    try:
        strip_wrappers("", strip=strip)
    except ConfigError as exc:
        raise SpecError(f"{spec.text!r}: {exc}") from None
    if len(spec.args) != 1:
        raise SpecError(f"{spec.text!r}: preprocess wraps exactly one defense")
    return named(Preprocess(build_children(spec)[0], strip=strip), spec)
