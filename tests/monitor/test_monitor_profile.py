"""``shieldbench monitor`` on an end-to-end suite: the model behind the defense starts
refusing benign prompts between two cycles -> one behavioural-drift alert, posted to a
real loopback webhook and stored; an unchanged model raises none."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests._webhook import WebhookReceiver
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.errors import ConfigError
from shieldbench.monitor import load_monitor_config
from shieldbench.store import open_store

runner = CliRunner()


@pytest.fixture
def chat_server() -> Iterator[Any]:
    """The scripted OpenAI-compatible server of tests/e2e, started on loopback."""
    name = "shieldbench_tests_scripted_chat"  # the module tests/e2e/conftest.py loads too
    module = sys.modules.get(name)
    if module is None:
        path = Path(__file__).parents[1] / "e2e" / "scripted_chat.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    server = module.ScriptedChat().start()
    try:
        yield server
    finally:
        server.stop()


def _config(tmp_path: Path, hook: str, target: str) -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "\n".join(
            [
                "name: e2e",
                "defenses: [none]",
                "suites: [{name: smoke, dataset: 'builtin:smoke'}]",
                "run: {warmup: 0}",
                "compare: {last: true}",
                "cooldown: 1h",
                # latency is noise on a shared machine, and a refusal is also shorter:
                # only the refusal rate is under test here
                "min_effect: {latency_ratio: 1000, profile_length: 1000}",
                f"sinks: {{terminal: true, webhook: {{url: '{hook}', retries: 1}}}}",
                "end_to_end:",
                f"  target: openai:scripted@{target}",
                "  judges: ['refusal(embed=false)', leak]",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.slow
def test_a_model_that_starts_refusing_raises_one_drift_alert(
    tmp_path: Path, chat_server: Any, webhook: WebhookReceiver
) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    config = _config(tmp_path, webhook.url, chat_server.url)
    args = ["monitor", "--config", str(config), "--once", "--db", db]
    env = {"COLUMNS": "220"}
    first = runner.invoke(app, args, env=env)
    assert first.exit_code == 0, first.output
    unchanged = runner.invoke(app, args, env=env)
    assert unchanged.exit_code == 0, unchanged.output
    assert "profile.refused" in unchanged.output  # compared, and nothing drifted
    assert webhook.bodies == []
    chat_server.refuse_all = True  # the model behind the defense changed
    changed = runner.invoke(app, args, env=env)
    assert changed.exit_code == 1, changed.output
    (body,) = webhook.bodies
    assert body["key"] == "e2e:none@smoke:profile.refused:last"
    assert "behavioural profile drifted (refused)" in body["text"]
    details = body["details"]
    assert details["reference"] < 0.5
    assert details["current"] == 1.0
    assert details["p_adjusted"] < 0.05
    assert details["p_value"] == details["p_adjusted"] >= details["p_raw"]
    assert details["n_current"] == details["n_reference"] == 12  # the benign answers
    assert 0 < details["ci_low"] < details["difference"] < details["ci_high"]
    store = open_store(db)
    try:
        (stored,) = store.alerts(source="monitor")
        assert stored.alert.key == body["key"]
        assert stored.delivered["webhook:127.0.0.1"]["ok"] is True
        runs = store.runs(tags={"monitor": "e2e", "suite": "smoke"})
        assert len(runs) == 3
        assert stored.alert.run_id == runs[-1].id
        assert store.get_run(runs[-1].id).end_to_end["profile"]["refused"] == 12
    finally:
        store.close()


@pytest.mark.slow
def test_end_to_end_section_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    base = "defenses: [none]\nsuites: [{dataset: 'builtin:smoke'}]\n"
    path.write_text(base + "end_to_end: {target: 'openai:m@http://127.0.0.1:9/v1'}\n")
    with pytest.raises(ConfigError, match="needs a judge"):
        load_monitor_config(path)
    path.write_text(base + "end_to_end: {target: 'openai:m@http://127.0.0.1:9/v1', jugdes: []}\n")
    with pytest.raises(ConfigError, match="unknown end_to_end key"):
        load_monitor_config(path)
    path.write_text(base + "end_to_end: {target: 'gpt:x', judges: [leak]}\n")
    assert load_monitor_config(path).end_to_end == {"target": "gpt:x", "judges": ("leak",)}
    done = subprocess.run(  # a target that cannot be built: exit 2 before anything runs
        [sys.executable, "-c", "from shieldbench.cli import main; main()", "monitor",
         "--config", str(path), "--once", "--db", str(tmp_path / "h.db")],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no target named 'gpt'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "h.db").exists()  # nothing written
