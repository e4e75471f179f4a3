"""Writing shieldbench's files safely: whole, durable, shareable, encodable, secret-free.

:func:`write_text_atomic` is the one way files are written (run files, reports,
attack results, JSONL exports, ``benchmark.json``, ``compare --json``):

- **whole**: a temporary file in the same folder, renamed over the target, so a
  reader (or a crash) never sees half a file;
- **durable**: the file is fsynced before the rename and the folder after it, so
  once the call returns the new file survives a power cut (callers delete what it
  replaces, e.g. a checkpoint, only after that);
- **shareable**: mode 0644 like any file a user creates (``mkstemp`` makes 0600);
- **encodable**: text that UTF-8 cannot encode (a lone surrogate such as
  ``"\\ud800"``, which Python strings and JSON allow) is written as the escape
  ``\\ud800``, which keeps JSON valid and reads back to the same text; datasets
  refuse such text at load time (:func:`find_unencodable`), so this only meets
  what a defense itself returns;
- **secret-free**: registered credentials are masked (:func:`shieldbench._redact.mask_secrets`).

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.json"
    >>> _ = write_text_atomic(path, '{"text": "\\ud800"}\\n')
    >>> path.read_text(encoding="utf-8")
    '{"text": "\\\\ud800"}\\n'
    >>> oct(path.stat().st_mode & 0o777)
    '0o644'
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from shieldbench._redact import mask_secrets

__all__ = ["find_unencodable", "write_text_atomic"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def find_unencodable(text: str) -> int | None:
    """The 1-based position of the first character UTF-8 cannot encode, or None.

    >>> find_unencodable("ok"), find_unencodable("ab\\udc80")
    (None, 3)
    """
    match = _SURROGATE.search(text)
    return None if match is None else match.start() + 1


def write_text_atomic(path: str | Path, text: str, *, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` as described in the module docstring; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = mask_secrets(text).encode("utf-8", "backslashreplace")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
