"""One OpenAI-compatible chat client, for the ``llm:`` defense and the ``openai:`` target.

Everything both need to talk to ``POST {base_url}/chat/completions`` is built here,
once: where the model is served (:func:`resolve_endpoint`: provider prefixes, ``MODEL@URL``,
``base_url=``), which environment variable holds the API key (a provider's default
variable is sent only to that provider's own URL), the network options from the spec
(:func:`net_options`: ``timeout``, ``retries``, ``backoff``, ``rpm``), and the client
itself (:func:`chat_client`): the key in the ``Authorization`` header (checked, never
logged, scrubbed from errors), one HTTP client pool (sync and per event loop), one rate
limiter, and the retries of :mod:`shieldbench.defenses.remote._net`.

Example::

    >>> from shieldbench.spec import parse_spec
    >>> spec = parse_spec("llm(qwen@http://127.0.0.1:8000/v1, timeout=5, rpm=60)")
    >>> end = chat_endpoint(spec, spec.require_arg("MODEL"), provider=None)
    >>> end.model, end.base_url, end.api_key_env, end.options.timeout_s, end.options.rpm
    ('qwen', 'http://127.0.0.1:8000/v1', None, 5.0, 60.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from shieldbench._redact import check_header_value
from shieldbench.defenses.remote._clients import ClientPool
from shieldbench.defenses.remote._net import (
    JSON_HEADERS,
    NetOptions,
    RateLimiter,
    Reply,
    Secret,
    env_secret,
    send_async,
    send_sync,
)
from shieldbench.errors import SpecError
from shieldbench.spec import Spec

__all__ = [
    "PROVIDERS",
    "ChatClient",
    "ChatEndpoint",
    "chat_client",
    "chat_endpoint",
    "net_options",
    "resolve_endpoint",
]

#: provider prefix -> (default base URL, environment variable of its API key or None)
PROVIDERS: Mapping[str, tuple[str, str | None]] = MappingProxyType(
    {
        "ollama": ("http://localhost:11434/v1", None),
        "vllm": ("http://localhost:8000/v1", None),
        "litellm": ("http://localhost:4000/v1", None),
        "lmstudio": ("http://localhost:1234/v1", None),
        "llamacpp": ("http://localhost:8080/v1", None),
        "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    }
)


def resolve_endpoint(
    target: str, *, provider: str | None = None, base_url: str | None = None
) -> tuple[str, str, str | None]:
    """``(model, base_url, default key variable)`` of ``PROVIDER/MODEL``, ``MODEL@URL``, ``MODEL``.

    >>> resolve_endpoint("ollama/phi3.5")
    ('phi3.5', 'http://localhost:11434/v1', None)
    >>> resolve_endpoint("gpt-4o-mini", provider="openai")
    ('gpt-4o-mini', 'https://api.openai.com/v1', 'OPENAI_API_KEY')
    >>> resolve_endpoint("qwen@http://127.0.0.1:8000/v1/", provider="openai")
    ('qwen', 'http://127.0.0.1:8000/v1', None)
    """
    model, key_env = target.strip(), None
    if "@" in model:
        model, url = (part.strip() for part in model.split("@", 1))
        if base_url is not None and base_url != url:
            raise SpecError(f"{target!r}: give the base URL once (MODEL@URL or base_url=)")
        base_url = url
    elif "/" in model and model.split("/", 1)[0].lower() in PROVIDERS:
        provider, model = model.split("/", 1)
        provider = provider.lower()
    if base_url is None:
        if provider is None:
            raise SpecError(
                f"{target!r}: say where the model is served: a provider prefix"
                f" ({', '.join(PROVIDERS)}), e.g. 'llm:ollama/{model}', or 'llm:{model}@URL'"
                " or llm(MODEL, base_url=URL)"
            )
        base_url, key_env = PROVIDERS[provider]
    if not model:
        raise SpecError(f"{target!r}: the model name is empty")
    if not base_url.startswith(("http://", "https://")):
        raise SpecError(f"{target!r}: base URL {base_url!r} must start with http:// or https://")
    if "@" in base_url.split("//", 1)[1].split("/", 1)[0]:
        raise SpecError(f"{target!r}: no credentials in the URL; use api_key_env=VARIABLE")
    return model, base_url.rstrip("/"), key_env


def net_options(spec: Spec, *, timeout_default: float = 30.0) -> NetOptions:
    """:class:`NetOptions` from a spec's ``timeout``, ``retries``, ``backoff`` and ``rpm``."""
    timeout = spec.float_option("timeout", timeout_default)
    retries = spec.int_option("retries", 0)
    backoff = spec.float_option("backoff", 0.5)
    rpm = spec.float_option("rpm")
    try:
        return NetOptions(
            timeout_s=timeout_default if timeout is None else timeout,
            retries=0 if retries is None else retries,
            backoff_s=0.5 if backoff is None else backoff,
            rpm=rpm,
        )
    except Exception as exc:
        raise SpecError(f"{spec.text!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ChatEndpoint:
    """Where a chat model is served and how to reach it, read from a spec."""

    model: str
    base_url: str
    api_key_env: str | None
    options: NetOptions


def chat_endpoint(
    spec: Spec, where: str, *, provider: str | None, timeout_default: float = 30.0
) -> ChatEndpoint:
    """The endpoint a spec names: ``where`` (``PROVIDER/MODEL``, ``MODEL@URL``, ``MODEL``),
    its ``base_url`` / ``api_key_env`` options (else the provider's default key variable)
    and :func:`net_options` (``timeout`` defaults to ``timeout_default``)."""
    model, base_url, default_env = resolve_endpoint(
        where, provider=provider, base_url=spec.str_option("base_url")
    )
    return ChatEndpoint(
        model,
        base_url,
        spec.str_option("api_key_env") or default_env,
        net_options(spec, timeout_default=timeout_default),
    )


class ChatClient:
    """``POST {base_url}/chat/completions`` with the key, the pool, the limiter and the
    retries of :mod:`~shieldbench.defenses.remote._net`; build it with :func:`chat_client`."""

    def __init__(
        self,
        *,
        base_url: str,
        key: Secret | None,
        options: NetOptions,
        what: str,
    ) -> None:
        headers = dict(JSON_HEADERS)
        if key is not None:
            headers["Authorization"] = f"Bearer {key.reveal()}"
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.options = options
        self.what = what
        self.secrets: tuple[Secret, ...] = () if key is None else (key,)
        self._pool = ClientPool(timeout_s=options.timeout_s, headers=headers)
        self._limiter = RateLimiter(options.rpm)

    def post(self, body: bytes) -> Reply:
        """Send ``body`` (JSON bytes); the reply, or a :class:`DefenseError` naming ``what``."""
        return send_sync(
            lambda: self._pool.send("POST", self.url, content=body),
            what=self.what,
            options=self.options,
            limiter=self._limiter,
            secrets=self.secrets,
        )

    async def apost(self, body: bytes) -> Reply:
        """:meth:`post` on the running event loop (one HTTP session per loop)."""
        return await send_async(
            lambda: self._pool.asend("POST", self.url, content=body),
            what=self.what,
            options=self.options,
            limiter=self._limiter,
            secrets=self.secrets,
        )

    def close(self) -> None:
        """Close the HTTP clients (the sync one and each event loop's session)."""
        self._pool.close()


def chat_client(
    model: str,
    *,
    base_url: str,
    api_key_env: str | None,
    options: NetOptions,
    role: str,
) -> ChatClient:
    """The one factory of chat clients: the key read from ``api_key_env`` (an error
    naming the variable when it is unset or not a valid header value), and errors that
    read ``"{role} {model} at {base_url}: ..."``."""
    key = None
    if api_key_env is not None:
        key = env_secret(api_key_env, what=f"{role} {model}")
        source = f"environment variable {api_key_env}"
        check_header_value("Authorization", f"Bearer {key.reveal()}", source=source)
    what = f"{role} {model} at {base_url.rstrip('/')}"
    return ChatClient(base_url=base_url, key=key, options=options, what=what)
