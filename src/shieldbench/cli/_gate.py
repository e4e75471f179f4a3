"""``shieldbench gate``: pass or fail a candidate run against a baseline, for CI.

Exit 0 when every check passes, 1 when one fails, 2 on bad input (unreadable run,
unknown reference, runs on different data, a baseline that is the candidate). Run
files or history references (``latest:DEFENSE@DATASET``, ``tag:KEY=VALUE``, a run
id) name both runs; a ``tag:`` baseline means the newest tagged run of the
candidate's defense (canonical spec and version) on the candidate's data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from shieldbench.cli._app import app, console
from shieldbench.cli._store import DbOption, open_cli_store
from shieldbench.types import ERROR_POLICIES

if TYPE_CHECKING:
    from shieldbench.store import Store
    from shieldbench.types import Run

__all__ = ["gate"]


def _looks_like_file(ref: str) -> bool:
    return ref.endswith(".json") or ("/" in ref and not ref.startswith(("latest:", "tag:")))


class _Refs:
    """Loads runs from files, or from the history (opened on first need)."""

    def __init__(self, ctx: typer.Context, db: str | None) -> None:
        self._ctx = ctx
        self._db = db
        self._store: Store | None = None

    def load(self, ref: str) -> Run:
        from shieldbench.runio import load_run

        if Path(ref).is_file() or _looks_like_file(ref):
            return load_run(ref)
        return self._open().get_run(self._open().resolve(ref))

    def baseline(self, ref: str, candidate: Run) -> Run:
        """The baseline ``ref`` names for ``candidate``: a ``tag:`` reference picks the
        newest tagged run of the candidate's defense identity on its data (or is
        refused saying why); a ``latest:`` one prefers them. The candidate itself is
        refused."""
        from shieldbench.errors import RunError
        from shieldbench.gate import same_run
        from shieldbench.identity import DefenseIdentity

        if Path(ref).is_file() or _looks_like_file(ref):
            base = self.load(ref)
        else:
            store = self._open()
            identity = DefenseIdentity.of(candidate.defense.spec, candidate.defense.version)
            found = store.resolve(
                ref, dataset_hash=candidate.dataset.content_hash, identity=identity
            )
            base = store.get_run(found)
        if same_run(candidate, base):
            raise RunError(
                f"--baseline {ref!r} names the candidate run itself ({candidate.id!r},"
                f" {candidate.defense.spec}): a run gated against itself has no discordant"
                " pair and shows nothing; name an earlier run as the baseline (its run id,"
                " `shieldbench history --defense SPEC` lists them)"
            )
        return base

    def _open(self) -> Store:
        if self._store is None:
            self._store = open_cli_store(self._db, self._ctx, create=False)
        return self._store


@app.command("gate")
def gate(
    ctx: typer.Context,
    candidate: Annotated[
        str, typer.Argument(help="Candidate: a run file, or a history id / reference.")
    ],
    baseline: Annotated[
        str,
        typer.Option(
            help="Baseline: a run file, a history id, latest:SPEC@DATASET (SPEC==VERSION for"
            " one version) or tag:KEY=VALUE (the newest run so tagged of the candidate's"
            " defense spec and version, on its data)."
        ),
    ],
    margin: Annotated[
        float,
        typer.Option(
            help="Non-inferiority margin on block rate and FPR (0: fail only on a significant"
            " regression, mid-p McNemar)."
        ),
    ] = 0.02,
    alpha: Annotated[float, typer.Option(help="One-sided significance level.")] = 0.05,
    min_tpr: Annotated[float | None, typer.Option(help="Block rate at least this.")] = None,
    max_fpr: Annotated[float | None, typer.Option(help="False positive rate at most this.")] = None,
    max_p95_ms: Annotated[
        float | None,
        typer.Option(help="Per-call p95 latency (ms, one text per call) at most this."),
    ] = None,
    max_error_rate: Annotated[
        float | None, typer.Option(help="Errors + timeouts at most this share.")
    ] = None,
    point: Annotated[
        bool,
        typer.Option(
            "--point", help="Check limits on point estimates, not on the 95% interval bound."
        ),
    ] = False,
    max_latency_ratio: Annotated[
        float | None,
        typer.Option(
            help="Candidate/baseline per-call latency quantile at most this (bootstrap bound)."
        ),
    ] = None,
    latency_quantile: Annotated[
        float, typer.Option(help="Quantile of the latency ratio (0.5 = median).")
    ] = 0.5,
    policy: Annotated[
        str | None, typer.Option(help=f"Error policy override: {', '.join(ERROR_POLICIES)}.")
    ] = None,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report here.")] = None,
    summary: Annotated[
        Path | None, typer.Option(help="Write a Markdown summary here (PR comment).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the result as JSON.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Gate a candidate run against a baseline: paired non-inferiority on block rate and
    FPR, absolute limits, latency ratio. Exit 0 pass, 1 fail, 2 bad input."""
    from shieldbench.errors import ConfigError
    from shieldbench.gate import (
        GateSettings,
        check_line,
        defense_labels,
        junit_xml,
        markdown_summary,
        run_gate,
    )

    if policy is not None and policy not in ERROR_POLICIES:
        raise ConfigError(f"--policy {policy!r}: choose one of {', '.join(ERROR_POLICIES)}")
    settings = GateSettings(
        margin=margin,
        alpha=alpha,
        min_tpr=min_tpr,
        max_fpr=max_fpr,
        max_p95_ms=max_p95_ms,
        max_error_rate=max_error_rate,
        max_latency_ratio=max_latency_ratio,
        latency_quantile=latency_quantile,
        point=point,
        policy=policy,  # type: ignore[arg-type]  # checked above
    )
    refs = _Refs(ctx, db)
    cand = refs.load(candidate)
    base = refs.baseline(baseline, cand)
    result = run_gate(cand, base, settings)
    cand_label, base_label = defense_labels(result)
    console.print(
        f"gate: candidate [bold]{escape(cand.id)}[/] ({escape(cand_label)}) vs baseline"
        f" [bold]{escape(base.id)}[/] ({escape(base_label)}) on"
        f" {escape(cand.dataset.spec)}, error policy {result.policy}",
        highlight=False,
    )
    for c in result.checks:
        color = "green" if c.passed else "red"
        console.print(f"[{color}]{escape(check_line(c))}[/]", highlight=False)
    outputs = {junit: junit_xml(result), summary: markdown_summary(result)}
    if json_out is not None:
        outputs[json_out] = json.dumps(result.to_dict(), indent=1) + "\n"
    for path, text in outputs.items():
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            console.print(f"wrote {escape(str(path))}", highlight=False)
    n, failed = len(result.checks), len(result.failed)
    if failed:
        console.print(f"[bold red]gate failed[/]: {failed} of {n} checks", highlight=False)
        raise typer.Exit(1)
    console.print(f"[bold green]gate passed[/]: {n} checks", highlight=False)
