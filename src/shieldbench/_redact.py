"""Credentials never leave the process: one place that knows them and masks them.

Every secret shieldbench reads (an ``env:VAR`` header value, an ``api_key_env``
key) is registered here by :func:`register_secret` the moment it is read. The
edges of the program then pass what they show or store through :func:`mask_secrets`
(data) or :func:`redact` (messages):

- the command line's consoles (tables, messages, errors) and its JSON output,
- every file shieldbench writes (run files, checkpoints, reports, attack files,
  JSONL exports), through :func:`shieldbench._textio.write_text_atomic`.

:func:`redact` replaces each registered value (and its forms as they appear in
messages: stripped of surrounding whitespace, Python-``repr``-escaped and
JSON-escaped), the password of a ``user:password@`` URL and the values of
credential-like URL query parameters (``?api_key=...``, ``token=``, ...) with
``<redacted>``.

Header values are checked by :func:`check_header_value` when a defense is built,
the same rules for every HTTP client (httpx in ``check``, aiohttp in ``run``): a
header value is visible ASCII and spaces, without leading or trailing whitespace.
The error names the header and the variable, never the value.

Example:
    >>> register_secret("sk-test-123\\r")
    >>> redact("Illegal header value b'Bearer sk-test-123\\\\r'")
    "Illegal header value b'Bearer <redacted>'"
    >>> redact("GET https://bob:hunter2@host/x?api_key=abc&q=1")
    'GET https://bob:<redacted>@host/x?api_key=<redacted>&q=1'
"""

from __future__ import annotations

import json
import re
import threading

from shieldbench.errors import ConfigError

__all__ = [
    "MASK",
    "check_header_value",
    "mask_secrets",
    "redact",
    "register_secret",
    "registered_secrets",
]

MASK = "<redacted>"
_MIN_LEN = 4  # shorter "secrets" would mask ordinary words; they are not worth a key anyway
_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None

_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'\"]*):[^@\s/'\"]*@")
_SECRET_QUERY = re.compile(
    r"(?P<head>[?&;](?:[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig"
    r"|credential)[A-Za-z0-9_.-]*)=)(?P<value>[^&;#\s'\"),]+)",
    re.IGNORECASE,
)


def _forms(value: str) -> set[str]:
    """The shapes a value takes in messages: as is, stripped, repr- and JSON-escaped."""
    forms = {value, value.strip()}
    for form in list(forms):
        forms.add(repr(form)[1:-1])
        forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
        forms.add(json.dumps(form)[1:-1])
    return {f for f in forms if len(f) >= _MIN_LEN}


def register_secret(value: str) -> None:
    """Remember ``value`` as a credential: :func:`redact` masks it from now on."""
    global _pattern
    forms = _forms(value)
    if not forms:
        return
    with _lock:
        if forms <= _values:
            return
        _values.update(forms)
        ordered = sorted(_values, key=len, reverse=True)  # longest first: no partial masks
        _pattern = re.compile("|".join(re.escape(v) for v in ordered))


def registered_secrets() -> frozenset[str]:
    """Every registered form (for tests that assert nothing leaked)."""
    with _lock:
        return frozenset(_values)


def mask_secrets(text: str) -> str:
    """``text`` with every registered secret replaced by ``<redacted>``, nothing else.

    For data (sample texts, files): a dataset's own ``password=`` examples stay as
    they are, only values this process read as credentials are masked.
    """
    pattern = _pattern
    return text if pattern is None else pattern.sub(MASK, text)


def redact(text: str) -> str:
    """``text`` with registered secrets and URL credentials replaced by ``<redacted>``.

    For messages (errors, specs, labels): also masks ``user:password@`` in URLs and
    credential-like query parameters (``?api_key=...``), which may hold a secret that
    was never registered.
    """
    text = mask_secrets(text)
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    if "=" in text:
        text = _SECRET_QUERY.sub(lambda m: f"{m['head']}{MASK}", text)
    return text


def _describe(char: str) -> str:
    names = {"\r": "a carriage return (\\r)", "\n": "a newline (\\n)", "\t": "a tab"}
    if char in names:
        return names[char]
    if char == " ":
        return "a space"
    if ord(char) > 0x7E:
        return f"a non-ASCII character (U+{ord(char):04X})"
    return f"a control character (U+{ord(char):04X})"


def check_header_value(name: str, value: str, *, source: str) -> None:
    """Refuse a header value any HTTP client would refuse or mangle, without showing it.

    ``source`` says where the value came from (e.g. ``environment variable GUARD_KEY``).
    Allowed: visible ASCII and inner spaces. A value read from a CRLF ``.env`` file
    (trailing ``\\r``), with a newline, a control or a non-ASCII character is a
    :class:`~shieldbench.errors.ConfigError` naming the header, the source, the
    position and the kind of character.
    """
    if not value:
        raise ConfigError(f"header {name}: the value from {source} is empty")
    for position, char in enumerate(value, start=1):
        if " " < char <= "~" or (char == " " and 1 < position < len(value)):
            continue
        where = "ends with" if position == len(value) else f"has at position {position}"
        if position == 1:
            where = "starts with"
        raise ConfigError(
            f"header {name}: the value from {source} {where} {_describe(char)}, which HTTP"
            " header values cannot carry (value not shown); fix the variable, e.g. strip a"
            " Windows line ending from the .env file"
        )
