"""``shieldbench calibrate``: a score threshold for a target FPR, checked on other data.

Thin over :func:`~shieldbench.metrics.calibrate_threshold` and
:func:`~shieldbench.metrics.security_utility_tradeoff`. The threshold is chosen on
the benign samples of one run (the lowest observed score threshold whose FPR there
is at most the target, i.e. the highest block rate allowed) and then applied, as is,
to each ``--check`` run: the same defense on other data, e.g. calibrated on one
benign corpus and checked on another, or on real traffic. A text counts as blocked
when its score is ``>= threshold``.

``--max-fpr`` / ``--min-tpr`` state a policy ("FPR at most 2%: the highest block
rate", "block at least 95%: the lowest FPR") and say which threshold meets it, or
that none does and how close the best one gets.

Refusals (one clear line, exit 2): a run whose verdicts carry no score, a
calibration run without benign samples, a check run of another defense spec
(scores of different defenses are on different scales), a target outside [0, 1].
A check run of the same spec but another defense version, or on the very same
data, is accepted with a warning that says why it may mislead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from shieldbench._textio import write_text_atomic
from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._outpaths import check_out_file
from shieldbench.cli._stats import format_rate
from shieldbench.errors import ConfigError
from shieldbench.types import ERROR_POLICIES, Run

if TYPE_CHECKING:
    from shieldbench.metrics import OperatingPoint, TradeOff

__all__ = ["format_threshold"]


def format_threshold(threshold: float) -> str:
    """``0.615``; ``+inf (blocks nothing)`` for the infinite threshold."""
    return f"{threshold:.6g}" if math.isfinite(threshold) else "+inf (blocks nothing)"


def _fraction(option: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        hint = f"; did you mean {value / 100:g}?" if 1.0 < value <= 100.0 else ""
        raise ConfigError(f"{option} must be a rate in [0, 1] (0.01 = 1%), got {value!r}{hint}")
    return value


def _require_scores(run: Run, path: Path) -> None:
    verdicts = [o.verdict for o in run.outcomes if o.verdict is not None]
    if not verdicts:
        raise ConfigError(
            f"{path}: run {run.id!r} has no verdicts (every outcome is an error or timeout);"
            " there are no scores to pick a threshold from"
        )
    missing = sum(v.score is None for v in verdicts)
    if missing:
        raise ConfigError(
            f"{path}: run {run.id!r} of defense {run.defense.spec!r} has {missing} of"
            f" {len(verdicts)} verdicts without a score; a threshold needs a score on every"
            " verdict (a defense that only answers blocked / allowed cannot be calibrated)"
        )


def _require_benign(run: Run, path: Path) -> None:
    if not any(s.label == "benign" for s in run.samples):
        raise ConfigError(
            f"{path}: run {run.id!r} on {run.dataset.spec!r} has no benign samples; the FPR a"
            " threshold is calibrated to is measured on benign samples, so calibrate on a run"
            " over data with benign samples (check runs may be attack-only)"
        )


def _check_compatible(calibration: Run, check: Run, path: Path) -> list[str]:
    """Refuse another defense spec; warnings for another version or the same data."""
    a, b = calibration.defense, check.defense
    if a.spec != b.spec:
        raise ConfigError(
            f"{path}: check run {check.id!r} is of defense {b.spec!r} but the threshold is"
            f" calibrated on {a.spec!r}; scores of different defenses are not on one scale,"
            " so a threshold does not transfer between them (refused)"
        )
    warnings = []
    if a.version != b.version:
        warnings.append(
            f"{path}: defense {b.spec!r} version {b.version} differs from the calibration"
            f" run's {a.version}; its score scale may have moved, which is what this check"
            " measures"
        )
    if calibration.dataset.content_hash == check.dataset.content_hash:
        warnings.append(
            f"{path}: same data as the calibration run ({check.dataset.spec!r}, same content"
            " hash); this is not an independent check"
        )
    return warnings


def _run_info(run: Run, path: Path) -> dict[str, Any]:
    return {
        "file": str(path),
        "run_id": run.id,
        "defense": run.defense.to_dict(),
        "dataset": {"spec": run.dataset.spec, "content_hash": run.dataset.content_hash},
    }


def _points_table(
    title: str, rows: list[tuple[str, Run, Path, OperatingPoint]], limit: float | None
) -> Table:
    t = Table(title=Text(title))
    for name in ("run", "file", "dataset", "block rate (TPR)", "false positive rate", "errors"):
        t.add_column(name, justify="right" if name in {"errors"} else "left")
    if limit is not None:
        t.add_column(f"FPR <= {limit:g}?")
    for role, run, path, p in rows:
        errors = sum(o.status != "ok" for o in run.outcomes)
        cells: list[str | Text] = [
            role,
            Text(str(path)),
            Text(run.dataset.spec),
            format_rate(p.block_rate),
            format_rate(p.false_positive_rate),
            f"{errors} ({run.config.error_policy})" if errors else "0",
        ]
        if limit is not None:
            fpr = p.false_positive_rate.value
            cells.append("–" if fpr is None else ("yes" if fpr <= limit + 1e-12 else "[red]no[/]"))
        t.add_row(*cells)
    return t


def _closest(trade: TradeOff, *, max_fpr: float | None) -> str:
    """How close the best threshold gets when none meets the policy."""
    if max_fpr is not None:
        best = min(
            trade.points,
            key=lambda p: (p.false_positive_rate.value or 0.0, -(p.block_rate.value or 0.0)),
        )
        gap = 100 * ((best.false_positive_rate.value or 0.0) - max_fpr)
        what = f"the lowest FPR any threshold reaches is {format_rate(best.false_positive_rate)}"
        return (
            f"{what} (threshold {format_threshold(best.threshold)}), {gap:.1f} points above"
            " the limit: errors on benign samples count as blocked under fail_closed"
            " (try --policy exclude to see them apart)"
        )
    best = max(
        trade.points,
        key=lambda p: (p.block_rate.value or 0.0, -(p.false_positive_rate.value or 0.0)),
    )
    return (
        f"the highest block rate any threshold reaches is {format_rate(best.block_rate)}"
        f" (threshold {format_threshold(best.threshold)}, FPR"
        f" {format_rate(best.false_positive_rate)})"
    )


@app.command("calibrate")
def calibrate(
    run: Annotated[Path, typer.Argument(help="Run file to calibrate on (needs benign samples).")],
    target_fpr: Annotated[
        float, typer.Option(help="Highest FPR allowed on the calibration run (0.01 = 1%).")
    ] = 0.01,
    check: Annotated[
        list[Path] | None,
        typer.Option(metavar="RUN", help="Run file of the same defense on other data; repeatable."),
    ] = None,
    max_fpr: Annotated[
        float | None,
        typer.Option(help="Policy: FPR at most this; which threshold blocks the most attacks?"),
    ] = None,
    min_tpr: Annotated[
        float | None,
        typer.Option(help="Policy: block rate at least this; which threshold has the lowest FPR?"),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(help="Error policy override: fail_closed, fail_open or exclude."),
    ] = None,
    confidence: Annotated[float, typer.Option(help="Confidence level of intervals.")] = 0.95,
    method: Annotated[
        str, typer.Option(help="Interval: wilson, clopper_pearson, jeffreys, agresti_coull.")
    ] = "wilson",
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the result as JSON here.")
    ] = None,
) -> None:
    """Pick the score threshold meeting a target FPR on RUN's benign samples; print its
    block rate and FPR (with intervals and n) there and on each --check run."""
    _check_options(target_fpr, max_fpr, min_tpr, policy, method)
    options: dict[str, Any] = {"policy": policy, "confidence": confidence, "method": method}
    if json_out is not None:
        check_out_file(json_out, option="--json")
    cal_run, checks, warnings = _load_runs(run, check or [])
    data = _at_target(run, cal_run, checks, target_fpr, options)
    data["warnings"] = warnings
    if max_fpr is not None or min_tpr is not None:
        data["policy"] = _at_policy(run, cal_run, checks, max_fpr, min_tpr, options)
    if json_out is not None:
        text = json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
        write_text_atomic(json_out, text)
        console.print(f"Calibration written to {escape(str(json_out))}", highlight=False)


def _check_options(
    target_fpr: float, max_fpr: float | None, min_tpr: float | None, policy: str | None, method: str
) -> None:
    """Every option checked before a run file is read (exit 2 naming the option)."""
    from shieldbench.metrics import INTERVAL_METHODS

    _fraction("--target-fpr", target_fpr)
    if max_fpr is not None and min_tpr is not None:
        raise ConfigError("give --max-fpr or --min-tpr, not both: a policy bounds one rate")
    if max_fpr is not None:
        _fraction("--max-fpr", max_fpr)
    if min_tpr is not None:
        _fraction("--min-tpr", min_tpr)
    if policy is not None and policy not in ERROR_POLICIES:
        raise ConfigError(f"--policy {policy!r}: choose one of {', '.join(ERROR_POLICIES)}")
    if method not in INTERVAL_METHODS:
        raise ConfigError(f"--method {method!r}: choose one of {', '.join(INTERVAL_METHODS)}")


def _load_runs(run: Path, check: list[Path]) -> tuple[Run, list[tuple[Path, Run]], list[str]]:
    """The calibration run, the check runs (each refused or warned about) and the warnings."""
    from shieldbench.runio import load_run

    cal_run = load_run(run)
    _require_scores(cal_run, run)
    _require_benign(cal_run, run)
    checks: list[tuple[Path, Run]] = []
    warnings: list[str] = []
    for path in check:
        other = load_run(path)
        _require_scores(other, path)
        warnings += _check_compatible(cal_run, other, path)
        checks.append((path, other))
    for w in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    return cal_run, checks, warnings


def _at_target(
    run: Path,
    cal_run: Run,
    checks: list[tuple[Path, Run]],
    target_fpr: float,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The threshold for ``target_fpr``, printed with its table; the JSON result."""
    from shieldbench.metrics import calibrate_threshold

    result = calibrate_threshold(cal_run, target_fpr=target_fpr, **options)
    checked = [
        (path, other, calibrate_threshold(cal_run, other, target_fpr=target_fpr, **options))
        for path, other in checks
    ]
    console.print(
        f"Threshold [bold]{format_threshold(result.threshold)}[/] for FPR <= {target_fpr:g} on"
        f" {escape(str(run))} ({escape(cal_run.defense.spec)} on"
        f" {escape(cal_run.dataset.spec)}): the lowest observed score threshold whose FPR there"
        " is within the target; a text is blocked when its score >= the threshold.",
        highlight=False,
    )
    rows = [("calibration", cal_run, run, result.calibration)]
    rows += [("check", o, p, c.check) for p, o, c in checked if c.check is not None]
    console.print(_points_table("At the calibrated threshold", rows, target_fpr))
    data: dict[str, Any] = {
        "kind": "shieldbench.calibration",
        "calibration_run": _run_info(cal_run, run),
        **result.to_dict(),
        "checks": [
            {
                **_run_info(o, p),
                "point": None if c.check is None else c.check.to_dict(),
                "within_target": c.check_within_target,
            }
            for p, o, c in checked
        ],
        "policy": None,
        "warnings": [],
    }
    for key in ("check", "check_dataset", "check_within_target"):
        data.pop(key)
    return data


