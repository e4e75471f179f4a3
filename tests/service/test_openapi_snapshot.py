"""The service's OpenAPI document is a contract: its paths, operations and schemas are
compared, byte for byte and in order, with the snapshot in ``snapshots/openapi.json``.

The snapshot was generated from the application before it was split into routers
(issue 32), so this test is what shows the split changed nothing a client can see.
A deliberate change to the API regenerates it::

    PYTHONPATH=src python tests/service/test_openapi_snapshot.py

and the diff of the snapshot is then part of the change, for review.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shieldbench.service import ServeConfig, build_defenses, create_app

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"


def _document(**config: Any) -> str:
    api_keys = config.pop("api_keys", ())
    serve = ServeConfig(defense="pattern", **config)
    app = create_app(serve, build_defenses(serve), api_keys=api_keys)
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"


def test_the_openapi_document_is_the_snapshot() -> None:
    expected = SNAPSHOT.read_text(encoding="utf-8")
    actual = _document()
    if actual != expected:
        # A readable failure: which paths or schemas differ, before the full text diff.
        old, new = json.loads(expected), json.loads(actual)
        assert list(new["paths"]) == list(old["paths"])
        for path in old["paths"]:
            assert new["paths"][path] == old["paths"][path], path
        assert new["components"] == old["components"]
        assert actual == expected  # the order or the top-level fields changed


@pytest.mark.parametrize(
    "config", [{"max_body_bytes": 4096}, {"mode": "monitor"}, {"api_keys": (b"k",)}]
)
def test_the_document_does_not_depend_on_the_configuration(config: dict[str, Any]) -> None:
    """One document for every deployment: a client generated from it fits any server."""
    assert _document(**config) == SNAPSHOT.read_text(encoding="utf-8")


if __name__ == "__main__":
    SNAPSHOT.write_text(_document(), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
