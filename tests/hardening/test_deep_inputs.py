"""Deeply nested inputs end in one line and exit 2, never a RecursionError traceback.

A spec nests brackets at most :data:`~shieldbench.spec.MAX_SPEC_DEPTH` deep; a data
record's field nests lists/objects at most
:data:`~shieldbench.datasets._records.MAX_FIELD_DEPTH` deep (a JSON line so deep the
parser itself gives up is refused the same way, naming the file and line). The
property tests walk the depth across the limit and far past the interpreter's
recursion limit; the CLI tests run the real ``main()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shieldbench.datasets import load_dataset
from shieldbench.datasets._records import MAX_FIELD_DEPTH
from shieldbench.defenses import build_defense
from shieldbench.errors import DatasetError, SpecError
from shieldbench.spec import MAX_SPEC_DEPTH, parse_spec

from .conftest import CliResult


def nested_spec(depth: int, combinator: str = "any") -> str:
    spec = "pattern"
    for _ in range(depth):
        spec = f"{combinator}({spec}, pattern)"
    return spec


def nested_value(depth: int, shape: str) -> str:
    opens = [shape[i % len(shape)] for i in range(depth)]
    inner = "".join('{"k": ' if o == "{" else "[" for o in opens)
    return inner + "1" + "".join("}" if o == "{" else "]" for o in reversed(opens))


@settings(max_examples=40, deadline=None)
@given(
    depth=st.integers(1, 3000) | st.integers(28, 36),
    combinator=st.sampled_from(["any", "all", "fail_closed"]),
)
def test_spec_depth_is_bounded(depth: int, combinator: str) -> None:
    spec = nested_spec(depth, combinator)
    if depth <= MAX_SPEC_DEPTH:
        assert parse_spec(spec).name == combinator
        return
    with pytest.raises(SpecError, match=rf"nest more than {MAX_SPEC_DEPTH} levels") as caught:
        build_defense(spec)
    assert len(str(caught.value)) < 300  # names the spec by its start, not 3,000 levels


def test_a_spec_at_the_limit_still_builds_and_one_more_level_does_not() -> None:
    assert build_defense(nested_spec(MAX_SPEC_DEPTH)).name
    with pytest.raises(SpecError, match="nest more than"):
        build_defense(nested_spec(MAX_SPEC_DEPTH + 1))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    depth=st.integers(1, 3000) | st.integers(60, 68), shape=st.sampled_from(["[", "{", "[{", "{{["])
)
def test_data_field_depth_is_bounded(tmp_path: Path, depth: int, shape: str) -> None:
    path = tmp_path / "deep.jsonl"
    fine = json.dumps({"text": "hello", "label": "benign"})
    deep = '{"text": "hi", "label": "benign", "meta": ' + nested_value(depth, shape) + "}"
    path.write_text(f"{fine}\n{deep}\n", encoding="utf-8")
    if depth <= MAX_FIELD_DEPTH:
        assert len(load_dataset(f"jsonl:{path}")) == 2
        return
    with pytest.raises(DatasetError) as caught:
        load_dataset(f"jsonl:{path}")
    message = str(caught.value)
    assert f"{path}:2" in message  # the file and the line
    assert str(MAX_FIELD_DEPTH) in message
    if "nest more than" in message:
        assert "'meta'" in message  # and the field, when the line could be read


def test_cli_spec_nested_300_deep_exits_2(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "-d", nested_spec(300), "-D", "builtin:smoke", "--no-store",
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.code == 2, result.text
    assert "Traceback" not in result.text
    assert f"nest more than {MAX_SPEC_DEPTH} levels deep" in result.text


@pytest.mark.parametrize("depth", [500, 5000])
def test_cli_data_field_nested_deep_exits_2(
    cli: Callable[..., CliResult], tmp_path: Path, depth: int
) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text(
        '{"text": "hi", "label": "benign", "meta": ' + nested_value(depth, "[") + "}\n",
        encoding="utf-8",
    )
    result = cli("run", "-d", "pattern", "-D", f"jsonl:{data}", "--no-store",
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.code == 2, result.text
    assert "Traceback" not in result.text
    assert f"{data}:1" in result.text
    assert (
        f"limit is {MAX_FIELD_DEPTH}" in result.text or f"{MAX_FIELD_DEPTH} levels" in result.text
    )
