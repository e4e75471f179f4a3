"""Imports every built-in dataset loader module so that its plugins register."""

from __future__ import annotations
