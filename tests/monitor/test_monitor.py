"""``shieldbench monitor``: a defense made worse between two cycles raises one alert,
posted to a real loopback webhook and stored; bad configs exit 2; Ctrl-C is clean."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests._webhook import WebhookReceiver
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.monitor import load_monitor_config, parse_duration
from shieldbench.store import open_store

runner = CliRunner()


@pytest.fixture
def drifting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``python:drifting_guard:build``: the pattern defense, which lets every other
    attack it would block through once the flag file exists."""
    flag = tmp_path / "worse.flag"
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "drifting_guard.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import zlib

            from shieldbench.defenses import build_defense
            from shieldbench.types import Verdict

            FLAG = {str(flag)!r}


            class Guard:
                name = "drifting"

                def __init__(self):
                    self.inner = build_defense("pattern")

                def check(self, text):
                    verdict = self.inner.check(text)
                    worse = os.path.exists(FLAG) and zlib.crc32(text.encode()) % 2 == 0
                    return Verdict(False, 0.0) if verdict.blocked and worse else verdict


            def build():
                return Guard()
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(pkg))
    yield flag
    sys.modules.pop("drifting_guard", None)


def _config(tmp_path: Path, hook: str, **extra: str) -> Path:
    path = tmp_path / "monitor.yaml"
    lines = [
        "name: nightly",
        "defenses: ['python:drifting_guard:build']",
        "suites: [{name: core, dataset: 'builtin:core'}]",
        "run: {warmup: 0}",
        "compare: {last: true}",
        "cooldown: 1h",
        # latency on a shared test machine is noise: only the block rate may alert here
        "min_effect: {latency_ratio: 1000}",
        f"sinks: {{terminal: true, webhook: {{url: '{hook}', retries: 1, backoff_s: 0.05}}}}",
        *(f"{k}: {v}" for k, v in extra.items()),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_defense_made_worse_raises_one_alert_posted_and_stored(
    tmp_path: Path, drifting: Path, webhook: WebhookReceiver
) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    config = _config(tmp_path, webhook.url)
    args = ["monitor", "--config", str(config), "--once", "--db", db]
    first = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "nothing earlier to compare with yet" in first.output
    drifting.touch()  # the defense gets worse
    second = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert second.exit_code == 1, second.output
    (body,) = webhook.bodies
    assert body["key"] == "nightly:python:drifting_guard:build@core:block_rate:last"
    assert body["text"].startswith("[critical] python:drifting_guard:build on core: block rate")
    assert body["details"]["p_value"] < 0.05
    assert body["details"]["effect"] >= 0.05
    store = open_store(db)
    try:
        (stored,) = store.alerts(source="monitor")
        assert stored.alert.key == body["key"]
        assert stored.delivered["webhook:127.0.0.1"]["ok"] is True
        assert stored.alert.run_id is not None
        runs = store.runs(tags={"monitor": "nightly", "suite": "core"})
        assert len(runs) == 2
        assert stored.alert.run_id == runs[-1].id
    finally:
        store.close()
    drifting.unlink()  # fixed: better than the last run, no alert
    assert runner.invoke(app, args).exit_code == 0
    drifting.touch()  # worse again: the same alert, within the cool-down
    fourth = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert fourth.exit_code == 1, fourth.output
    assert "cooling down, not sent again" in fourth.output
    assert len(webhook.bodies) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("defenses: [pattern]\nsuites: [{dataset: 'builtin:smoke'}]\ncolour: red\n",
         "unknown key 'colour'"),
        ("defenses: [pattern]\nsuites: [{dataset: 'builtin:smoke', size: 3}]\n",
         "suites[0]: unknown key 'size'"),
        ("defenses: [pattern]\nsuites: [{dataset: 'builtin:smoke'}]\ncooldown: soon\n",
         "cooldown 'soon': write a duration"),
        ("defenses: [pattern]\nsuites: []\n", "'suites' must be a non-empty list"),
        ("defenses: [pattern\n", "not valid YAML"),
        ("defenses: [pattern]\nsuites: [{dataset: 'builtin:smoke'}]\n"
         "sinks: {webhook: {url: 'ftp://x'}}\n", "webhook.url: an http(s) URL is required"),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_bad_configs_exit_2_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "from shieldbench.cli import main; main()", "monitor",
         "--config", str(path), "--once", "--db", str(tmp_path / "h.db")],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(path) in done.stderr
    assert message in done.stderr
    assert not (tmp_path / "h.db").exists()  # nothing written


def test_config_parsing() -> None:
    assert parse_duration("24h").total_seconds() == 86400
    assert parse_duration("1d12h").total_seconds() == 1.5 * 86400
    example = Path(__file__).parents[2] / "configs" / "monitor.yaml"
    cfg = load_monitor_config(example)
    assert cfg.defenses
    assert cfg.compare.last


@pytest.mark.slow
def test_every_runs_until_ctrl_c_and_finishes_the_cycle(tmp_path: Path) -> None:
    config = tmp_path / "m.yaml"
    config.write_text(
        "defenses: [pattern]\nsuites: [{name: smoke, dataset: 'builtin:smoke'}]\n"
        "run: {warmup: 0}\nsinks: {terminal: true}\n",
        encoding="utf-8",
    )
    db = tmp_path / "h.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from shieldbench.cli import main; main()", "monitor",
         "--config", str(config), "--every", "1s", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert proc.stdout is not None
    seen = 0
    deadline = time.monotonic() + 120
    while seen < 2 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen += "runs stored" in line
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "monitor stopped" in out
    store = open_store(str(db))
    try:
        assert len(store.runs()) >= 2
    finally:
        store.close()
