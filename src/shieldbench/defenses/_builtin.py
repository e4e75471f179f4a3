"""Imports every built-in defense module so that its plugins register.

One import per module; each module registers its own plugins with
``shieldbench.registry.defenses.register``.
"""

from __future__ import annotations
