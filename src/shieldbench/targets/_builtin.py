"""Registers the built-in targets: ``openai``, ``llm``, ``python``."""

from __future__ import annotations

from shieldbench.registry import Registry
from shieldbench.spec import Spec
from shieldbench.targets._openai import ChatTarget, build_chat_target
from shieldbench.targets._protocol import Target
from shieldbench.targets._python import build_python_target

__all__ = ["targets"]

targets: Registry[Target] = Registry(
    "target", "shieldbench.targets", builtin_modules=("shieldbench.targets._builtin",)
)


@targets.register(
    "openai",
    description="A chat model on OpenAI or any OpenAI-compatible server; key from"
    " $OPENAI_API_KEY for api.openai.com, else api_key_env=VAR.",
    usage="openai:MODEL | openai:MODEL@BASE_URL | openai(MODEL@URL, api_key_env=VAR,"
    " temperature=0, max_tokens=N, timeout=60, rpm=N, stream=false)",
)
def _openai(spec: Spec) -> ChatTarget:
    return build_chat_target(spec, "openai")


@targets.register(
    "llm",
    description="A chat model on a local OpenAI-compatible server (Ollama, vLLM, LiteLLM,"
    " LM Studio, llama.cpp).",
    usage="llm:PROVIDER/MODEL | llm:MODEL@BASE_URL | llm(MODEL, base_url=URL, ...)",
)
def _llm(spec: Spec) -> ChatTarget:
    return build_chat_target(spec, None)


@targets.register(
    "python",
    description="Your own model: an object with generate(messages) -> str, a function, or a"
    " factory.",
    usage="python:MODULE:ATTRIBUTE | python(MODULE:ATTRIBUTE, OPTION=VALUE, ...)",
)
def _python(spec: Spec) -> Target:
    return build_python_target(spec)
