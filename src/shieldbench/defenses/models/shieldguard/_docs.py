"""Real benign documentation for shieldguard's core training data (stage 1).

Technical documentation is full of what a naive detector reads as an attack:
imperatives ("Return ...", "Set ... to ...", "Ignore ..."), code, shell prompts,
``>>>`` sessions and words such as *override*, *execute* or *password*. Measured
before this module existed, the shipped model blocked 27% of the Python standard
library's docstrings and 24% of passages of third-party packages' READMEs, none
of which it had seen: its benign training data held almost no documentation.

Both sources here ship with the Python interpreter, so training stays offline and
reproducible for a given Python version (the card's data hash records which):

- :func:`stdlib_docstrings`: module, class and function docstrings of the standard
  library's ``.py`` files, read with :mod:`ast` (never imported, so nothing runs);
- :func:`python_docs`: passages of :mod:`pydoc_data.topics`, the language reference
  sections ``help()`` shows.

Third-party packages' documentation is *not* used: it is what
``benchmarks/shieldguard_unseen.py`` measures the model on, as a source it never saw.
Everything here is benign (PSF licence).
"""

from __future__ import annotations

import ast
import random
import sysconfig
from pathlib import Path

__all__ = ["DOCS", "python_docs", "stdlib_docstrings"]

# standard-library folders that are tests, tools or bundled third-party trees
_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "idlelib",
        "lib2to3",
        "tkinter",
        "turtledemo",
        "ensurepip",
        "pydoc_data",
        "site-packages",
        "dist-packages",
        "__pycache__",
    }
)
_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(
        path
        for path in root.rglob("*.py")
        if not set(path.relative_to(root).parts[:-1]) & _SKIP_DIRS
    )


def stdlib_docstrings(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` distinct standard-library docstrings of 25-400 words, in a seeded order.

    Files that do not parse (a standard library from another Python version) are
    skipped. Deterministic for a Python installation.
    """
    docs: list[str] = []
    for path in _stdlib_files():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, _DOC_NODES):
                doc = ast.get_docstring(node)
                if doc and 25 <= len(doc.split()) <= 400:
                    docs.append(doc)
    docs = list(dict.fromkeys(docs))
    rng.shuffle(docs)
    return [(d, "stdlib_docstring") for d in docs[:n]]


def python_docs(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` distinct passages (30-400 words) of the documentation that ships with Python.

    :mod:`pydoc_data.topics` holds the language reference sections ``help()`` shows:
    long technical prose full of imperatives ("Use ...", "Note that ...") and words
    attacks use ("override", "ignore", "execute"). Deterministic for a Python version.
    """
    from pydoc_data.topics import topics

    passages: list[str] = []
    for name in sorted(topics):
        paragraphs = [p.strip() for p in topics[name].split("\n\n") if p.strip()]
        chunk: list[str] = []
        for para in paragraphs:
            chunk.append(para)
            if sum(len(p.split()) for p in chunk) >= 30:
                passages.append("\n\n".join(chunk))
                chunk = []
    # topics share sections: keep one copy of each passage, in a fixed order
    passages = [p for p in dict.fromkeys(passages) if len(p.split()) <= 400]
    rng.shuffle(passages)
    return [(p, "python_docs") for p in passages[:n]]


# source name -> (generator, train count, dev count); all benign
DOCS = {
    "installed:python-stdlib": (stdlib_docstrings, 2000, 200),
    "installed:python-docs": (python_docs, 850, 100),
}
