"""One training or calibration example (shared by the data modules)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Example"]


@dataclass(frozen=True)
class Example:
    """One training or calibration text: ``label`` 1 = attack."""

    text: str
    label: int
    source: str
