"""Metrics and statistics over runs: rates with intervals, paired tests, curves."""

from __future__ import annotations

from shieldbench.metrics._planning import required_sample_size, wilson_half_width

__all__ = ["required_sample_size", "wilson_half_width"]
