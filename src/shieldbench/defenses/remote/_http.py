"""``http:``: any REST guard API as a defense, with a small response-to-verdict mapping.

Spec forms::

    http:https://guard.internal/v1/check
    http(https://api.example.com/moderate, field=input, blocked=$.results[0].flagged,
         score=$.results[0].score, label=$.results[0].category,
         header.Authorization=Bearer env:GUARD_KEY, timeout=5, retries=2, rpm=600)

Request
    ``method=POST`` (default) or ``PUT`` sends the JSON body ``{FIELD: text}``
    (``field=input.text`` nests: ``{"input": {"text": ...}}``); ``GET`` sends
    ``?FIELD=text``. ``header.NAME=VALUE`` adds a header; the value is a literal or
    ``[PREFIX ]env:VARIABLE``, read from the environment when the defense is built.
    Headers that carry credentials (``Authorization``, ``Cookie``, names containing
    ``key``, ``token`` or ``secret``) must come from the environment: a literal value
    there is refused, so that no secret ends up in a spec, a run file or a log.

Response mapping (JSON path selectors: ``$.a.b``, ``$.items[0].score``,
``$["odd key"]``; the leading ``$.`` is optional)
    - ``blocked=PATH`` -- a JSON boolean;
      ``blocked=PATH==A|B`` -- a label equality (case-insensitive, any of the
      alternatives); ``blocked=PATH!=SAFE`` -- its negation;
      ``blocked=PATH>=0.5`` (or ``>``) -- a score threshold.
    - ``score=PATH`` -- a number in [0, 1], "how likely an attack";
      ``label=PATH`` -- a string; ``reasons=PATH`` -- a string or a list of strings.

    The defaults, ``blocked=$.blocked, score=$.score, label=$.label,
    reasons=$.reasons``, read shieldbench's own verdict JSON, so ``http:URL`` works
    against a shieldbench guard service. A missing or null score / label / reasons
    is ``None`` / ``()``; a missing ``blocked`` value, a wrong type, a score outside
    [0, 1] or a body that is not JSON is a :class:`~shieldbench.errors.DefenseError`
    (an error outcome). Timeouts, retries and ``rpm``: see
    :mod:`shieldbench.defenses.remote._net`.

Example:
    >>> m = ResponseMapping(blocked="$.result.category==injection|jailbreak",
    ...                     score="$.result.p")
    >>> v = m.verdict({"result": {"category": "Injection", "p": 0.93}})
    >>> v.blocked, v.score
    (True, 0.93)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from urllib.parse import urlencode, urlsplit

from shieldbench._redact import check_header_value
from shieldbench.defenses.remote._chat import net_options
from shieldbench.defenses.remote._clients import ClientPool
from shieldbench.defenses.remote._net import (
    DEFAULT_NET,
    JSON_HEADERS,
    NetOptions,
    RateLimiter,
    Reply,
    Secret,
    env_secret,
    redact,
    send_async,
    send_sync,
)
from shieldbench.errors import ConfigError, DefenseError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["HTTPDefense", "ResponseMapping", "select"]

Path = tuple[str | int, ...]
_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[(?:'([^']*)'|\"([^\"]*)\")\]")
_CONDITION = re.compile(r"^(?P<path>[^=!<>]+?)\s*(?P<op>==|!=|>=|>)\s*(?P<value>.+)$")
_SECRET_HEADER = re.compile(r"authorization|cookie|key|token|secret|password", re.IGNORECASE)
_SECRET_QUERY = re.compile(
    r"(?:^|&)[^=&]*(?:key|token|secret|password|passwd|auth|signature|credential)[^=&]*=",
    re.IGNORECASE,
)
_ENV_VALUE = re.compile(r"^(?P<prefix>.*?)env:(?P<var>[A-Za-z_][A-Za-z0-9_]*)$")
_MISSING = object()


def parse_path(expr: str) -> Path:
    """Parse a selector such as ``$.a[0]["b c"]`` into keys and indexes.

    >>> parse_path('$.results[0]["flag ged"]'), parse_path("score")
    (('results', 0, 'flag ged'), ('score',))
    """
    text = expr.strip()
    if text.startswith("$"):
        text = text[1:]
    elif text and not text.startswith(("[", ".")):
        text = "." + text
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            raise ConfigError(
                f"bad JSON path {expr!r} at {text[pos:]!r}; write e.g. $.results[0].score"
            )
        key, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(next(v for v in (key, single, double) if v is not None))
        pos = match.end()
    return tuple(steps)


def select(data: object, path: Path) -> object:
    """The value at ``path`` in parsed JSON ``data``, or a private sentinel when absent."""
    node = data
    for step in path:
        if isinstance(node, dict):
            if not isinstance(step, str):
                return _MISSING
            node = node.get(step, _MISSING)
            if node is _MISSING:
                return _MISSING
        elif isinstance(node, list) and isinstance(step, int) and -len(node) <= step < len(node):
            node = node[step]
        else:
            return _MISSING
    return node


def _show(path: Path) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


@dataclass(frozen=True, slots=True)
class ResponseMapping:
    """How a JSON response becomes a :class:`Verdict` (see the module docstring)."""

    blocked: str = "$.blocked"
    score: str | None = "$.score"
    label: str | None = "$.label"
    reasons: str | None = "$.reasons"
    _blocked: tuple[Path, str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _paths: dict[str, Path] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cond = _CONDITION.match(self.blocked)
        rule: tuple[Path, str, tuple[str, ...]]
        if cond is None:
            rule = (parse_path(self.blocked), "bool", ())
        else:
            values = tuple(v.strip() for v in cond["value"].split("|"))
            if cond["op"] in (">=", ">"):
                try:
                    float(values[0])
                except ValueError:
                    raise ConfigError(
                        f"blocked={self.blocked!r}: {cond['op']} needs a number"
                    ) from None
            rule = (parse_path(cond["path"]), cond["op"], values)
        object.__setattr__(self, "_blocked", rule)
        paths = {k: parse_path(v) for k, v in self._selectors().items() if v is not None}
        object.__setattr__(self, "_paths", paths)

    def _selectors(self) -> dict[str, str | None]:
        return {"score": self.score, "label": self.label, "reasons": self.reasons}

    def _decide(self, data: object) -> bool:
        path, op, values = self._blocked
        value = select(data, path)
        if op == "bool" and isinstance(value, bool):
            return value
        where = f"blocked={self.blocked!r}"
        if value is _MISSING:
            raise DefenseError(f"{where}: the response has no {_show(path)}")
        if op == "bool":
            raise DefenseError(f"{where}: {_show(path)} is {value!r}, not true/false")
        if op in ("==", "!="):
            text = "null" if value is None else str(value).lower()
            equal = text in {v.lower() for v in values}
            return equal if op == "==" else not equal
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DefenseError(f"{where}: {_show(path)} is {value!r}, not a number")
        limit = float(values[0])
        return value >= limit if op == ">=" else value > limit

    def verdict(self, data: object) -> Verdict:
        """The verdict a parsed JSON response says; :class:`DefenseError` when it cannot."""
        blocked = self._decide(data)
        paths = self._paths
        found = {k: select(data, paths[k]) for k in paths}
        score = found.get("score", _MISSING)
        if score is _MISSING or score is None:
            score = None
        elif isinstance(score, bool) or not isinstance(score, int | float):
            raise DefenseError(f"score={self.score!r}: {score!r} is not a number")
        elif not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise DefenseError(f"score={self.score!r}: {score!r} is outside [0, 1]")
        label = found.get("label", _MISSING)
        label = None if label is _MISSING or label is None else str(label)
        reasons = found.get("reasons", _MISSING)
        if reasons is _MISSING or reasons is None:
            reasons = ()
        elif isinstance(reasons, str):
            reasons = (reasons,)
        elif isinstance(reasons, list):
            reasons = tuple(str(r) for r in reasons)
        else:
            raise DefenseError(f"reasons={self.reasons!r}: {reasons!r} is not a list of strings")
        return Verdict(blocked=blocked, score=score, label=label, reasons=reasons)


def resolve_headers(raw: Mapping[str, str]) -> tuple[dict[str, str], tuple[Secret, ...]]:
    """Header values with ``env:VAR`` read from the environment; literal credentials refused."""
    headers: dict[str, str] = {}
    secrets: list[Secret] = []
    for name, value in raw.items():
        env = _ENV_VALUE.match(value)
        if env is not None:
            secret = env_secret(env["var"], what=f"header {name}")
            # One rule for httpx (check) and aiohttp (run): refused here, value never shown.
            source = f"environment variable {env['var']}"
            check_header_value(name, env["prefix"] + secret.reveal(), source=source)
            secrets.append(secret)
            headers[name] = env["prefix"] + secret.reveal()
        elif _SECRET_HEADER.search(name):
            raise ConfigError(
                f"header {name} looks like a credential: read it from the environment,"
                f" e.g. header.{name}=Bearer env:GUARD_KEY (a literal would be stored in runs)"
            )
        else:
            check_header_value(name, value, source="the spec")
            headers[name] = value
    return headers, tuple(secrets)


class HTTPDefense:
    """A REST guard API: one request per text, the JSON answer mapped to a verdict."""

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        field: str = "text",
        mapping: ResponseMapping | None = None,
        headers: Mapping[str, str] | None = None,
        options: NetOptions = DEFAULT_NET,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"http: {url!r} is not an http:// or https:// URL")
        if parts.username or parts.password or _SECRET_QUERY.search(parts.query):
            raise ConfigError(
                "http: no credentials in the URL (user:password@ or a key/token query"
                " parameter); use header.Authorization=Bearer env:VARIABLE"
            )
        self.method = method.upper()
        if self.method not in ("GET", "POST", "PUT"):
            raise ConfigError(f"http: method must be GET, POST or PUT, got {method!r}")
        if not field.strip():
            raise ConfigError("http: field must name where the text goes, e.g. field=text")
        self.url = url
        self._get_base = url + ("&" if parts.query else "" if url.endswith("?") else "?")
        self.field = field
        # The JSON body {"a": {"b": TEXT}} for field=a.b, around the text (which varies).
        keys = field.split(".")
        self._body_head = "".join("{" + encode_basestring(k) + ":" for k in keys)
        self._body_tail = "}" * len(keys)
        self.mapping = mapping or ResponseMapping()
        self.options = options
        self.name = f"http:{parts.scheme}://{parts.netloc}{parts.path}"
        self.version: str | None = None
        resolved, self._secrets = resolve_headers(headers or {})
        self._header_names = tuple(resolved)
        if self.method != "GET":
            resolved = {**JSON_HEADERS, **resolved}
        self._pool = ClientPool(timeout_s=options.timeout_s, headers=resolved)
        self._limiter = RateLimiter(options.rpm)

    def __repr__(self) -> str:
        return (
            f"HTTPDefense({self.name!r}, method={self.method!r}, field={self.field!r},"
            f" headers={list(self._header_names)!r})"
        )

    def _request(self, text: str) -> tuple[str, bytes | None]:
        """``(URL, JSON body)`` carrying ``text``: the same bytes whichever client sends them."""
        if self.method == "GET":
            # Lone surrogates (possible in texts decoded from JSON) cannot be sent as UTF-8.
            query = urlencode({self.field: text}, encoding="utf-8", errors="replace")
            return f"{self._get_base}{query}", None
        # Lone surrogates (possible in texts decoded from JSON) cannot be sent as UTF-8.
        body = f"{self._body_head}{encode_basestring(text)}{self._body_tail}"
        return self.url, body.encode("utf-8", "replace")

    def _verdict(self, response: Reply) -> Verdict:
        try:
            data = response.json()
        except ValueError:
            snippet = redact(response.text[:120], self._secrets)
            raise DefenseError(f"{self.name}: the response is not JSON: {snippet!r}") from None
        try:
            return self.mapping.verdict(data)
        except DefenseError as exc:
            raise DefenseError(redact(f"{self.name}: {exc}", self._secrets)) from None

    def check(self, text: str) -> Verdict:
        url, content = self._request(text)
        response = send_sync(
            lambda: self._pool.send(self.method, url, content=content),
            what=self.name,
            options=self.options,
            limiter=self._limiter,
            secrets=self._secrets,
        )
        return self._verdict(response)

    async def acheck(self, text: str) -> Verdict:
        url, content = self._request(text)
        response = await send_async(
            lambda: self._pool.asend(self.method, url, content=content),
            what=self.name,
            options=self.options,
            limiter=self._limiter,
            secrets=self._secrets,
        )
        return self._verdict(response)

    def close(self) -> None:
        """Close the HTTP clients (the sync one and each event loop's session)."""
        self._pool.close()


_OPTIONS = frozenset(
    {"method", "field", "blocked", "score", "label", "reasons", "timeout", "retries", "backoff"}
    | {"rpm"}
)


@defenses.register(
    "http",
    description="Any REST guard API: POSTs the text, maps the JSON answer to a verdict"
    " (JSON-path selectors), headers from environment variables.",
    usage="http:URL | http(URL, method=POST, field=text, blocked=$.flagged, score=$.score,"
    " label=$.category, header.NAME=env:VAR, timeout=30, retries=0, rpm=N)",
    example="http:http://127.0.0.1:8000/v1/check",
)
def _http(spec: Spec) -> HTTPDefense:
    headers = {k[len("header.") :]: v for k, v in spec.kwargs.items() if k.startswith("header.")}
    for name, value in headers.items():  # before any message that quotes the spec
        if _SECRET_HEADER.search(name) and _ENV_VALUE.match(value) is None:
            raise SpecError(
                f"http: header {name} looks like a credential: read it from the environment,"
                f" e.g. header.{name}=Bearer env:GUARD_KEY (a literal would be stored in runs)"
            )
    spec.check_options(_OPTIONS | {f"header.{h}" for h in headers})
    url = spec.require_arg("URL")
    defaults = ResponseMapping()
    try:
        mapping = ResponseMapping(
            blocked=spec.str_option("blocked") or defaults.blocked,
            score=spec.str_option("score", defaults.score),
            label=spec.str_option("label", defaults.label),
            reasons=spec.str_option("reasons", defaults.reasons),
        )
        return HTTPDefense(
            url,
            method=spec.str_option("method", "POST") or "",
            field=spec.str_option("field", "text") or "",
            mapping=mapping,
            headers=headers,
            options=net_options(spec),
        )
    except SpecError:
        raise
    except ConfigError as exc:
        raise SpecError(f"{spec.text!r}: {exc}") from None
