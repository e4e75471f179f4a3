"""The guard service: a measured defense in front of an application.

``shieldbench serve`` runs :func:`create_app` on uvicorn. The same spec strings that
``run`` benchmarks are served behind a check API (``/v1/check``, ``/v1/check/batch``,
the scores-only ``/v1/score``), LiteLLM's generic guardrail API, and an
OpenAI-compatible screening proxy (``/v1/chat/completions``). Every decision is
appended to a hash-chained audit log in the store (:class:`AuditStore`,
:func:`verify_chain`); reviewers' feedback turns traffic into labelled datasets
(:func:`export_labelled`); ``/v1/stats`` and ``/metrics`` report rolling figures.
The routes are one router per area in :mod:`shieldbench.service.routers` (check,
LiteLLM, proxy, feedback, operations); :func:`create_app` assembles them behind the
bare-ASGI fast path of ``POST /v1/check``.

Example:
    >>> from shieldbench.service import ServeConfig, preprocess
    >>> ServeConfig(defense="pattern").mode
    'enforce'
    >>> preprocess("<bash-stdout>done</bash-stdout>")
    ('done', ('tags',))
"""

from __future__ import annotations

from shieldbench.service._app import create_app
from shieldbench.service._audit import AuditStore, Recovery
from shieldbench.service._config import AlertThresholds, ServeConfig, load_api_keys, load_config
from shieldbench.service._conn import http_protocol
from shieldbench.service._export import export_labelled
from shieldbench.service._gate import MAX_JSON_DEPTH
from shieldbench.service._preprocess import SERVICE_STRIPPERS, preprocess
from shieldbench.service._state import Defenses, build_defenses
from shieldbench.service._verify import ChainProblem, ChainReport, verify_chain

__all__ = [
    "MAX_JSON_DEPTH",
    "SERVICE_STRIPPERS",
    "AlertThresholds",
    "AuditStore",
    "ChainProblem",
    "ChainReport",
    "Defenses",
    "Recovery",
    "ServeConfig",
    "build_defenses",
    "create_app",
    "export_labelled",
    "http_protocol",
    "load_api_keys",
    "load_config",
    "preprocess",
    "verify_chain",
]
