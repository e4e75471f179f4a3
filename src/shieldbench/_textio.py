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
from shieldbench.errors import ShieldbenchError

__all__ = ["find_unencodable", "read_text_input", "write_text_atomic"]

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


def read_text_input(path: Path, *, error: type[ShieldbenchError], what: str) -> str:
    """The UTF-8 text of an input file (run, attack, config, manifest), or one clear error.

    ``error`` is the exception type to raise (e.g. :class:`~shieldbench.errors.RunError`);
    its message names the file and says what went wrong: missing, not a file,
    unreadable, or not UTF-8 (with the line and byte offset).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {what} not found (no such file)") from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path}:{line}: not a {what}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at"
            f" offset {exc.start})"
        ) from None
