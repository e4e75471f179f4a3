"""End-to-end options shared by ``run`` and ``attack``, the end-to-end table, and the
``judges`` / ``targets`` commands (``judges list``, ``judges evaluate``, ``targets list``).

The options themselves and the engine's plan built from them are
:class:`shieldbench.benchmark.EndToEndOptions` and
:func:`~shieldbench.benchmark.build_end_to_end` (the commands import them when they
run, so that ``shieldbench --help`` does not load the benchmark). Specs are checked
before anything runs: an unknown judge, a bad target spec or a missing API key
variable is one clear error (exit code 2), never a half-written benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from shieldbench.cli._app import app, console
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd
    from shieldbench.metrics import Rate
    from shieldbench.types import Run

__all__ = [
    "attack_end_to_end",
    "print_end_to_end",
    "print_profile_drift",
    "read_accuracy",
]

judges_app = typer.Typer(
    help="List judges and measure them on labelled answers.", no_args_is_help=True
)
targets_app = typer.Typer(help="List the model targets of end-to-end runs.", no_args_is_help=True)
app.add_typer(judges_app, name="judges")
app.add_typer(targets_app, name="targets")


def read_accuracy(path: Path | None) -> tuple[Rate, Rate] | None:
    """Sensitivity and specificity from a ``judges evaluate --json`` file."""
    if path is None:
        return None
    from shieldbench.metrics import rate

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        se, sp = data["sensitivity"], data["specificity"]
        return rate(int(se["k"]), int(se["n"])), rate(int(sp["k"]), int(sp["n"]))
    except OSError as exc:
        raise ConfigError(f"--judge-accuracy {path}: cannot read: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"--judge-accuracy {path}: not the JSON of 'shieldbench judges evaluate --json'"
            f" ({type(exc).__name__}: {exc})"
        ) from None


def print_end_to_end(runs: Sequence[Run], accuracy: tuple[Rate, Rate] | None) -> None:
    """The end-to-end table (and McNemar between defenses) for runs with a target."""
    from shieldbench.metrics import compare_end_to_end, end_to_end_summary, has_end_to_end
    from shieldbench.reports import rate_text as format_rate

    usable = [r for r in runs if has_end_to_end(r)]
    if not usable:
        return
    se, sp = accuracy if accuracy is not None else (None, None)
    first = usable[0].end_to_end
    target = first.get("target") or {}
    judges = ", ".join(first.get("judges") or [])
    table = Table(
        title=f"end to end: target {target.get('spec')}, judges {judges}"
        f" (rule {first.get('rule')}; 95% Wilson intervals)",
        title_justify="left",
        highlight=False,
    )
    for column in (
        "defense",
        "dataset",
        "attack success (ASR)",
        "benign utility",
        "stopped: defense / output / model",
        "errors",
    ):
        table.add_column(column, overflow="fold")
    if accuracy is not None:
        table.add_column("ASR corrected for the judge")
    for run in usable:
        s = end_to_end_summary(run, sensitivity=se, specificity=sp)
        stops = " / ".join(
            "–" if r.value is None else f"{100 * r.value:.1f}%"
            for r in (s.stopped_by_defense, s.stopped_by_output_defense, s.stopped_by_model)
        )
        row = [
            run.defense.spec,
            run.dataset.spec,
            format_rate(s.asr),
            format_rate(s.utility),
            stops,
            str(s.attack_outcomes.get("error", 0) + s.benign_outcomes.get("error", 0)),
        ]
        if accuracy is not None:
            c = s.corrected
            row.append(
                "–"
                if c is None
                else f"{100 * c.value:.1f}% [{100 * c.ci_low:.1f}–{100 * c.ci_high:.1f}]"
            )
        table.add_row(*row)
    console.print(table)
    for pair in compare_end_to_end(usable):
        t = pair.table
        console.print(
            f"  McNemar on end-to-end success, {pair.a} vs {pair.b}: {t.only_a} attacks"
            f" succeeded only with {pair.a}, {t.only_b} only with {pair.b}, {t.both} with both;"
            f" p={pair.test.p_value:.3g} ({pair.test.method})",
            highlight=False,
        )


@judges_app.command("list")
def judges_list() -> None:
    """The registered judges with their spec syntax."""
    from shieldbench.judges import judges

    table = Table(highlight=False)
    for column in ("name", "usage", "description"):
        table.add_column(column, overflow="fold")
    for info in judges:
        table.add_row(info.name, info.usage, info.description)
    console.print(table)


@targets_app.command("list")
def targets_list() -> None:
    """The registered targets with their spec syntax."""
    from shieldbench.targets import targets

    table = Table(highlight=False)
    for column in ("name", "usage", "description"):
        table.add_column(column, overflow="fold")
    for info in targets:
        table.add_row(info.name, info.usage, info.description)
    console.print(table)


@judges_app.command("evaluate")
def judges_evaluate(
    judge: Annotated[str, typer.Option("--judge", "-j", help="Judge spec to measure.")],
    data: Annotated[
        Path | None,
        typer.Option(
            help="Labelled answers (JSONL: answer, success); default: the set shipped"
            " for this judge."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (for --judge-accuracy).")
    ] = False,
) -> None:
    """Measure a judge's sensitivity and specificity on labelled answers."""
    from shieldbench.judges import build_judge, builtin_set, evaluate_judge, load_labelled
    from shieldbench.reports import rate_text as format_rate
    from shieldbench.spec import parse_spec

    built = build_judge(judge)
    if data is None:
        answers = builtin_set(parse_spec(judge).name)
        where = f"builtin:{parse_spec(judge).name}"
    else:
        answers = load_labelled(data)
        where = str(data)
    result = evaluate_judge(built, answers, data=where)
    if as_json:
        console.print_json(json.dumps(result.to_dict()))
        return
    console.print(f"judge [bold]{judge}[/] on {where} ({len(answers)} answers):", highlight=False)
    console.print(f"  sensitivity {format_rate(result.sensitivity)}", highlight=False)
    console.print(f"  specificity {format_rate(result.specificity)}", highlight=False)
    console.print(f"  accuracy    {format_rate(result.accuracy)}", highlight=False)
    if result.errors:
        console.print(f"  errors      {result.errors}", highlight=False)
    if result.wrong:
        console.print(f"  wrong on: {', '.join(result.wrong)}", highlight=False)


