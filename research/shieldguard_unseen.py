"""False positives of shieldguard on benign text from sources it was never trained on.

Leave-one-source-out (``shieldguard_eval.py``) holds out sources the project has;
this benchmark adds benign sources that no shieldguard recipe ever reads, so a
model cannot have been chosen on them:

- ``pypi-readmes``: passages (40-400 words) of the long descriptions of every
  distribution installed next to shieldbench (``importlib.metadata``): READMEs and
  change logs, full of install commands, code, imperatives and API names;
- ``debian-docs``: passages of the ``README`` and ``copyright`` files under
  ``/usr/share/doc`` (licence texts: "you must not ...", "permission is granted ...");
- ``written:sysprompt`` / ``written:roleplay`` / ``written:chat``: the written
  stage-2 variety families (``_variety``), which the shipped recipe does not train
  on. Written by the project after the first LOSO run, so a weaker witness than the
  two above. (``installed:python-docs``, the fourth stage-2 family, is left out:
  one experiment trained on it, commit eb0eff4.)

Passages are de-duplicated and sampled (seeded) up to ``--per-set`` per source; what
is installed decides the real sources, so the run prints their counts and a hash of
the texts: compare two models only on the same hash. Every defense in ``--defenses``
and each ``--model DIR`` (default: the shipped model) is measured on the same rows,
and McNemar compares the first two models on them.

Run: ``python -m research.shieldguard_unseen [--model DIR ...] [--per-set 300]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import random
import sys
from collections.abc import Iterable
from pathlib import Path

from research.shieldguard_eval import _blocked, paired  # the LOSO benchmark's batching and pairing
from shieldbench.defenses import build_defense
from shieldbench.defenses.models.shieldguard import ShieldGuardDefense, shipped_model_path
from shieldbench.metrics import mcnemar_test, rate
from shieldbench.train.shieldguard import FAMILIES, passages

DOC_ROOT = Path("/usr/share/doc")


def pypi_readmes() -> list[str]:
    texts: list[str] = []
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        name = (dist.metadata["Name"] or "").lower()
        if name == "shieldbench":
            continue
        body = dist.metadata.get_payload()  # type: ignore[attr-defined]
        if isinstance(body, str):
            texts += passages(body, low=40, high=400)
    return texts


def debian_docs() -> list[str]:
    texts: list[str] = []
    for path in sorted(DOC_ROOT.glob("*/*")):
        if not (path.name.startswith("README") or path.name == "copyright"):
            continue
        try:
            raw = path.read_bytes()
            if path.suffix == ".gz":
                raw = gzip.decompress(raw)
            texts += passages(raw.decode("utf-8"), low=40, high=400)
        except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
            continue
    return texts


def sources(per_set: int) -> dict[str, list[str]]:
    out = {"pypi-readmes": pypi_readmes(), "debian-docs": debian_docs()}
    for name, (generate, _, _) in FAMILIES.items():
        if name.startswith("written:"):
            out[name] = [t for t, _ in generate(random.Random(11), per_set)]
    sampled: dict[str, list[str]] = {}
    for name, texts in out.items():
        unique = list(dict.fromkeys(texts))
        random.Random(0).shuffle(unique)
        print(f"{name}: {len(unique)} distinct passages", file=sys.stderr)
        sampled[name] = unique[:per_set]
    return sampled


def _fmt(flags: Iterable[bool]) -> str:
    values = list(flags)
    r = rate(sum(values), len(values))
    return "n/a" if r.value is None else f"{r.value:.3f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append", default=None)
    parser.add_argument("--per-set", type=int, default=300)
    parser.add_argument("--defenses", default="pattern,recommended")
    args = parser.parse_args(argv)
    data = sources(args.per_set)
    rows = [(name, t) for name, texts in data.items() for t in texts]
    digest = hashlib.sha256("\x00".join(t for _, t in rows).encode()).hexdigest()[:12]
    print(f"{len(rows)} benign rows, texts hash {digest}")
    texts = [t for _, t in rows]
    columns: dict[str, list[bool]] = {}
    for model in args.model or [shipped_model_path()]:
        columns[f"shieldguard:{model}"] = _blocked(ShieldGuardDefense(model), texts)[0]
    for spec in filter(None, args.defenses.split(",")):
        columns[spec] = _blocked(build_defense(spec), texts)[0]
    head = ["defense", *data, "all"]
    print("\nFPR (benign blocked), Wilson 95%, n per set:", {k: len(v) for k, v in data.items()})
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for name, column in columns.items():
        cells = [
            _fmt(b for (s, _), b in zip(rows, column, strict=True) if s == src) for src in data
        ]
        print("| " + " | ".join([name, *cells, _fmt(column)]) + " |")
    models = [k for k in columns if k.startswith("shieldguard:")]
    if len(models) >= 2:
        print("\n" + mcnemar_line(models[0], columns[models[0]], models[1], columns[models[1]]))
    return 0


def mcnemar_line(first: str, a: list[bool], second: str, b: list[bool]) -> str:
    """McNemar of two block columns on benign rows (correct = not blocked), in words.

    Each discordant count names the model that blocks, so the line cannot be read the
    wrong way round: ``mcnemar_line("x", [True, False], "y", [False, False])`` says
    one row only ``x`` blocks and none only ``y`` blocks.
    """
    table = paired([0] * len(a), a, b)  # only_a: first right alone, so second blocks
    test = mcnemar_test(table)
    return (
        f"McNemar, {second} vs {first} (benign rows, correct = not blocked): "
        f"{table.only_b} rows only {first} blocks, {table.only_a} only {second} blocks;"
        f" p = {test.p_value:.3g}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
