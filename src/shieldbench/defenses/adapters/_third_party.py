"""Adapters for third-party offline detectors published on PyPI.

Each adapter wraps one package behind the :class:`~shieldbench.defenses.Defense`
contract so it can be benchmarked like any other defense. Every package is an
optional extra (``pip install 'shieldbench[nanoguard]'``, ...), imported lazily
inside the factory: listing defenses never imports them, and building one whose
package is missing raises :class:`~shieldbench.errors.PluginUnavailableError`
with the install hint (the registry checks ``requires`` before calling us).

What each adapter maps, after reading the package's source:

======================  ==============================  ====================================
spec                    package (module)                score / blocked
======================  ==============================  ====================================
``nanoguard``           metatronnanoguard (nanoguard)   ``injection_score`` (softmax
                                                        probability of the injection class)
                                                        >= ``threshold`` (0.5); batched
                                                        ``scan_batch``
``guardify``            prompt-guardrail (guardify)     ``predict_proba`` column of class 1
                                                        (injection) >= ``threshold`` (0.5);
                                                        one vectorizer call per batch. Not
                                                        the package's ``score``, which is
                                                        the probability of whichever label
                                                        won (0.9 for a confident "safe").
``injectionshield``     injectionshield                 ``risk_score`` (severity of the
                                                        worst matching rule: 0, .25, .5,
                                                        .75, 1); blocked when the risk level
                                                        reaches ``threshold`` (MEDIUM);
                                                        ``scan_batch``. Its rules use
                                                        Python ``re`` on the raw text
``promptlint``          prompt-lint-py (promptlint)     ``risk_score`` of its L2 scorer;
                                                        blocked when the policy decides
                                                        BLOCK / ESCALATE_TO_HUMAN (mode
                                                        ``block``), or ``risk >= threshold``
                                                        when a threshold is given
``promptsafe``          promptsafe                      its 0-100 score / 100; blocked at
                                                        ``score >= threshold`` (35, the
                                                        package default); scanned without
                                                        the package's SQLite attack log
======================  ==============================  ====================================

``version`` is the installed distribution's version. Options are checked at the
edge: an unknown option or an out-of-range threshold is a :class:`SpecError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

from shieldbench.errors import DefenseError, SpecError
from shieldbench.registry import defenses
from shieldbench.spec import Spec
from shieldbench.types import Verdict

__all__ = [
    "GuardifyDefense",
    "InjectionShieldDefense",
    "NanoGuardDefense",
    "PromptLintDefense",
    "PromptSafeDefense",
]


def _skew_note(message: Warning | str) -> str:
    """A readable note for a warning raised while loading a pickled model."""
    original = getattr(message, "original_sklearn_version", None)
    current = getattr(message, "current_sklearn_version", None)
    if original and current:
        return f"model pickled with scikit-learn {original}, loaded with {current}"
    return f"{type(message).__name__} while loading the model"


def _version(distribution: str) -> str:
    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} (unknown version)"


def _threshold(spec: Spec, default: float, *, low: float = 0.0, high: float = 1.0) -> float:
    spec.check_options({"threshold"})
    value = spec.float_option("threshold", default)
    assert value is not None
    if not low <= value <= high:
        raise SpecError(f"{spec.text!r}: threshold must be in [{low:g}, {high:g}], got {value:g}")
    return value


def _unit(value: float) -> float:
    """Clamp a package's probability into [0, 1] (float rounding can overshoot)."""
    return min(1.0, max(0.0, float(value)))


class NanoGuardDefense:
    """metatronnanoguard's small transformer classifier (CPU, batched)."""

    name = "nanoguard"

    def __init__(self, *, threshold: float = 0.5, device: str = "cpu") -> None:
        from nanoguard import NanoGuard

        self.threshold = threshold
        self._model: Any = NanoGuard(device=device, threshold=threshold)
        self.distribution = "metatronnanoguard"  # recorded as the run's defense_package
        self.version = _version("metatronnanoguard")

    def _verdict(self, result: Any) -> Verdict:
        score = _unit(result.injection_score)
        blocked = score >= self.threshold
        return Verdict(
            blocked=blocked,
            score=score,
            label="INJECTION" if blocked else "SAFE",
            reasons=("nanoguard:injection",) if blocked else (),
        )

    def check(self, text: str) -> Verdict:
        return self._verdict(self._model.scan(text))

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        return [self._verdict(r) for r in self._model.scan_batch(list(texts))]


class GuardifyDefense:
    """prompt-guardrail's TF-IDF + logistic regression guardrail."""

    name = "guardify"

    def __init__(self, *, threshold: float = 0.5) -> None:
        import warnings

        from guardify.guardrails.logistic_regression import LogisticRegressionGuardrail

        self.threshold = threshold
        # The package pickles its model with an older scikit-learn; unpickling
        # warns about the version skew. We load it anyway (that is what users of
        # the package get) and record the skew in ``version`` instead.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            guard = LogisticRegressionGuardrail()
        skew = sorted({_skew_note(w.message) for w in caught})
        self._clf: Any = guard._clf
        self._vectorizer: Any = guard._vectorizer
        classes = [int(c) for c in self._clf.classes_]
        if 1 not in classes:
            raise DefenseError(f"guardify's classifier has classes {classes}, expected 0 and 1")
        self._column = classes.index(1)
        self.distribution = "prompt-guardrail"  # recorded as the run's defense_package
        self.version = _version("prompt-guardrail") + (f" ({'; '.join(skew)})" if skew else "")

    def check(self, text: str) -> Verdict:
        return self.check_batch([text])[0]

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        if not texts:
            return []
        probabilities = self._clf.predict_proba(self._vectorizer.transform(list(texts)))
        verdicts = []
        for row in probabilities:
            score = _unit(row[self._column])
            blocked = score >= self.threshold
            verdicts.append(
                Verdict(blocked=blocked, score=score, label="INJECTION" if blocked else "SAFE")
            )
        return verdicts


