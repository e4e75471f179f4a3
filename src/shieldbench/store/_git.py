"""The git commit and branch of the working directory, when it is inside a repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["git_info"]


def _git(args: list[str], cwd: Path) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def git_info(cwd: Path | None = None) -> tuple[str | None, str | None]:
    """``(commit, branch)`` of the repository holding ``cwd``; ``(None, None)`` outside
    one (or without git). A detached HEAD has no branch.

    Example:
        >>> import tempfile
        >>> git_info(Path(tempfile.mkdtemp()))
        (None, None)
    """
    folder = cwd or Path.cwd()
    commit = _git(["rev-parse", "HEAD"], folder)
    if commit is None:
        return None, None
    branch = _git(["symbolic-ref", "--short", "-q", "HEAD"], folder)
    return commit, branch