def print_profile_drift(runs: Sequence[Run], *, alpha: float) -> list[dict[str, Any]]:
    """Each run's behavioural profile against the first one's; the drifts as JSON data."""
    from shieldbench.metrics import profile_drift

    with_profile = [r for r in runs if isinstance(r.end_to_end.get("profile"), Mapping)]
    if len(with_profile) < 2:
        return []
    base = with_profile[0]
    found = []
    for other in with_profile[1:]:
        drift = profile_drift(base.end_to_end["profile"], other.end_to_end["profile"], alpha=alpha)
        found.append({"a": base.id, "b": other.id, **drift.to_dict()})
        table = Table(
            title=f"behavioural profile of benign answers: {other.defense.spec} ({other.id}) vs"
            f" {base.defense.spec} ({base.id}); Holm-adjusted, alpha {alpha:g}",
            title_justify="left",
            highlight=False,
        )
        for column in ("figure", "A", "B", "B - A [95% CI]", "p (adjusted)", "drift"):
            table.add_column(column, overflow="fold")
        for f in drift.figures:

            def num(x: float | None) -> str:
                return "–" if x is None else f"{x:.3g}"

            interval = "" if f.ci_low is None else f" [{num(f.ci_low)}, {num(f.ci_high)}]"
            table.add_row(
                f.name, num(f.a), num(f.b), f"{num(f.difference)}{interval}",
                f"{f.p_adjusted:.3g}", "[bold red]DRIFT[/]" if f.drifted else "no",
            )  # fmt: skip
        console.print(table)
    return found


def attack_end_to_end(
    bypasses: Any, plan: EndToEnd, config: Any, out: Path, attacked: str
) -> Path | None:
    """Send an attack's bypasses to the target: do they also beat the model?

    The bypasses already got past ``attacked``, so they go straight to the model
    (the ``none`` defense); the run is saved as ``end_to_end.json`` in ``out`` and
    its end-to-end table printed. Returns the run file (``None`` without bypasses).
    """
    from shieldbench.defenses import build_defense
    from shieldbench.engine import run_defense
    from shieldbench.runio import save_run

    if not bypasses.samples:
        console.print("end to end: no bypass to send to the target", highlight=False)
        return None
    run = run_defense(
        build_defense("none"),
        bypasses,
        config=config,
        defense_spec=f"bypasses of {attacked}",
        end_to_end=plan,
    )
    print_end_to_end([run], None)
    return save_run(run, out / "end_to_end.json")