def _at_policy(
    run: Path,
    cal_run: Run,
    checks: list[tuple[Path, Run]],
    max_fpr: float | None,
    min_tpr: float | None,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The threshold meeting ``--max-fpr`` / ``--min-tpr`` (or how close the best gets)."""
    from shieldbench.metrics import operating_point, score_arrays, security_utility_tradeoff

    trade = security_utility_tradeoff(cal_run, max_fpr=max_fpr, min_block_rate=min_tpr, **options)
    policy_data: dict[str, Any] = {**trade.to_dict(), "met": trade.chosen is not None}
    if trade.chosen is None:
        console.print(
            f"[red]No threshold meets the policy[/] '{trade.policy}' on {escape(str(run))}:"
            f" {escape(_closest(trade, max_fpr=max_fpr))}.",
            highlight=False,
        )
        policy_data["checks"] = []
        return policy_data
    thr = trade.chosen.threshold
    console.print(
        f"Policy '{trade.policy}': threshold [bold]{format_threshold(thr)}[/] meets it on"
        f" {escape(str(run))}.",
        highlight=False,
    )
    at_policy = [("calibration", cal_run, run, trade.chosen)]
    for path, other in checks:
        point = operating_point(
            *score_arrays(other, policy=options["policy"]),
            thr,
            confidence=options["confidence"],
            method=options["method"],
        )
        at_policy.append(("check", other, path, point))
    console.print(
        _points_table(f"At the policy's threshold {format_threshold(thr)}", at_policy, max_fpr)
    )
    policy_data["checks"] = [
        {**_run_info(o, p), "point": pt.to_dict()} for _, o, p, pt in at_policy[1:]
    ]
    return policy_data
