"""One audit record: how it is redacted, serialised, hashed and turned into a row.

:func:`scrub_record` redacts a body before anything else sees it; :func:`canonical`
is the JSON the chain hashes; :func:`audit_row` makes the ``guard_audit`` row (its
query columns are copies of body fields, which ``audit verify`` checks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from shieldbench._redact import has_secrets, mask_all, redact_all
from shieldbench.service._journal import MAIN_CHAIN, JournalLine

__all__ = [
    "GENESIS",
    "MAIN_CHAIN",
    "audit_row",
    "canonical",
    "canonical_bytes",
    "chain_of",
    "scrub_record",
    "utc",
]

GENESIS = "0" * 64


#: The fields of a record that a defense wrote (messages: every credential shape is
#: masked); the others are the service's own or the request's data (registered
#: credentials masked).
_SAID = ("label", "reasons", "error")
_PLAIN = frozenset({int, float, bool})


def scrub_record(body: dict[str, Any]) -> dict[str, Any]:
    """Redact ``body`` in place before it is hashed and journalled (and return it).

    A defense's label, reasons and error (a server may echo the credential it was
    sent, or any key) go through :func:`~shieldbench._redact.redact_all`; the rest
    (text, preview, metadata) through :func:`~shieldbench._redact.mask_all`."""
    for key in _SAID:
        value = body.get(key)
        if value:
            body[key] = redact_all(value)
    if has_secrets():
        for key, value in body.items():
            if key not in _SAID and value is not None and type(value) not in _PLAIN:
                body[key] = mask_all(value)
    return body


def canonical(body: Mapping[str, Any]) -> str:
    """The JSON a record is hashed over: sorted keys, no spaces, UTF-8 kept.

    orjson writes it (~10x faster); what orjson refuses (a lone surrogate, an integer
    over 64 bits) the json module writes, in ASCII (``\\ud800`` escapes: a database
    stores that, not a raw surrogate). The hash covers the stored text, which is never
    re-serialised, so the two need not agree on formatting."""
    return canonical_bytes(body).decode()


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """:func:`canonical` as the UTF-8 bytes the journal writes and the chain hashes."""
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def utc(posix: float) -> datetime:
    """A POSIX time as an aware UTC datetime."""
    return datetime.fromtimestamp(posix, UTC)


def chain_of(body: Mapping[str, Any]) -> str:
    """The chain a record belongs to: its ``chain`` field (:data:`MAIN_CHAIN` when it has
    none: every record written before replicas, and the single SQLite server's)."""
    chain = body.get("chain", MAIN_CHAIN)
    return chain if isinstance(chain, str) else str(chain)


def audit_row(line: JournalLine, body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``guard_audit`` row of a chained record (``body`` is ``line.body`` parsed)."""
    return {
        "chain": chain_of(body),
        "seq": line.seq,
        "id": str(body["id"]),
        "kind": str(body["kind"]),
        "ref": body.get("ref"),
        "created": utc(float(body["created"])),
        "decision": body.get("decision"),
        "body": line.body,
        "prev_hash": line.prev_hash,
        "hash": line.hash,
    }
