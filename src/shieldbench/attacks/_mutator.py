"""The :class:`Mutator` record, the mutator registry and composition.

A mutator is plain data (name, family, what it preserves) plus a pure function
``(text, rng) -> str``. Randomness comes only from the ``random.Random`` it is
handed, so the same seed always gives the same output; a mutator that needs no
randomness ignores it (``needs_rng=False``). A mutator with an exact inverse
(``inverse(m(text, rng)) == text`` for every text and seed) is ``reversible``.

``preserves_payload`` is a claim about the reader, not about bytes: ``True`` when a
capable model can still read and act on the instruction (base64 with a decode
instruction, typos, a role-play frame); ``False`` when the transformation may hide
it from the model (Unicode tag characters that many tokenizers drop). The adaptive
search reports payload-preserving bypasses separately, because a bypass the model
cannot read is not a real attack.

Example:
    >>> import random
    >>> from shieldbench.attacks import compose, get_mutator
    >>> rot13 = get_mutator("rot13")
    >>> out = rot13("Ignore the rules", random.Random(0))
    >>> out.endswith("Vtaber gur ehyrf"), rot13.invert(out)
    (True, 'Ignore the rules')
    >>> chain = compose(get_mutator("rot13"), get_mutator("code_block"))
    >>> chain.name, chain.reversible, chain.invert(chain("hi", 1))
    ('rot13+code_block', True, 'hi')
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from shieldbench.errors import ConfigError, SpecError

__all__ = [
    "FAMILIES",
    "Family",
    "Mutator",
    "MutatorFn",
    "MutatorRegistry",
    "compose",
    "get_mutator",
    "mutators",
    "resolve_mutators",
]

MutatorFn = Callable[[str, random.Random], str]
Family = Literal[
    "encoding", "character", "paraphrase", "framing", "structure", "noise", "composite"
]
FAMILIES: tuple[str, ...] = get_args(Family)
CHAIN_SEPARATOR = "+"


@dataclass(frozen=True, slots=True)
class Mutator:
    """A named text transformation an attacker can apply to a payload.

    Call it as ``mutator(text, rng)`` where ``rng`` is a ``random.Random``, an
    ``int`` seed, or ``None`` (seed 0). ``components`` names the chain of a
    composed mutator (``()`` for a single one). ``inverse`` is the exact inverse of
    a reversible mutator; ``reversible`` is ``True`` exactly when it is given.
    """

    name: str
    family: Family
    description: str
    fn: MutatorFn = field(repr=False, compare=False)
    preserves_payload: bool
    needs_rng: bool
    inverse: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    components: tuple[str, ...] = ()
    reversible: bool = field(init=False)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(
                f"mutator {self.name!r}: family must be one of {FAMILIES}, got {self.family!r}"
            )
        if not self.name or any(c in self.name for c in ", ()"):
            raise ConfigError(
                f"mutator name {self.name!r} must be non-empty, without spaces, commas or"
                " parentheses"
            )
        object.__setattr__(self, "reversible", self.inverse is not None)

    def __call__(self, text: str, rng: random.Random | int | None = None) -> str:
        if not isinstance(text, str):
            raise ConfigError(f"mutator {self.name!r} needs a str, got {type(text).__name__}")
        if not isinstance(rng, random.Random):
            rng = random.Random(0 if rng is None else rng)
        return self.fn(text, rng)

    @property
    def chain(self) -> tuple[str, ...]:
        """The names of the single mutators applied, in order."""
        return self.components or (self.name,)

    def invert(self, text: str) -> str:
        """Undo the mutator exactly; :class:`ConfigError` when it is not reversible."""
        if self.inverse is None:
            raise ConfigError(f"mutator {self.name!r} is not reversible")
        return self.inverse(text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "preserves_payload": self.preserves_payload,
            "reversible": self.reversible,
            "needs_rng": self.needs_rng,
            "chain": list(self.chain),
        }


def compose(*parts: Mutator) -> Mutator:
    """Apply ``parts`` left to right, as one mutator.

    The name joins the chain with ``+``; the payload is preserved only if every
    step preserves it; the composite is reversible when every step is (its
    inverse undoes the steps right to left) and needs randomness when any step
    does. All steps draw from the one ``rng``, in order, so the composite is as
    deterministic as its parts. Composing one mutator returns it unchanged.
    """
    if not parts:
        raise ConfigError("compose() needs at least one mutator")
    if len(parts) == 1:
        return parts[0]
    chain = tuple(name for p in parts for name in p.chain)
    fns = tuple(p.fn for p in parts)

    def apply(text: str, rng: random.Random) -> str:
        for fn in fns:
            text = fn(text, rng)
        return text

    inverse: Callable[[str], str] | None = None
    inverses = tuple(p.inverse for p in parts)
    if all(inv is not None for inv in inverses):
        steps = tuple(inv for inv in reversed(inverses) if inv is not None)

        def invert(text: str) -> str:
            for inv in steps:
                text = inv(text)
            return text

        inverse = invert
    return Mutator(
        name=CHAIN_SEPARATOR.join(chain),
        family="composite",
        description=" then ".join(p.name for p in parts),
        fn=apply,
        preserves_payload=all(p.preserves_payload for p in parts),
        needs_rng=any(p.needs_rng for p in parts),
        inverse=inverse,
        components=chain,
    )


class MutatorRegistry:
    """Name -> :class:`Mutator`. Register built-ins with :meth:`register`.

    Third-party packages add mutators through the entry-point group
    ``shieldbench.mutators``; the entry point's object is a :class:`Mutator`.
    """

    def __init__(self, entry_point_group: str, *, builtin_modules: tuple[str, ...]) -> None:
        self.entry_point_group = entry_point_group
        self._builtin_modules = builtin_modules
        self._mutators: dict[str, Mutator] = {}
        self._loaded = False

    def register(
        self,
        name: str,
        *,
        family: Family,
        description: str,
        preserves_payload: bool,
        needs_rng: bool,
        inverse: Callable[[str], str] | None = None,
    ) -> Callable[[MutatorFn], MutatorFn]:
        """Decorator registering ``fn(text, rng) -> str`` as the mutator ``name``."""

        def decorator(fn: MutatorFn) -> MutatorFn:
            self.add(
                Mutator(
                    name=name,
                    family=family,
                    description=description,
                    fn=fn,
                    preserves_payload=preserves_payload,
                    needs_rng=needs_rng,
                    inverse=inverse,
                )
            )
            return fn

        return decorator

    def add(self, mutator: Mutator) -> None:
        """Register ``mutator``; a name is taken once (re-running a module replaces it)."""
        if CHAIN_SEPARATOR in mutator.name:
            raise ConfigError(f"mutator name {mutator.name!r} must not contain '+'")
        existing = self._mutators.get(mutator.name)
        if existing is not None and _where(existing.fn) != _where(mutator.fn):
            raise ConfigError(f"mutator {mutator.name!r} is already registered; choose another")
        self._mutators[mutator.name] = mutator

    def unregister(self, name: str) -> None:
        """Remove a mutator (tests and interactive use)."""
        self._mutators.pop(name, None)

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self._builtin_modules:
            __import__(module)
        from importlib import metadata  # on first use: it costs ~20 ms at import

        for ep in metadata.entry_points(group=self.entry_point_group):
            if ep.name not in self._mutators:
                loaded = ep.load()
                if not isinstance(loaded, Mutator):
                    raise ConfigError(
                        f"entry point {ep.name!r} in {self.entry_point_group} is a"
                        f" {type(loaded).__name__}, not a shieldbench.attacks.Mutator"
                    )
                self.add(loaded)

    def __iter__(self) -> Iterator[Mutator]:
        self._ensure_loaded()
        return iter(sorted(self._mutators.values(), key=lambda m: (m.family, m.name)))

    def __contains__(self, name: object) -> bool:
        self._ensure_loaded()
        return name in self._mutators

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._mutators)

    def names(self) -> list[str]:
        return [m.name for m in self]

    def get(self, name: str) -> Mutator:
        """The mutator ``name`` or a ``+``-chain of them; :class:`SpecError` if unknown."""
        self._ensure_loaded()
        steps = [s.strip() for s in name.split(CHAIN_SEPARATOR)]
        found: list[Mutator] = []
        for step in steps:
            m = self._mutators.get(step)
            if m is None:
                close = difflib.get_close_matches(step, self._mutators, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise SpecError(
                    f"no mutator named {step!r}{hint} (see 'shieldbench mutators' for the list)"
                )
            found.append(m)
        return compose(*found)

    def family(self, family: str) -> tuple[Mutator, ...]:
        """Every mutator of one family, sorted by name."""
        return tuple(m for m in self if m.family == family)


def _where(fn: object) -> tuple[object, object]:
    return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", fn))


mutators = MutatorRegistry(
    "shieldbench.mutators", builtin_modules=("shieldbench.attacks._builtin",)
)


def get_mutator(name: str) -> Mutator:
    """The registered mutator ``name``, or the composition ``a+b+c``."""
    return mutators.get(name)


def resolve_mutators(names: str | Iterable[str] | None) -> tuple[Mutator, ...]:
    """Mutators from a comma-separated list of names, ``+``-chains and family names.

    ``None``, ``""`` or ``"all"`` mean every registered mutator. A family name
    (``encoding``, ``character``, ``paraphrase``, ``framing``, ``structure``,
    ``noise``) stands for all of its members. Duplicates are dropped, order kept.

    >>> [m.name for m in resolve_mutators("rot13, base64+json")]
    ['rot13', 'base64+json']
    >>> len(resolve_mutators("framing")) >= 8
    True
    """
    if names is None:
        return tuple(mutators)
    items: Sequence[str] = names.split(",") if isinstance(names, str) else list(names)
    wanted = [n.strip() for n in items if n.strip()]
    if not wanted or wanted == ["all"]:
        return tuple(mutators)
    out: dict[str, Mutator] = {}
    for name in wanted:
        if name in FAMILIES and name != "composite":
            members = mutators.family(name)
            out.update((m.name, m) for m in members)
        else:
            m = mutators.get(name)
            out.setdefault(m.name, m)
    return tuple(out.values())
