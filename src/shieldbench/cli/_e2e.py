"""End-to-end options shared by ``run`` and ``attack``, the end-to-end table, and the
``judges`` / ``targets`` commands (``judges list``, ``judges evaluate``, ``targets list``).

Specs are checked before anything runs: an unknown judge, a bad target spec or a
missing API key variable is one clear error (exit code 2), never a half-written
benchmark.
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

__all__ = ["E2EOptions", "build_plan", "print_end_to_end", "read_accuracy"]

judges_app = typer.Typer(
    help="List judges and measure them on labelled answers.", no_args_is_help=True
)
targets_app = typer.Typer(help="List the model targets of end-to-end runs.", no_args_is_help=True)
app.add_typer(judges_app, name="judges")
app.add_typer(targets_app, name="targets")


class E2EOptions:
    """The end-to-end options as given on the command line (plain data)."""

    def __init__(
        self,
        target: str | None,
        judges: Sequence[str],
        *,
        rule: str = "any",
        output_defenses: Sequence[str] = (),
        system_prompt: str | None = None,
        screen: str = "text",
        judge_accuracy: Path | None = None,
    ) -> None:
        self.target = target
        self.judges = tuple(judges)
        self.rule = rule
        self.output_defenses = tuple(output_defenses)
        self.system_prompt = system_prompt
        self.screen = screen
        self.judge_accuracy = judge_accuracy

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> E2EOptions:
        """From a config file's ``end_to_end:`` section (see :mod:`shieldbench.config`)."""
        return cls(
            section["target"],
            section.get("judges") or (),
            rule=section.get("rule") or "any",
            output_defenses=section.get("output_defenses") or (),
            system_prompt=section.get("system_prompt"),
            screen=section.get("screen") or "text",
        )

    @property
    def active(self) -> bool:
        return self.target is not None

    def check(self) -> None:
        """Refuse contradictory options before anything is built."""
        if self.target is None:
            given = [
                n
                for n, v in (
                    ("--judge", self.judges),
                    ("--output-defense", self.output_defenses),
                    ("--system-prompt", self.system_prompt),
                )
                if v
            ]
            if given:
                raise ConfigError(f"{', '.join(given)} need a --target (the model to send to)")
            return
        if not self.judges:
            raise ConfigError(
                "an end-to-end run needs at least one --judge, e.g. --judge refusal --judge leak"
            )

    def to_dict(self, canary: str | None) -> dict[str, Any]:
        """What the benchmark manifest records (resume checks it, and reuses the canary)."""
        return {
            "target": self.target,
            "judges": list(self.judges),
            "rule": self.rule,
            "output_defenses": list(self.output_defenses),
            "system_prompt": self.system_prompt,
            "screen": self.screen,
            "canary": canary,
        }


def _system_prompt(value: str | None) -> str:
    from shieldbench.targets import DEFAULT_SYSTEM_PROMPT

    if value is None:
        return DEFAULT_SYSTEM_PROMPT
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"--system-prompt {value}: cannot read {path}: {exc.strerror}"
            ) from None
    return value


def build_plan(options: E2EOptions, canary: str | None = None) -> EndToEnd | None:
    """The engine's :class:`EndToEnd` from the options; ``None`` without ``--target``."""
    options.check()
    if options.target is None:
        return None
    from shieldbench.defenses import build_defense
    from shieldbench.engine import EndToEnd
    from shieldbench.judges import COMBINE_RULES, build_judge
    from shieldbench.targets import SCREEN_MODES, build_target, new_canary, system_prompt_with

    if options.rule not in COMBINE_RULES:
        raise ConfigError(
            f"--judge-rule {options.rule!r}: choose one of {', '.join(COMBINE_RULES)}"
        )
    if options.screen not in SCREEN_MODES:
        raise ConfigError(f"--screen {options.screen!r}: choose one of {', '.join(SCREEN_MODES)}")
    template = _system_prompt(options.system_prompt)
    if canary is None and "{canary}" in template:
        canary = new_canary()
    prompt = system_prompt_with(template, canary)
    judges = tuple(build_judge(spec) for spec in options.judges)
    outputs = []
    for spec in options.output_defenses:
        output = build_defense(spec)
        bind = getattr(output, "bind", None)  # leak: the run's canary and system prompt
        outputs.append(bind(canary=canary, system_prompt=prompt) if callable(bind) else output)
    return EndToEnd(
        target=build_target(options.target),
        judges=judges,
        rule=options.rule,  # type: ignore[arg-type]
        output_defenses=tuple(outputs),
        system_prompt=prompt,
        canary=canary if "{canary}" in template else None,
        screen=options.screen,  # type: ignore[arg-type]
        target_spec=options.target,
        judge_specs=options.judges,
        output_defense_specs=options.output_defenses,
    )


def close_plan(plan: EndToEnd | None) -> None:
    """Close the target, the judges and the output defense that have a ``close()``."""
    if plan is None:
        return
    from shieldbench.defenses import close_every

    close_every((plan.target, *plan.judges, *plan.output_defenses))


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


def settle_manifest(
    folder: Path, options: E2EOptions, canary: str | None, resume: bool
) -> str | None:
    """Record the end-to-end settings in ``benchmark.json``; on resume, check and reuse them.

    Returns the canary every pair of the benchmark uses (the stored one on resume).
    """
    from shieldbench.errors import RunError

    path = folder / "benchmark.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    stored = manifest.get("end_to_end")
    if resume and stored is not None:
        asked = options.to_dict(stored.get("canary"))
        if asked != stored:
            raise RunError(
                f"{path}: the interrupted benchmark ran end to end with {stored!r}; this command"
                f" asks for {asked!r}. Resume with the same --target/--judge options."
            )
        return stored.get("canary")  # type: ignore[no-any-return]
    if resume and stored is None:
        raise RunError(f"{path}: the interrupted benchmark had no --target; resume without it")
    manifest["end_to_end"] = options.to_dict(canary)
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return canary


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
