"""Scaling options shared by ``run`` and ``attack``, the progress columns, and ``merge``.

``--executor ray`` (with ``--ray-address`` and ``--workers``) screens on a Ray
actor pool (:class:`shieldbench.engine.RayExecutor`); ``--shard I/N`` runs block I
of N of every dataset; ``shieldbench merge`` joins the shard runs of one job into
the run an unsplit job would have written. Ray is imported only when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import ProgressColumn, Task
from rich.text import Text

from shieldbench.cli._app import app, console
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.engine import RayExecutor

__all__ = [
    "EXECUTORS",
    "ExecutorOption",
    "RateColumn",
    "RayAddressOption",
    "ShardOption",
    "WorkersOption",
    "make_executor",
    "merge",
    "run_format",
]

EXECUTORS = ("local", "ray")
COLUMNAR_FROM = 100_000
"""Runs of at least this many samples are stored as Parquet run files, smaller ones as JSON."""


def run_format(n_samples: int) -> str:
    """The suffix of a run file for ``n_samples`` samples: ``json`` or ``parquet``."""
    return "parquet" if n_samples >= COLUMNAR_FROM else "json"


ExecutorOption = Annotated[
    str,
    typer.Option(
        "--executor", help="Where checks run: local (this process) or ray (a Ray actor pool)."
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray head HOST:PORT, 'auto' or ray://... (default: start a local Ray).",
    ),
]
WorkersOption = Annotated[
    int | None, typer.Option("--workers", help="Ray workers (actors), one defense each [2].")
]
ShardOption = Annotated[
    str | None,
    typer.Option("--shard", help="Run only shard I/N of every dataset (merge with `merge`)."),
]


def make_executor(
    executor: str, spec: str, *, address: str | None, workers: int | None
) -> RayExecutor | None:
    """The executor the options ask for (None: the local engine); checked before any work."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if executor == "local":
        if address is not None or workers is not None:
            raise ConfigError("--ray-address and --workers need --executor ray")
        return None
    from shieldbench.engine import RayExecutor

    return RayExecutor(spec, address=address, workers=2 if workers is None else workers)


class RateColumn(ProgressColumn):
    """Throughput of a progress task: ``1,234/s`` (blank until rich has a speed)."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")


@app.command("merge")
def merge(
    runs: Annotated[list[Path], typer.Argument(help="The shard run files of one job.")],
    out: Annotated[Path, typer.Option(help="Where to write the merged run file.")],
    force: Annotated[bool, typer.Option(help="Overwrite --out if it exists.")] = False,
) -> None:
    """Merge the shard runs of one job (`run --shard I/N`) into one run file: the same
    samples, outcomes, content hash and statistics as an unsplit run."""
    from shieldbench.engine._shards import merge_runs
    from shieldbench.runio import load_run, save_run

    if out.exists() and (out.is_dir() or not force):
        raise ConfigError(f"--out {out}: already exists; pass --force to overwrite a file")
    merged = merge_runs([load_run(p) for p in runs], names=[str(p) for p in runs])
    save_run(merged, out)
    console.print(
        f"merged {len(runs)} shards: {len(merged.outcomes)} outcomes of {merged.defense.spec}"
        f" on {merged.dataset.spec} ({merged.dataset.content_hash[:19]}…) -> {out}",
        highlight=False,
    )
