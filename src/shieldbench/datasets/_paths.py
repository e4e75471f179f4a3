"""A bare file path where a dataset spec is expected: ``-D data/mine.jsonl``.

A dataset is named by a spec (``jsonl:data/mine.jsonl``), but a path to an existing
data file says just as clearly what to read. :func:`spec_for_text` turns such a path
into the spec of the loader its extension names (``.jsonl``/``.ndjson`` -> ``jsonl``,
``.csv``, ``.parquet``, ``.yaml``/``.yml`` -> ``pint``) and leaves every spec as it
is. Something that looks like a path but is neither an existing data file nor a
spec fails with the spec forms to write instead, rather than the parser's
"found '/mine.jsonl' after the name".

A spec wins over a file of the same name only when it is not a file with a data
extension: ``builtin:smoke`` is a spec even if a file of that name exists, while
``mine.jsonl`` is the file when it exists (no loader has a dotted name).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> path = folder / "mine.jsonl"
>>> _ = path.write_text('{"text": "hi", "label": "benign"}\\n')
>>> spec_for_text(str(path)) == f"jsonl:{path}"
True
>>> spec_for_text("builtin:smoke")
'builtin:smoke'
"""

from __future__ import annotations

import re
from pathlib import Path

from shieldbench.errors import SpecError
from shieldbench.registry import datasets
from shieldbench.spec import parse_spec

__all__ = ["FILE_LOADERS", "spec_for_text"]

# File extension -> the loader that reads it.
FILE_LOADERS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".yaml": "pint",
    ".yml": "pint",
}
# "data/x.txt", "x.json", "C:\\data\\x": a path, not a spec (no brackets, commas or ':ARG').
_PATH_LIKE = re.compile(r"[^():,]*[/\\][^(),]*|[^/\\():,]+\.[A-Za-z0-9]{1,10}")

SPEC_FORMS = (
    "jsonl:PATH, csv:PATH, parquet:PATH, pint:PATH.yaml, hf-disk:DIR, builtin:smoke,"
    " or a combinator such as mix(...) (all forms: shieldbench datasets list)"
)


def spec_for_text(text: str) -> str:
    """The dataset spec ``text`` stands for: the loader spec of an existing data file,
    else ``text`` itself. Raises :class:`SpecError` naming the spec forms when ``text``
    looks like a path but is no readable data file and no spec."""
    path = Path(text)
    loader = FILE_LOADERS.get(path.suffix.lower())
    if loader is not None and path.is_file():
        return f"{loader}:{text}"
    try:
        name = parse_spec(text).name
    except SpecError:
        name = None
    if name is not None and name in datasets:
        return text
    if not _PATH_LIKE.fullmatch(text.strip()):
        return text  # a spec with an unknown name: the registry's error suggests names
    if path.is_file():
        known = ", ".join(FILE_LOADERS)
        problem = f"{path.suffix or 'no extension'!s} is not a data file extension ({known})"
    elif path.is_dir():
        problem = "it is a folder (a saved Hugging Face dataset: hf-disk:DIR)"
    else:
        problem = "no such file (check the path)"
    raise SpecError(f"{text!r}: not a dataset spec, and {problem}; write a spec: {SPEC_FORMS}")
