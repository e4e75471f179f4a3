"""The JSON report: strict JSON, versioned, valid against the shipped schema."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from typing import Any

import pytest

from shieldbench.attacks import AttackResult
from shieldbench.metrics import compare_runs, summarize
from shieldbench.reports import (
    REPORT_KIND,
    REPORT_SCHEMA_VERSION,
    Recommendation,
    Report,
    build_report,
    render_json,
    report_schema,
)
from shieldbench.types import Run, Sample

from .conftest import make_run

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (dev extra) is not installed")


def _strict_loads(text: str) -> Any:
    def refuse(name: str) -> float:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _validate(data: Any) -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(data)


@pytest.fixture(scope="module")
def reports(
    run_a: Run, run_b: Run, samples: list[Sample], attack_result: AttackResult
) -> dict[str, Report]:
    mixed = make_run(samples, spec="exclude-me", run_id="r-x", policy="exclude", error_every=9)
    return {
        "run": build_report([run_a]),
        "benchmark": build_report([run_a, run_b, mixed]),
        "comparison_ni": build_report(
            [run_a, run_b], comparison=compare_runs([run_a, run_b], margin=0.05)
        ),
        "attack": build_report([], attack=attack_result),
        "composites": build_report(
            [make_run(samples, details="tiered"), make_run(samples, spec="d", details="dual")]
        ),
        "no_scores": build_report([make_run(samples, scores=False)]),
    }


@pytest.mark.parametrize(
    "name", ["run", "benchmark", "comparison_ni", "attack", "composites", "no_scores"]
)
@pytest.mark.slow
def test_every_report_validates_against_the_schema(reports: dict[str, Report], name: str) -> None:
    text = render_json(reports[name])
    data = _strict_loads(text)  # no NaN / Infinity anywhere
    assert list(data)[:2] == ["schema_version", "kind"]
    assert data["schema_version"] == REPORT_SCHEMA_VERSION
    assert data["kind"] == REPORT_KIND
    _validate(data)


def test_json_holds_everything_the_other_views_render(
    reports: dict[str, Report], run_a: Run
) -> None:
    data = json.loads(render_json(reports["benchmark"]))
    run = data["runs"][0]
    assert run["summary"] == json.loads(json.dumps(summarize(run_a).to_dict()))
    assert run["defense"]["spec"] == run_a.defense.spec
    assert run["dataset"]["content_hash"] == run_a.dataset.content_hash
    assert run["config"]["error_policy"] == "fail_closed"
    assert run["environment"] == dict(run_a.environment)
    assert run["curves"]["roc"]["fpr"][0] == 0.0
    assert sum(run["latency_histogram"]["counts"]) == run["summary"]["operations"]["latency"]["n"]
    assert run["worst_case"]["bypasses"]
    assert data["groups"][0]["comparison"] is None  # mixed error policies: not compared
    assert "error polic" in data["groups"][0]["comparison_note"]
    compared = json.loads(render_json(reports["comparison_ni"]))["groups"][0]["comparison"]
    assert compared["kind"] == "shieldbench.comparison"
    assert compared["non_inferiority"]
    assert data["recommendations"]
    # Hostile texts are data: carried verbatim (JSON escaping is the json module's job).
    texts = [e["text"] for r in data["runs"] for e in r["worst_case"]["bypasses"]]
    assert any("<script>" in t for t in texts)


def test_attack_json_is_the_attack_result_unchanged(
    reports: dict[str, Report], attack_result: AttackResult
) -> None:
    data = json.loads(render_json(reports["attack"]))
    assert data["scope"] == "attack"
    assert data["runs"] == []
    assert data["attack"] == json.loads(json.dumps(attack_result.to_dict()))
    assert AttackResult.from_dict(data["attack"]) == attack_result


def _mutations(good: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    bad = copy.deepcopy(good)
    del bad["kind"]
    out.append(("missing kind", bad))
    bad = copy.deepcopy(good)
    bad["schema_version"] = 2
    out.append(("future version", bad))
    bad = copy.deepcopy(good)
    bad["runs"][0]["summary"]["rates"]["block_rate"]["value"] = 1.5
    out.append(("rate above 1", bad))
    bad = copy.deepcopy(good)
    bad["runs"][0]["worst_case"]["bypasses"][0]["kind"] = "miss"
    out.append(("unknown example kind", bad))
    bad = copy.deepcopy(good)
    bad["recommendations"][0]["priority"] = "urgent"
    out.append(("unknown priority", bad))
    bad = copy.deepcopy(good)
    bad["runs"][0]["surprise"] = 1
    out.append(("unknown key in a closed object", bad))
    bad = copy.deepcopy(good)
    bad["runs"][0]["errors"]["total"] = -1
    out.append(("negative count", bad))
    bad = copy.deepcopy(good)
    bad["generated_at"] = "yesterday"
    out.append(("not a date-time", bad))
    return out


@pytest.mark.slow
def test_the_schema_rejects_broken_reports(reports: dict[str, Report]) -> None:
    good = json.loads(render_json(reports["run"]))
    _validate(good)
    for what, bad in _mutations(good):
        errors = list(jsonschema.Draft202012Validator(report_schema()).iter_errors(bad))
        if what == "not a date-time":
            assert errors, "the schema accepted a report with a malformed date"
        assert errors, f"the schema accepted a report with {what}"


def test_render_json_refuses_nan_rather_than_writing_invalid_json(run_a: Run) -> None:
    report = build_report([run_a])
    bad = Recommendation("info", "test", "x", "a NaN in the evidence", {"value": math.nan})
    with pytest.raises(ValueError, match="JSON compliant"):
        render_json(replace(report, recommendations=(bad,)))


def test_schema_is_a_fresh_copy_each_time() -> None:
    a = report_schema()
    a["title"] = "changed"
    assert report_schema()["title"] == "shieldbench report"
