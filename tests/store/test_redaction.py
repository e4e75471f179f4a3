"""No secret a defense or a server echoes reaches the history database, nor its export.

Issue 31 item 6: a guard server echoed the bearer token it was sent; the run file held
``Bearer <redacted>`` but ``outcomes.verdict_label`` held the raw token, and ``history
export`` wrote it out. The promise attacked here: redaction happens before anything
is stored, on every path into the store. The secrets planted: the registered
credential (the bearer token, bare and in its header form) and credential shapes that
were never registered (an AWS access key id, an AWS secret key assignment, an
``sk-`` API key), in every string field a defense or a server can fill (label,
reasons, details, error texts, the end-to-end record), in alerts and in the guard
service's audit records; the database's file bytes (WAL included) and ``history
export`` must not hold any of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import string
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench._redact import register_secret
from shieldbench.alerts import Alert
from shieldbench.runio import run_to_dict
from shieldbench.service import AuditStore
from shieldbench.service._writer import AuditWriter
from shieldbench.store import open_store
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict

SRC = Path(__file__).resolve().parents[2] / "src"


def _token(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


TOKEN = "tok" + _token(29)  # registered: what the defense sends in its header
AWS_ID = "AKIA" + _token(16, string.ascii_uppercase + string.digits)
AWS_SECRET = _token(40)
SK = "sk-" + _token(32)
#: What must never be stored (each planted in a form a server would write it).
PLANTED = {
    "bearer": f"Bearer {TOKEN}",
    "bare": TOKEN,
    "aws_id": AWS_ID,
    "aws_secret": f"aws_secret_access_key={AWS_SECRET}",
    "sk": SK,
}
NEEDLES = (TOKEN, AWS_ID, AWS_SECRET, SK)


def _db_bytes(db_file: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db_file.parent.glob(db_file.name + "*")))


def _leaks(data: bytes) -> list[str]:
    return [n for n in NEEDLES if n.encode() in data or json.dumps(n).encode() in data]


# -- the reproduction: `run` against a guard that echoes, then `history export` ------


class _Echo(BaseHTTPRequestHandler):
    """A guard API that echoes its Authorization header and an AWS key everywhere."""

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"]
        auth = self.headers.get("Authorization", "")
        bare = auth.removeprefix("Bearer ")
        echo = f"auth={auth} bare={bare} key {AWS_ID} aws_secret_access_key={AWS_SECRET} {SK}"
        if "FAIL" in text:
            self._send(500, f"denied: {echo}".encode())
        elif "GARBLE" in text:
            self._send(200, f"not json {echo}".encode())
        else:
            verdict = {"blocked": "attack" in text, "score": 0.5, "label": echo[:190]}
            verdict["reasons"] = [f"header was {auth}", f"bare {bare}", AWS_ID, SK, echo]
            self._send(200, json.dumps(verdict).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_guard() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/check"
    server.shutdown()
    server.server_close()


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "from shieldbench.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "300", **env},
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_guard_that_echoes_secrets_leaves_none_in_the_history_or_its_export(
    echo_guard: str, tmp_path: Path
) -> None:
    data = tmp_path / "d.jsonl"
    texts = [
        ("an attack", "attack"),
        ("hello", "benign"),
        ("FAIL me", "attack"),
        ("GARBLE this", "benign"),
        ("another attack", "attack"),
    ]
    rows = [{"id": f"s{i}", "text": t, "label": label} for i, (t, label) in enumerate(texts)]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    db_file = tmp_path / "h.db"
    spec = f"http({echo_guard}, header.Authorization=Bearer env:ECHO_TOKEN, retries=0)"
    env = {"ECHO_TOKEN": TOKEN}
    done = _cli(
        "run", "-d", spec, "-D", f"jsonl:{data}", "--out", str(tmp_path / "out"),
        "--db", f"sqlite:///{db_file}", "--max-error-rate", "1", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    stored = _db_bytes(db_file)
    assert b"<redacted>" in stored  # the echoes were stored, masked
    assert _leaks(stored) == []
    listed = _cli("history", "--db", f"sqlite:///{db_file}", "--json", env={})
    (run,) = json.loads(listed.stdout)
    exported = tmp_path / "exported.json"
    out = _cli("history", "export", run["id"], "--out", str(exported), "--db", str(db_file), env={})
    assert out.returncode == 0, out.stdout + out.stderr
    assert _leaks(exported.read_bytes()) == []
    outcomes = json.loads(exported.read_text())["outcomes"]
    assert any(o.get("error") for o in outcomes)  # the error paths were exercised
    assert any((o.get("verdict") or {}).get("reasons") for o in outcomes)


# -- every field, every path, planted at random points (property-based) ----------------

_FILLER = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)


@st.composite
def _planted(draw: st.DrawFn) -> str:
    """A message with a planted secret at a random point (a space either side: a
    secret glued to letters is not one a reader could tell)."""
    secret = PLANTED[draw(st.sampled_from(sorted(PLANTED)))]
    return f"{draw(_FILLER)} {secret} {draw(_FILLER)}"


def _run(label: str, reasons: list[str], detail: str, error: str, e2e: str) -> Run:
    samples = (Sample("a", "attack text", "attack", "x"), Sample("b", "hi", "benign", "x"))
    t0 = datetime(2026, 5, 1, tzinfo=UTC)
    return Run(
        f"r-{secrets.token_hex(4)}",
        DefenseInfo("pattern", "pattern", "1"),
        DatasetInfo("jsonl:d", "sha256:x", 2),
        RunConfig(),
        samples,
        (
            Outcome("a", Verdict(True, 0.9, label, tuple(reasons), {"why": detail}), "ok"),
            Outcome("b", None, "error", error=error, end_to_end={"answer": e2e}),
        ),
        t0,
        t0 + timedelta(seconds=1),
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    label=_planted(),
    reasons=st.lists(_planted(), min_size=1, max_size=3),
    detail=_planted(),
    error=_planted(),
    e2e=_planted(),
    alert=_planted(),
)
@pytest.mark.slow
def test_no_planted_secret_reaches_the_store_on_any_path(
    tmp_path_factory: pytest.TempPathFactory,
    label: str,
    reasons: list[str],
    detail: str,
    error: str,
    e2e: str,
    alert: str,
) -> None:
    register_secret(TOKEN)  # as building the defense above does, in its own process
    db_file = tmp_path_factory.mktemp("redact") / "h.db"
    store = open_store(f"sqlite:///{db_file}")
    try:
        run = _run(label[:200], reasons, detail, error, e2e)
        store.add_run(run, tags={"note": alert[:900]}, git=(None, None))
        store.add_alert(Alert("k", alert[:400], alert, details={"echo": alert}))
        back = store.get_run(run.id)
    finally:
        store.close()
    audit = AuditStore(f"sqlite:///{db_file}")
    try:
        body = {"kind": "decision", "id": "d1", "created": 1.0, "decision": "block"}
        audit.append([{**body, "label": label, "reasons": reasons, "error": error}])
        writer = AuditWriter(audit, period_s=0.01)
        try:
            writer.submit({**body, "id": "d2", "label": label, "reasons": reasons})
            asyncio.run(writer.flushed())
        finally:
            writer.close()
    finally:
        audit.close()
    assert _leaks(_db_bytes(db_file)) == []
    assert _leaks(json.dumps(run_to_dict(back)).encode()) == []
