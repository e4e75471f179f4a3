"""Imports every built-in defense module so that its plugins register.

One import per module; each module registers its own plugins with
``shieldbench.registry.defenses.register``.
"""

from __future__ import annotations

# ruff: noqa: F401  (imported for their side effect: registering plugins)
import shieldbench.defenses._adapters  # nanoguard, guardify, injectionshield, promptlint, ...
import shieldbench.defenses._combinators  # any, all, vote, fuse
import shieldbench.defenses._embedding_lr  # embedding-lr
import shieldbench.defenses._http  # http
import shieldbench.defenses._llm  # llm, openai
import shieldbench.defenses._preprocess  # preprocess
import shieldbench.defenses._python_spec  # python:MODULE:ATTRIBUTE
import shieldbench.defenses._recommended  # recommended
import shieldbench.defenses._routing  # tiered, dual
import shieldbench.defenses._semantic  # semantic
import shieldbench.defenses._shift  # topic-shift
import shieldbench.defenses.shieldguard._defense  # shieldguard
import shieldbench.defenses._wrappers  # fail_closed, fail_open, dedup
import shieldbench.defenses.pattern  # pattern