class InjectionShieldDefense:
    """injectionshield's rule library (Python ``re``, worst match wins)."""

    name = "injectionshield"

    def __init__(self, *, threshold: str = "MEDIUM") -> None:
        import injectionshield

        self._scan = injectionshield.scan
        self._scan_batch = injectionshield.scan_batch
        levels = injectionshield.RiskLevel
        try:
            self._level = levels[threshold.upper()]
        except KeyError:
            names = ", ".join(level.name.lower() for level in levels if level.value > 0)
            raise SpecError(f"injectionshield: threshold must be one of {names}") from None
        self.distribution = "injectionshield"  # recorded as the run's defense_package
        self.version = _version("injectionshield")

    @staticmethod
    def _verdict(result: Any) -> Verdict:
        return Verdict(
            blocked=not result.safe,
            score=_unit(result.risk_score),
            label=result.risk_level.name,
            reasons=tuple(result.threats),
        )

    def check(self, text: str) -> Verdict:
        return self._verdict(self._scan(text, threshold=self._level))

    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        return [self._verdict(r) for r in self._scan_batch(list(texts), threshold=self._level)]


class PromptLintDefense:
    """prompt-lint-py's firewall (canonicalisation, regex rules, scoring, policy).

    Its optional ML layer downloads a model on first use, so it is never enabled.
    """

    name = "promptlint"

    def __init__(self, *, threshold: float | None = None) -> None:
        from promptlint.firewall import Firewall
        from promptlint.types import Decision

        self.threshold = threshold
        self._firewall: Any = Firewall(mode="block")
        self._blocking = frozenset({Decision.BLOCK, Decision.ESCALATE_TO_HUMAN})
        self.distribution = "prompt-lint-py"  # recorded as the run's defense_package
        self.version = _version("prompt-lint-py")

    def check(self, text: str) -> Verdict:
        result = self._firewall.scan(text)
        score = _unit(result.risk_score)
        if self.threshold is None:
            blocked = result.decision in self._blocking
        else:
            blocked = score >= self.threshold
        rules = dict.fromkeys(f.rule_id for f in result.findings)
        return Verdict(
            blocked=blocked,
            score=score,
            label=str(result.decision.value),
            reasons=tuple(rules),
        )


class PromptSafeDefense:
    """promptsafe's weighted regex + keyword scorer (0-100)."""

    name = "promptsafe"

    def __init__(self, *, threshold: float = 35.0) -> None:
        # The package-level ``promptsafe.scan`` writes blocked inputs to a SQLite
        # log in the user's home; the detector function is the same scan without
        # that side effect.
        from promptsafe.detector import scan

        self._scan = scan
        self.threshold = threshold
        self.distribution = "promptsafe"  # recorded as the run's defense_package
        self.version = _version("promptsafe")

    def check(self, text: str) -> Verdict:
        result = self._scan(text, threshold=self.threshold)
        score = float(result["score"])
        return Verdict(
            blocked=score >= self.threshold,
            score=_unit(score / 100.0),
            label=str(result["riskLevel"]).upper(),
            reasons=tuple(dict.fromkeys(result["matchedPatterns"])),
        )


def _hint(extra: str) -> str:
    return f"pip install 'shieldbench[{extra}]'"


@defenses.register(
    "nanoguard",
    description="metatronnanoguard: a small transformer prompt-injection classifier (offline).",
    usage="nanoguard | nanoguard(threshold=0.5)",
    requires=("nanoguard", "torch"),
    install_hint=_hint("nanoguard"),
    example="nanoguard",
)
def _nanoguard(spec: Spec) -> NanoGuardDefense:
    return NanoGuardDefense(threshold=_threshold(spec, 0.5))


@defenses.register(
    "guardify",
    description="prompt-guardrail: TF-IDF + logistic regression; score = P(injection).",
    usage="guardify | guardify(threshold=0.5)",
    requires=("guardify", "sklearn", "joblib"),
    install_hint=_hint("guardify"),
    example="guardify",
)
def _guardify(spec: Spec) -> GuardifyDefense:
    return GuardifyDefense(threshold=_threshold(spec, 0.5))


@defenses.register(
    "injectionshield",
    description="injectionshield: rule-based injection patterns, worst match wins.",
    usage="injectionshield | injectionshield(threshold=low|medium|high|critical)",
    requires=("injectionshield",),
    install_hint=_hint("injectionshield"),
    example="injectionshield",
)
def _injectionshield(spec: Spec) -> InjectionShieldDefense:
    spec.check_options({"threshold"})
    return InjectionShieldDefense(threshold=spec.str_option("threshold") or "MEDIUM")


@defenses.register(
    "promptlint",
    description="prompt-lint-py firewall: canonicalisation, regex rules, risk scoring, policy.",
    usage="promptlint | promptlint(threshold=0.8)",
    requires=("promptlint",),
    install_hint=_hint("promptlint"),
    example="promptlint",
)
def _promptlint(spec: Spec) -> PromptLintDefense:
    spec.check_options({"threshold"})
    threshold = None if "threshold" not in spec.kwargs else _threshold(spec, 0.8)
    return PromptLintDefense(threshold=threshold)


@defenses.register(
    "promptsafe",
    description="promptsafe: weighted regex and keyword scoring (0-100, blocks at 35).",
    usage="promptsafe | promptsafe(threshold=35)",
    requires=("promptsafe",),
    install_hint=_hint("promptsafe"),
    example="promptsafe",
)
def _promptsafe(spec: Spec) -> PromptSafeDefense:
    return PromptSafeDefense(threshold=_threshold(spec, 35.0, high=100.0))
