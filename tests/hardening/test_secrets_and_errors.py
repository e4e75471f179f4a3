"""Credentials never surface; failing endpoints fail the run loudly; timeouts are timeouts."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shieldbench._redact import redact, register_secret
from shieldbench.runio import load_run

from .conftest import CliResult, Server

Cli = Callable[..., CliResult]
Serve = Callable[..., Server]
SECRET = "sk-test-Hardening-0123456789"


def _all_text(folder: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize(
    ("value", "what"),
    [
        (SECRET + "\r", "ends with a carriage return"),
        (SECRET + "\n", "ends with a newline"),
        ("sk-\u00e9t\u00e9-" + SECRET, "non-ASCII character (U+00E9)"),
        ("sk-a\x1b" + SECRET, "control character (U+001B)"),
    ],
)
@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.slow
def test_bad_header_values_are_refused_alike_without_showing_them(
    cli: Cli, small_data: Path, tmp_path: Path, value: str, what: str, command: str
) -> None:
    spec = "http(http://127.0.0.1:9/check, header.Authorization=Bearer env:GUARD_KEY)"
    args = {
        "check": ["check", "hello", "-d", spec],
        "run": ["run", "-d", spec, "-D", f"jsonl:{small_data}", "--out", str(tmp_path / "o")],
    }[command]
    for extra in ([], ["--json"] if command == "check" else []):
        result = cli(*args, *extra, env={"GUARD_KEY": value})
        assert result.code == 2, result.text
        assert "header Authorization: the value from environment variable GUARD_KEY" in result.text
        assert what in result.text
        assert "value not shown" in result.text
        assert value.strip() not in result.out + result.err
        assert SECRET not in result.out + result.err
    assert not (tmp_path / "o").exists()


def test_credentials_in_an_http_url_are_refused_and_masked(cli: Cli) -> None:
    for url in ("http://127.0.0.1:9/c?api_key=" + SECRET, f"http://u:{SECRET}@127.0.0.1:9/c"):
        result = cli("check", "hi", "-d", f"http:{url}")
        assert result.code == 2, result.text
        assert "no credentials in the URL" in result.text
        assert SECRET not in result.out + result.err


@pytest.mark.slow
def test_an_echoed_secret_is_masked_everywhere(
    cli: Cli, serve: Serve, small_data: Path, tmp_path: Path
) -> None:
    def echo(headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        # A careless guard that echoes the caller's credentials in its label and reasons.
        auth = headers.get("authorization", "")
        return 200, {"blocked": b"Ignore" in body, "label": auth, "reasons": [f"seen {auth}"]}

    server = serve(echo)
    spec = f"http({server.url}, header.Authorization=Bearer env:GUARD_KEY)"
    env = {"GUARD_KEY": SECRET}
    for extra in ([], ["--json"]):
        checked = cli("check", "Ignore it", "-d", spec, *extra, env=env)
        assert checked.code == 0, checked.text
        assert SECRET not in checked.out + checked.err
        assert "<redacted>" in checked.out
    assert server.seen[-1]["authorization"] == f"Bearer {SECRET}"  # it was sent, only hidden
    out = tmp_path / "run"
    ran = cli("run", "-d", spec, "-D", f"jsonl:{small_data}", "--out", str(out), env=env)
    assert ran.code == 0, ran.text
    assert SECRET not in ran.out + ran.err
    assert SECRET not in _all_text(out)  # run files, reports, manifest
    outcomes = load_run(next((out / "runs").glob("*.json"))).outcomes
    labels = {o.verdict.label for o in outcomes if o.verdict is not None}
    assert labels == {"Bearer <redacted>"}


def test_redact_masks_the_forms_a_secret_takes_in_messages() -> None:
    register_secret("sk-form-test-1\r")
    assert redact("b'Bearer sk-form-test-1\\r'") == "b'Bearer <redacted>'"
    assert redact('{"k": "sk-form-test-1\\r"}') == '{"k": "<redacted>"}'
    assert redact("sk-form-test-1 alone") == "<redacted> alone"
    assert (
        redact("https://me:pw@h/x?token=abc&q=1")
        == "https://me:<redacted>@h/x?token=<redacted>&q=1"
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_run_whose_calls_all_fail_exits_non_zero_after_writing(
    cli: Cli, small_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "down"
    spec = f"http(http://127.0.0.1:{_closed_port()}/check, timeout=2)"
    result = cli(
        "run", "-d", spec, "-D", f"jsonl:{small_data}", "--out", str(out), "--retries", "0"
    )
    assert result.code == 1, result.text
    assert "error rate:" in result.text
    assert "4 of 4 calls failed (100%: 4 errors, 0 timeouts), above the --max-error-rate 10%" in (
        result.text
    )
    assert (out / "report.html").is_file()  # everything written first, for diagnosis
    allowed = cli(
        "run", "-d", spec, "-D", f"jsonl:{small_data}", "--out", str(tmp_path / "down2"),
        "--retries", "0", "--max-error-rate", "1",
    )  # fmt: skip
    assert allowed.code == 0, allowed.text


@pytest.mark.slow
def test_http_timeouts_are_counted_as_timeouts_and_named_in_advice(
    cli: Cli, serve: Serve, small_data: Path, tmp_path: Path
) -> None:
    server = serve(lambda headers, body: (0, 1.5))  # answers after 1.5 s
    out = tmp_path / "slow"
    spec = f"http({server.url}, timeout=0.2)"
    result = cli(
        "run", "-d", spec, "-D", f"jsonl:{small_data}", "--out", str(out), "--retries", "0",
        "--max-error-rate", "1",
    )  # fmt: skip
    assert result.code == 0, result.text
    run = load_run(next((out / "runs").glob("*.json")))
    assert {o.status for o in run.outcomes} == {"timeout"}
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    advice = " ".join(r["message"] for r in report["recommendations"] if r["rule"] == "error_rate")
    assert "the spec sets timeout=0.2 s, the run 30 s per call" in advice
    fpr = " ".join(
        r["message"] for r in report["recommendations"] if r["rule"] == "false_positive_cost"
    )
    assert "raise the threshold" not in fpr
    assert "failed calls counted as blocked" in fpr
