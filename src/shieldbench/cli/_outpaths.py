"""Output paths are checked before any work starts: one clean error, exit 2.

Every command that writes (``run``, ``attack``, ``train``, ``datasets mutate``,
``compare --json/--out``, ``report --out``, ``calibrate --json``) calls
:func:`check_out_dir` or :func:`check_out_file` on each output path first, so a
path that is a file where a folder is needed, a folder that cannot be created, an
unwritable place or an existing file (without ``--force``) stops the command
before it loads data, trains or calls a defense, with a
:class:`~shieldbench.errors.ConfigError` naming the option and the path. Nothing is
created by the check itself.

Example:
    >>> import pathlib, tempfile
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> check_out_dir(base / "new" / "folder", option="--out") == base / "new" / "folder"
    True
    >>> _ = (base / "f.txt").write_text("x")
    >>> try:
    ...     check_out_dir(base / "f.txt", option="--out")
    ... except ConfigError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    is a file, not a folder; choose a folder path
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from shieldbench.errors import ConfigError

__all__ = ["check_out_dir", "check_out_file"]


def _writable(folder: Path) -> bool:
    """Whether a file can really be created in ``folder``.

    ``os.access`` alone says yes to root everywhere, even in ``/proc`` or on a
    read-only mount, so an unnamed temporary file is created and removed as a probe.
    """
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _creatable(path: Path, option: str) -> None:
    """``path`` does not exist: its nearest existing ancestor must be a writable folder."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(
            f"{option} {path}: cannot be created, {ancestor} is a file, not a folder;"
            " choose another path"
        )
    if not _writable(ancestor):
        raise ConfigError(
            f"{option} {path}: cannot be created, {ancestor} is not writable; choose another path"
        )


def check_out_dir(path: Path, *, option: str) -> Path:
    """``path`` as a folder to write into: existing and writable, or creatable."""
    try:
        exists = path.exists()
        if exists and not path.is_dir():
            raise ConfigError(f"{option} {path}: is a file, not a folder; choose a folder path")
        if exists and not _writable(path):
            raise ConfigError(f"{option} {path}: the folder is not writable; choose another")
        if not exists:
            _creatable(path, option)
    except OSError as exc:  # e.g. a name too long, a path through a file
        raise ConfigError(f"{option} {path}: not usable ({exc.strerror or exc})") from None
    return path


def check_out_file(path: Path, *, option: str, force: bool | None = None) -> Path:
    """``path`` as a file to write: its folder writable or creatable, not a folder itself.

    ``force``: ``None`` overwrites an existing file silently (outputs that are meant
    to be refreshed, like ``--json``); ``False`` refuses one (pass ``--force``);
    ``True`` overwrites.
    """
    try:
        if path.is_dir():
            raise ConfigError(f"{option} {path}: is a folder, not a file; name a file")
        if path.exists():
            if force is False:
                raise ConfigError(
                    f"{option} {path}: the file exists; pass --force to overwrite it,"
                    " or choose another path"
                )
            if not os.access(path, os.W_OK) or not _writable(path.parent):
                raise ConfigError(f"{option} {path}: not writable; choose another path")
        elif path.parent.exists():
            check_out_dir(path.parent, option=option)
        else:
            _creatable(path.parent, option)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: not usable ({exc.strerror or exc})") from None
    return path
