"""An exclusive lock on an output folder, so two processes never write the same one.

:class:`FolderLock` holds an advisory ``flock`` on ``FOLDER/.shieldbench.lock``
and writes its holder (pid, host, start time) into it. The kernel drops the lock
when the holder dies, however it dies (SIGKILL included), so a lock left behind by
a killed process is *stale* by construction: the next process takes it over and
says so. A live holder makes the second process fail at once with a message
naming it. On release the file is removed (while still locked; a process that
opened the removed file notices and retries on the new one).

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with FolderLock(folder) as lock:
    ...     (folder / ".shieldbench.lock").exists()
    True
    >>> (folder / ".shieldbench.lock").exists()
    False
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from shieldbench.errors import RunError

__all__ = ["LOCK_NAME", "FolderLock"]

LOCK_NAME = ".shieldbench.lock"


class FolderLock:
    """Exclusive use of ``folder`` (created if missing) while the lock is held.

    ``stale`` is set after :meth:`acquire` when a lock left by a dead process was
    taken over: the holder it recorded (pid, host, since).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.stale: dict[str, object] | None = None
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(fd)
                os.close(fd)
                who = (
                    f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}"
                    if holder
                    else "another process"
                )
                raise RunError(
                    f"{self.folder} is in use by another shieldbench run ({who}); wait for it"
                    " to finish, or choose another --out"
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder removed it as we opened it: lock the new one
        previous = _read(fd)
        self.stale = previous or None
        os.ftruncate(fd, 0)
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> dict[str, object]:
    try:
        data = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        value = json.loads(data) if data else {}
    except (OSError, ValueError):
        return {"pid": "?", "host": "?", "since": "?"}
    return value if isinstance(value, dict) else {}
