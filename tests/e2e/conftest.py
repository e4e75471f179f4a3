"""Fixtures for end-to-end tests: the scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _load() -> Any:
    name = "shieldbench_tests_scripted_chat"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).with_name("scripted_chat.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def chat_server() -> Iterator[Any]:
    """A started :class:`ScriptedChat`; stopped after the test."""
    server = _load().ScriptedChat().start()
    try:
        yield server
    finally:
        server.stop()
