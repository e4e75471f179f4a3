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

from shieldbench.cli._app import app, console
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.engine import RayExecutor

__all__ = [
    "EXECUTORS",
    "ExecutorOption",
    "GpusOption",
    "RayAddressOption",
    "ShardOption",
    "WorkersOption",
    "make_executor",
    "merge",
]

EXECUTORS = ("local", "ray")
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
GpusOption = Annotated[
    float | None,
    typer.Option(
        "--gpus-per-worker",
        help="GPUs each Ray worker reserves (fractions share a GPU, e.g. 0.5) [0].",
    ),
]
ShardOption = Annotated[
    str | None,
    typer.Option("--shard", help="Run only shard I/N of every dataset (merge with `merge`)."),
]


def make_executor(
    executor: str,
    spec: str,
    *,
    address: str | None,
    workers: int | None,
    gpus: float | None = None,
) -> RayExecutor | None:
    """The executor the options ask for (None: the local engine); checked before any work.

    ``gpus`` (``--gpus-per-worker``) goes to every actor's Ray options; a cluster
    without a node that has that many GPUs is a clear error when the pool starts.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if executor == "local":
        if address is not None or workers is not None or gpus is not None:
            raise ConfigError("--ray-address, --workers and --gpus-per-worker need --executor ray")
        return None
    if gpus is not None and not 0 <= gpus < float("inf"):
        raise ConfigError(f"--gpus-per-worker must be a number >= 0, got {gpus!r}")
    from shieldbench.engine import RayExecutor

    return RayExecutor(
        spec,
        address=address,
        workers=2 if workers is None else workers,
        gpus_per_worker=gpus or 0.0,
    )


@app.command("merge")
def merge(
    runs: Annotated[list[Path], typer.Argument(help="The shard run files of one job.")],
    out: Annotated[Path, typer.Option(help="Where to write the merged run file.")],
    force: Annotated[bool, typer.Option(help="Overwrite --out if it exists.")] = False,
) -> None:
    """Merge the shard runs of one job (`run --shard I/N`) into one run file: the same
    samples, outcomes, content hash and statistics as an unsplit run."""
    from shieldbench.engine import merge_runs
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
