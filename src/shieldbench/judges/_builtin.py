"""Registers the built-in judges: refusal, leak, secrets, pii, llm-judge, python."""

from __future__ import annotations

from shieldbench.judges._leak import build_leak
from shieldbench.judges._llm_judge import build_llm_judge
from shieldbench.judges._pii import build_pii
from shieldbench.judges._protocol import Judge
from shieldbench.judges._python import build_python_judge
from shieldbench.judges._refusal import build_refusal
from shieldbench.judges._secrets import build_secrets
from shieldbench.registry import Registry

__all__ = ["judges"]

judges: Registry[Judge] = Registry(
    "judge", "shieldbench.judges", builtin_modules=("shieldbench.judges._builtin",)
)

judges.register(
    "refusal",
    description="Did the model refuse? Multilingual rules + MiniLM similarity to exemplars.",
    usage="refusal | refusal(embed=auto|true|false, threshold=0.9)",
    example="refusal(embed=false)",
)(build_refusal)
judges.register(
    "leak",
    description="Canary token (exact, spaced, reversed, base64/hex/rot13...) or system-prompt"
    " character 8-gram overlap.",
    usage="leak | leak(overlap=0.25)",
    example="leak",
)(build_leak)
judges.register(
    "secrets",
    description="API keys and tokens by format, validated (GitHub CRC32, JWT structure,"
    " entropy, no placeholders).",
    usage="secrets",
    example="secrets",
)(build_secrets)
judges.register(
    "pii",
    description="Card numbers (Luhn + issuer), IBANs (mod 97), e-mail, phone numbers.",
    usage="pii",
    example="pii",
)(build_pii)
judges.register(
    "llm-judge",
    description="A StrongREJECT-style rubric graded by a chat model; parse failures are errors.",
    usage="llm-judge:PROVIDER/MODEL | llm-judge:MODEL@BASE_URL | llm-judge(MODEL@URL,"
    " threshold=0.5, api_key_env=VAR, timeout=60)",
)(build_llm_judge)
judges.register(
    "python",
    description="Your own judge: an object, a function (sample, answer, context) or a factory.",
    usage="python:MODULE:ATTRIBUTE",
)(build_python_judge)
