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
JSON-escaped), the password of a ``user:password@`` URL, the values of
credential-like URL query parameters (``?api_key=...``, ``token=``, ...) and
credential-shaped tokens that were never registered (what a server echoes: the
token of a ``Bearer``/``Basic`` authorization, an AWS access key id ``AKIA...``, an
``aws_secret_access_key=`` value, an ``sk-...`` API key) with ``<redacted>``.

The history store (:mod:`shieldbench.store`, and the guard service's audit log)
passes every record through them before it is written: message fields (a verdict's
label, reasons and details, error texts, specs, alerts) through :func:`redact_all`,
data (sample texts, metadata) through :func:`mask_all`.

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

import functools
import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from shieldbench.errors import ConfigError

__all__ = [
    "MASK",
    "check_header_value",
    "has_secrets",
    "mask_all",
    "mask_secrets",
    "redact",
    "redact_all",
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
#: Credentials recognisable by their shape (the ``keep`` group, a scheme or a key
#: name, stays; the value is masked). Each is tried only when a literal it needs is in
#: the text: most messages hold none, and then cost a few substring tests.
_AUTH = re.compile(r"(?P<keep>\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC)\s+)[A-Za-z0-9._~+/-]{8,}=*")
_AWS_KEY_ID = re.compile(
    r"A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|PKA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])"
)
_AWS_SECRET = re.compile(
    r"(?P<keep>(?i:secret_access_key)[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40,}"
)
_API_KEY = re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")


def _kept(match: re.Match[str]) -> str:
    return match["keep"] + MASK


def _mask_shapes(text: str) -> str:
    """``text`` with credential-shaped tokens masked (see the module docstring)."""
    if "earer" in text or "EARER" in text or "asic" in text or "ASIC" in text:
        text = _AUTH.sub(_kept, text)
    if "A" in text:
        text = _AWS_KEY_ID.sub(MASK, text)
    if "ccess_key" in text or "CCESS_KEY" in text:
        text = _AWS_SECRET.sub(_kept, text)
    if "sk-" in text:
        text = _API_KEY.sub(MASK, text)
    return text


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
        _redact_remembered.cache_clear()


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
    text = _mask_shapes(mask_secrets(text))
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", text)
    if "=" in text:
        text = _SECRET_QUERY.sub(lambda m: f"{m['head']}{MASK}", text)
    return text


def has_secrets() -> bool:
    """Whether any credential is registered (else :func:`mask_secrets` is the identity)."""
    return _pattern is not None


def mask_all(value: Any) -> Any:
    """``value`` with :func:`mask_secrets` applied to every string in it (mapping keys
    and values, list and tuple items, nested); other values as they are."""
    return value if _pattern is None else _walk(value, mask_secrets)


def redact_all(value: Any) -> Any:
    """``value`` with :func:`redact` applied to every string in it (see :func:`mask_all`).

    Short strings are remembered (labels, reasons and rule names repeat over a run's
    outcomes and a service's decisions); registering a secret forgets them."""
    return _walk(value, _redact_short)


@functools.lru_cache(maxsize=8192)
def _redact_remembered(text: str) -> str:
    return redact(text)


def _redact_short(text: str) -> str:
    return _redact_remembered(text) if len(text) <= 256 else redact(text)


def _walk(value: Any, clean: Callable[[str], str]) -> Any:
    kind = type(value)  # exact types first: an ABC isinstance costs ~1 us each
    if kind is str:
        return clean(value)
    if kind is tuple or kind is list:
        return kind(_walk(v, clean) for v in value)
    if kind is dict or isinstance(value, Mapping):
        return {_walk(k, clean): _walk(v, clean) for k, v in value.items()}
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [_walk(v, clean) for v in value]
    return value


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
