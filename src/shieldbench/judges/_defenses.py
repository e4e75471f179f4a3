"""The output-side detectors as defenses: ``secrets``, ``pii``, ``leak``, ``refusal``, ``none``.

The same ``check(text) -> Verdict`` contract as every input defense, so they can
screen a model's answer in ``--output-defense`` (the engine's end-to-end path) and
in the guard service, on whole answers or on a stream
(:class:`~shieldbench.judges.StreamScreen`). A detector that recognises everything it
blocks from its first N characters says so in ``max_match_chars``: a stream held back
by N characters is then screened without releasing part of a match (``secrets`` and
``pii``: 256; ``leak`` and ``refusal`` need the whole answer and declare none).
``blocked`` means "this answer must not be delivered": a validated secret, personal
data, a canary or system-prompt leak, or (``refusal``) a refusal, for services that
want to flag those.

``leak`` needs to know what must not leak: ``leak(canary=TOKEN,
system_prompt=TEXT)`` or ``system_prompt_file=PATH``; in an end-to-end run the
engine binds the run's own canary and system prompt (:meth:`LeakDefense.bind`).
``none`` never blocks: the "no defense" baseline of an end-to-end comparison.
"""

from __future__ import annotations

from pathlib import Path

from shieldbench.errors import ConfigError
from shieldbench.judges._leak import LeakJudge
from shieldbench.judges._pii import PiiJudge
from shieldbench.judges._protocol import Judgement
from shieldbench.judges._refusal import RefusalJudge, build_refusal
from shieldbench.judges._secrets import MAX_MATCH_CHARS as SECRETS_MAX_MATCH_CHARS
from shieldbench.judges._secrets import SecretsJudge
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = ["LeakDefense", "NoDefense", "PiiDefense", "RefusalDefense", "SecretsDefense"]


def _verdict(j: Judgement) -> Verdict:
    return Verdict(blocked=j.success, score=j.score, label=j.label, reasons=j.reasons)


class SecretsDefense:
    """Blocks an answer holding a validated API key, token or private key.

    ``max_match_chars``: each is recognised from its first 256 characters (and the one
    before it), so a stream held back by 256 characters never releases part of one."""

    name = "secrets"
    version = "2"  # 2: keys and tokens still arriving (PEM header + body, JWT prefix)
    max_match_chars = SECRETS_MAX_MATCH_CHARS

    def __init__(self) -> None:
        self._judge = SecretsJudge()

    def check(self, text: str) -> Verdict:
        return _verdict(self._judge.judge_text(text))


class PiiDefense:
    """Blocks an answer holding a valid card number, IBAN, e-mail or phone number.

    ``max_match_chars``: each is at most 256 characters with its boundaries (an e-mail
    address at most 254, RFC 5321; a card number 37 with separators, an IBAN 42)."""

    name = "pii"
    version = "1"
    max_match_chars = 256

    def __init__(self) -> None:
        self._judge = PiiJudge()

    def check(self, text: str) -> Verdict:
        return _verdict(self._judge.judge_text(text))


class LeakDefense:
    """Blocks an answer revealing ``canary`` or a large share of ``system_prompt``."""

    version = "1"

    def __init__(
        self, *, canary: str | None = None, system_prompt: str | None = None, overlap: float = 0.25
    ) -> None:
        self.canary = canary
        self.system_prompt = system_prompt
        self.overlap = overlap
        self.name = "leak"
        self._judge = LeakJudge(overlap=overlap)

    def bind(self, *, canary: str | None, system_prompt: str | None) -> LeakDefense:
        """A copy that also knows a run's canary and system prompt (given ones win)."""
        return LeakDefense(
            canary=self.canary or canary,
            system_prompt=self.system_prompt or system_prompt,
            overlap=self.overlap,
        )

    def check(self, text: str) -> Verdict:
        return _verdict(
            self._judge.judge_text(text, system_prompt=self.system_prompt, canary=self.canary)
        )


class RefusalDefense:
    """Flags (blocks) answers that are refusals; score = refusal score."""

    name = "refusal"
    version = "1"

    def __init__(self, judge: RefusalJudge) -> None:
        self._judge = judge

    def check(self, text: str) -> Verdict:
        refused, score, reasons = self._judge.refusal(text)
        return Verdict(
            blocked=refused,
            score=score,
            label="REFUSED" if refused else "COMPLIED",
            reasons=reasons,
        )


class NoDefense:
    """Lets everything through: the model-alone baseline of an end-to-end run."""

    name = "none"
    version = "1"

    def check(self, text: str) -> Verdict:
        return Verdict(blocked=False, score=0.0)


@defenses.register(
    "secrets",
    description="Output side: blocks validated API keys, tokens and private keys.",
    usage="secrets",
    example="secrets",
)
def _secrets(spec: Spec) -> SecretsDefense:
    spec.check_options(set())
    return SecretsDefense()


@defenses.register(
    "pii",
    description="Output side: blocks card numbers (Luhn), IBANs"
    " (mod 97), e-mail addresses and phone numbers.",
    usage="pii",
    example="pii",
)
def _pii(spec: Spec) -> PiiDefense:
    spec.check_options(set())
    return PiiDefense()


@defenses.register(
    "leak",
    description="Output side: blocks a canary token (also encoded) or system-prompt overlap;"
    " bound to the run's canary in end-to-end runs.",
    usage="leak | leak(canary=TOKEN, system_prompt=TEXT | system_prompt_file=PATH, overlap=0.25)",
    example="leak(canary=SBX-0123456789ABCDEF)",
)
def _leak(spec: Spec) -> LeakDefense:
    spec.check_options({"canary", "system_prompt", "system_prompt_file", "overlap"})
    prompt = spec.str_option("system_prompt")
    path = spec.str_option("system_prompt_file")
    if path is not None:
        if prompt is not None:
            raise ConfigError(f"{spec.text!r}: give system_prompt or system_prompt_file, not both")
        try:
            prompt = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{spec.text!r}: cannot read {path}: {exc.strerror}") from None
    overlap = spec.float_option("overlap", 0.25)
    return LeakDefense(
        canary=spec.str_option("canary"),
        system_prompt=prompt,
        overlap=0.25 if overlap is None else overlap,
    )


@defenses.register(
    "refusal",
    description="Output side: flags refusals (multilingual rules + embedding similarity).",
    usage="refusal | refusal(embed=auto|true|false, threshold=0.9)",
    example="refusal(embed=false)",
)
def _refusal(spec: Spec) -> RefusalDefense:
    return RefusalDefense(build_refusal(spec))


@defenses.register(
    "none",
    description="Never blocks: the model-alone baseline for end-to-end runs.",
    usage="none",
    example="none",
)
def _none(spec: Spec) -> NoDefense:
    spec.check_options(set())
    return NoDefense()
