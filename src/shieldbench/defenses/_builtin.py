"""Imports every built-in defense module so that its plugins register.

One import per module; each module registers its own plugins with
``shieldbench.registry.defenses.register``. Every one of them lives in a family
sub-package (``rules``, ``models``, ``adapters``, ``remote``, ``compose``).
"""

# ruff: noqa: F401  (imported for their side effect: registering plugins)
from __future__ import annotations

import shieldbench.defenses.adapters._python_spec  # python:MODULE:ATTRIBUTE
import shieldbench.defenses.adapters._third_party  # nanoguard, guardify, ...
import shieldbench.defenses.compose._combinators  # any, all, vote, fuse
import shieldbench.defenses.compose._preprocess  # preprocess
import shieldbench.defenses.compose._recommended  # recommended
import shieldbench.defenses.compose._routing  # tiered, dual
import shieldbench.defenses.compose._wrappers  # fail_closed, fail_open, dedup
import shieldbench.defenses.models._embedding_lr  # embedding-lr
import shieldbench.defenses.models._hf  # hf
import shieldbench.defenses.models._onnx  # onnx
import shieldbench.defenses.models._semantic  # semantic
import shieldbench.defenses.models._shift  # topic-shift
import shieldbench.defenses.models.shieldguard._defense  # shieldguard
import shieldbench.defenses.models.shieldguard._pipeline  # recommended-next
import shieldbench.defenses.remote._http  # http
import shieldbench.defenses.remote._llm  # llm, openai
import shieldbench.defenses.rules._pattern  # pattern
