"""``shieldbench report``: re-render stored runs (and attack results) as report files.

Thin over :mod:`shieldbench.reports`: the inputs are run files written by ``run``
(``kind: shieldbench.run``) and, optionally, one ``attack.json`` written by
``attack`` (``kind: shieldbench.attack``); the output is ``report.json``,
``report.md`` and ``report.html`` (or the formats asked for). ``llm_attack.json``
files of ``attack --strategy pair|tap|crescendo`` (``kind: shieldbench.llm_attack``,
one or several) render as ``llm_attack.md`` and ``llm_asr.svg``, every strategy on
one plot.

Where the files go: ``--out DIR`` when given; with a single input, a folder next
to it named ``<input name>-report/`` (so a ``runs/*.json`` glob never picks a
report up as a run); with several inputs, ``reports/report-<id>/`` where the id
is derived from the inputs' run ids (the same inputs give the same folder).

The reports and attacks packages are imported inside the functions that use them, so
that ``shieldbench --help`` does not pay for them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from shieldbench._textio import read_text_input
from shieldbench.cli._app import app, console
from shieldbench.cli._outpaths import check_out_dir
from shieldbench.errors import ConfigError, RunError
from shieldbench.types import ERROR_POLICIES, Run

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, LLMAttackResult

__all__ = ["check_max_fpr", "output_id", "parse_formats", "print_report_paths"]


def parse_formats(values: Sequence[str] | None) -> tuple[str, ...]:
    """``--format`` values (repeatable and/or comma-separated) -> formats; all by default."""
    from shieldbench.reports import FORMATS

    if not values:
        return FORMATS
    chosen: list[str] = []
    for value in values:
        for part in value.split(","):
            fmt = {"markdown": "md", "htm": "html"}.get(part.strip().lower(), part.strip().lower())
            if fmt not in FORMATS:
                raise ConfigError(f"--format {part!r}: choose from {', '.join(FORMATS)}")
            if fmt not in chosen:
                chosen.append(fmt)
    return tuple(chosen)


def check_max_fpr(value: float | None) -> float | None:
    """``--max-fpr`` validated: a fraction strictly between 0 and 1."""
    if value is not None and not 0.0 < value < 1.0:
        raise ConfigError(f"--max-fpr {value!r}: give a fraction between 0 and 1, e.g. 0.02")
    return value


def output_id(keys: Sequence[str]) -> str:
    """A short, stable id for a set of inputs (12 hex digits of a SHA-256)."""
    return hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:12]


def print_report_paths(paths: dict[str, Path]) -> None:
    """One line per written file, then the HTML path to open."""
    for fmt, path in paths.items():
        console.print(f"{fmt:>4} report: {escape(str(path))}", highlight=False)
    if "html" in paths:
        console.print(
            f"open the HTML report: [bold]{escape(str(paths['html']))}[/]", highlight=False
        )


def _read(path: Path) -> dict[str, Any]:
    text = read_text_input(path, error=RunError, what="run or attack file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: expected a run or attack file (a JSON object)")
    return data


def _load(
    paths: Sequence[Path],
) -> tuple[list[Run], AttackResult | None, list[LLMAttackResult]]:
    from shieldbench.attacks import LLM_ATTACK_KIND, AttackResult, LLMAttackResult
    from shieldbench.runio import run_from_dict

    runs: list[Run] = []
    attack: AttackResult | None = None
    llm: list[LLMAttackResult] = []
    for path in paths:
        if path.suffix == ".parquet":  # a columnar run file (large runs)
            from shieldbench.runio import load_run

            runs.append(load_run(path))
            continue
        data = _read(path)
        kind = data.get("kind")
        if kind == "shieldbench.attack":
            if attack is not None:
                raise ConfigError(f"{path}: one report renders one adaptive attack; got two")
            attack = AttackResult.from_dict(data, source=str(path))
        elif kind == LLM_ATTACK_KIND:
            llm.append(LLMAttackResult.from_dict(data, source=str(path)))
        elif kind in ("shieldbench.run", None):
            runs.append(run_from_dict(data, source=str(path)))
        else:
            raise RunError(
                f"{path}: a {kind!r} file is not a run or an attack result; pass the run"
                " files (runs/*.json), attack.json or llm_attack.json written by `run` / `attack`"
            )
    return runs, attack, llm


def _write_llm(results: Sequence[LLMAttackResult], out: Path) -> None:
    from shieldbench.reports import write_llm_reports

    print_report_paths(write_llm_reports(results, out))


@app.command("report")
def report(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Run files (runs/*.json) and/or one attack.json, or llm_attack.json files.",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            "-f",
            help="html, md or json (repeatable or comma-separated; default: all three).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the report files (default: <input name>-report/ beside a single"
            " input, else reports/report-<id>/)."
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="Report title.")] = None,
    margin: Annotated[
        float, typer.Option(help="Wanted ± half-width of 95% intervals (sample-size advice).")
    ] = 0.1,
    examples: Annotated[
        int, typer.Option(min=0, help="Example bypasses / false positives per category.")
    ] = 5,
    policy: Annotated[
        str | None,
        typer.Option(
            help="Read every run under this error policy: fail_closed, fail_open, exclude."
        ),
    ] = None,
    max_fpr: Annotated[
        float | None,
        typer.Option(
            help="Your policy, FPR at most this (e.g. 0.02): a line on the security / utility"
            " plane and the target of 'block rate at FPR <= target'."
        ),
    ] = None,
) -> None:
    """Re-render stored runs as JSON / Markdown / HTML reports and print their paths.

    With one input and no --out, the files go to <input name>-report/ beside it; with
    several, to reports/report-<id>/.
    """
    from shieldbench.reports import build_report, write_reports

    formats = parse_formats(fmt)
    if policy is not None and policy not in ERROR_POLICIES:
        raise ConfigError(f"--policy {policy!r}: choose one of {', '.join(ERROR_POLICIES)}")
    if out is not None:
        check_out_dir(out, option="--out")  # before reading inputs
    runs, attack, llm = _load(inputs)
    if out is None:
        if len(inputs) == 1:
            out = inputs[0].with_name(f"{inputs[0].stem}-report")
        else:
            keys = [r.id for r in runs] + ([attack.meta.id] if attack is not None else [])
            out = Path("reports") / f"report-{output_id(keys + [r.meta.id for r in llm])}"
    check_out_dir(out, option="--out")
    if llm:
        _write_llm(llm, out)
        if not runs and attack is None:
            return
    built = build_report(
        runs,
        title=title,
        margin=margin,
        examples=examples,
        attack=attack,
        policy=policy,  # type: ignore[arg-type]  # checked against ERROR_POLICIES above
        max_fpr=check_max_fpr(max_fpr),
    )
    print_report_paths(write_reports(built, out, formats=formats))
