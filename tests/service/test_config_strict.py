"""``serve.yaml`` is type-checked strictly at start (issue 31, item 5).

Every key, including each ``alerts`` key, refuses a value of the wrong type (no
coercion: ``"false"`` is not a boolean, ``"x"`` not a number, ``123`` not a path)
with a :class:`ConfigError` naming the key and the value; ``shieldbench serve``
exits 2 with that one line before it opens a port. The property test draws wrongly
typed values for every key of the records (so a key added later is covered) and an
oracle, written from the annotations independently of the implementation, says
which values are of the right type.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from guardtest import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.errors import ConfigError
from shieldbench.service import AlertThresholds, ServeConfig, load_config

SERVE_HINTS = typing.get_type_hints(ServeConfig)
ALERT_HINTS = typing.get_type_hints(AlertThresholds)


def of_type(hint: Any, value: Any) -> bool:
    """Whether ``value`` (as YAML loads it) is of the annotated type, strictly."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return isinstance(value, str) and value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(of_type(arg, value) for arg in typing.get_args(hint))
    if origin is tuple:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if hint is type(None):
        return value is None
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float)
    if hint is str:
        return type(value) is str
    raise AssertionError(f"the oracle does not know {hint!r}: teach it")


VALUES = st.one_of(
    st.booleans(),
    st.none(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
    st.sampled_from(["false", "no", "off", "true", "1", "0.5", "enforce"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=4), st.booleans()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _as_read(value: Any) -> Any:
    """The value as YAML gives it back (a mapping's keys come back sorted)."""
    return yaml.safe_load(yaml.safe_dump(value))


def _load(tmp: Path, data: dict[str, Any]) -> ServeConfig:
    path = tmp / "serve.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(path)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=st.sampled_from(sorted(set(SERVE_HINTS) - {"alerts"})), value=VALUES)
def test_every_key_refuses_a_wrongly_typed_value(tmp_path: Path, key: str, value: Any) -> None:
    if of_type(SERVE_HINTS[key], value):
        return
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, {key: value})
    message = str(caught.value)
    assert f"{key} = {_as_read(value)!r}" in message, message
    assert str(tmp_path / "serve.yaml") in message


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=st.sampled_from(sorted(ALERT_HINTS)), value=VALUES)
def test_every_alerts_key_refuses_a_wrongly_typed_value(
    tmp_path: Path, key: str, value: Any
) -> None:
    if of_type(ALERT_HINTS[key], value):
        return
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, {"alerts": {key: value}})
    assert f"alerts.{key} = {_as_read(value)!r}" in str(caught.value)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUES.filter(lambda v: not isinstance(v, dict)))
def test_alerts_must_be_a_mapping(tmp_path: Path, value: Any) -> None:
    with pytest.raises(ConfigError, match="alerts = "):
        _load(tmp_path, {"alerts": value})


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_the_defaults_written_out_load_back_unchanged(tmp_path: Path) -> None:
    # Strict does not mean unusable: every key of the right type is taken as written.
    written = _plain(dataclasses.asdict(ServeConfig()))
    assert set(written) == set(SERVE_HINTS)
    assert _load(tmp_path, written) == ServeConfig()
    whole = {"timeout_s": 3, "retention_days": 7, "alerts": {"window_s": 60, "max_fpr": 0}}
    config = _load(tmp_path, whole)  # a whole number is a number
    assert (config.timeout_s, config.alerts.window_s) == (3, 60)


def test_the_library_record_is_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"fail_open = 'false'"):
        ServeConfig(fail_open="false")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"window_s = 'x'"):
        AlertThresholds(window_s="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"timeout_s = '5'"):
        ServeConfig().with_overrides(timeout_s="5")
    given = ["system"]
    assert ServeConfig(trusted_roles=given).trusted_roles == ("system",)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('fail_open: "false"', "fail_open = 'false'"),
        ('store_text: "no"', "store_text = 'no'"),
        ('alerts: {window_s: "x"}', "alerts.window_s = 'x'"),
        ("api_keys_file: 123", "api_keys_file = 123"),
    ],
)
@pytest.mark.slow
def test_serve_exits_2_naming_key_and_value(tmp_path: Path, line: str, named: str) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"defense: pattern\n{line}\n", encoding="utf-8")
    result = cli("serve", "--config", str(config), "--port", "0")
    assert result.returncode == 2, result.stderr
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert "Uvicorn running" not in result.stderr
