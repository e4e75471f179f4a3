"""``shieldbench datasets ...``: list, show, validate, overlap, sample.

Thin commands over :mod:`shieldbench.datasets`; every number printed comes from a
library function whose result can also be had as JSON (``--json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from shieldbench.cli._app import EXIT_BAD_INPUT, console, datasets_app, err_console
from shieldbench.cli._console import echo_json
from shieldbench.errors import ConfigError, DatasetError

# shieldbench.datasets (loaders, readers, the registry) is imported by the commands
# that use it, so that ``shieldbench --help`` does not load it.
if TYPE_CHECKING:
    from shieldbench.datasets import Dataset

__all__ = ["dataset_spec"]


def dataset_spec(text: str) -> str:
    """The spec a ``--dataset`` value stands for; a bare data file path is read with
    the loader its extension names, and the command says so on stderr."""
    from shieldbench.datasets import spec_for_text

    spec = spec_for_text(text)
    if spec != text:
        loader = spec.split(":", 1)[0]
        err_console.print(
            f"reading {text} with the {loader} loader (its extension); the spec is {spec}",
            highlight=False, markup=False,
        )  # fmt: skip
    return spec


_JSON = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


_MAPPING_HELP = Text(
    "File loaders (jsonl, csv, parquet, pint, hf-disk) take mapping options in the call form,"
    " e.g. csv(data.csv, text=prompt, label=type, attack=unsafe, benign=safe):\n"
    "  text= label= id= category= subcategory= severity= tier= source=   field names"
    " (defaults: text, else prompt; label; id; ...)\n"
    "  attack=A|B  benign=C   label values (defaults: 1/true/attack/injection/jailbreak/"
    "unsafe/malicious -> attack; 0/false/benign/safe/legit -> benign)\n"
    "  fixed_label=attack|benign   one label for every record;"
    "  split_category=false   keep 'a/b' categories whole\n"
    "Other fields (language, ...) go to the sample's metadata."
)


def _echo_json(data: Any) -> None:
    echo_json(data)


def _snippet(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@datasets_app.command("list")
def list_datasets(as_json: _JSON = False) -> None:
    """Every dataset loader, whether it is available, its usage and install hint,
    and the built-in suites with their sizes."""
    from shieldbench.datasets import builtin_suites, registry

    plugins = list(registry)
    suites = builtin_suites()
    if as_json:
        _echo_json(
            {
                "loaders": [
                    {
                        "name": p.name,
                        "available": p.available,
                        "missing": p.missing_module(),
                        "usage": p.usage,
                        "description": p.description,
                        "install_hint": p.install_hint,
                        "example": p.example,
                        "origin": p.origin,
                    }
                    for p in plugins
                ],
                "builtin_suites": [
                    {
                        "spec": s.spec,
                        "samples": s.n_samples,
                        "attack": s.n_attack,
                        "benign": s.n_benign,
                    }
                    for s in suites
                ],
            }
        )
        return
    table = Table(title="Dataset loaders", show_lines=False)
    for col in ("name", "available", "usage", "description", "install"):
        table.add_column(col, overflow="fold")
    for p in plugins:
        missing = p.missing_module()
        status = (
            Text("yes", style="green") if missing is None else Text(f"no ({missing})", style="red")
        )
        hint = p.install_hint if missing is not None and p.install_hint else ""
        table.add_row(Text(p.name), status, Text(p.usage), Text(p.description), Text(hint))
    console.print(table)
    console.print(_MAPPING_HELP, highlight=False)
    suite_table = Table(title="Built-in suites")
    for col in ("spec", "samples", "attack", "benign", "files"):
        suite_table.add_column(col, justify="left" if col == "spec" else "right")
    for s in suites:
        suite_table.add_row(
            s.spec, str(s.n_samples), str(s.n_attack), str(s.n_benign), str(s.n_files)
        )
    console.print(suite_table)


def _print_summary(ds: Dataset, *, margin: float) -> None:
    from shieldbench.datasets import describe_dataset

    summary = describe_dataset(ds, margin=margin)
    console.print(Text(f"{summary.name}", style="bold"))
    console.print(f"samples: {summary.n_samples}    content hash: {summary.content_hash}")
    for spec, digest in summary.sources:
        console.print(Text(f"  source {spec}  {digest}"))
    lengths = summary.lengths
    console.print(
        f"text length (chars): min {lengths.min}, median {lengths.median:g},"
        f" p95 {lengths.p95:g}, max {lengths.max}"
    )
    if summary.n_duplicate_texts:
        console.print(
            Text(
                f"exact duplicate texts (after normalisation): {summary.n_duplicate_texts}",
                style="yellow",
            )
        )
    for name, counts in summary.counts.items():
        if len(counts) == 1 and counts[0][0] == "(none)":
            continue
        table = Table(title=f"by {name}", title_justify="left")
        table.add_column(name)
        table.add_column("n", justify="right")
        table.add_column("share", justify="right")
        for value, n in counts:
            table.add_row(Text(value), str(n), f"{n / summary.n_samples:.1%}")
        console.print(table)
    if summary.warnings:
        console.print(
            Text(
                f"sample-size warnings (margin ±{margin:.0%}, 95% confidence):", style="bold yellow"
            )
        )
        for w in summary.warnings:
            console.print(Text(f"  - {w.message}", style="yellow"))
    else:
        console.print(
            Text(f"every label and category has enough samples for ±{margin:.0%}", style="green")
        )


@datasets_app.command("show")
def show(
    spec: Annotated[str, typer.Argument(help="Dataset spec, e.g. builtin:core or jsonl:x.jsonl")],
    margin: Annotated[
        float, typer.Option(help="Wanted margin of error (CI half-width) for sample-size warnings.")
    ] = 0.1,
    as_json: _JSON = False,
) -> None:
    """Counts per label, category, subcategory, tier, severity, language and source,
    text lengths, content hash and sample-size warnings."""
    from shieldbench.datasets import describe_dataset, load_dataset

    ds = load_dataset(dataset_spec(spec))
    if as_json:
        _echo_json(describe_dataset(ds, margin=margin).to_dict())
    else:
        _print_summary(ds, margin=margin)


def _parse_options(options: list[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for raw in options:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"loader option {raw!r} is not KEY=VALUE (e.g. -o text=prompt)")
        parsed[key.strip()] = value.strip()
    return parsed


@datasets_app.command("validate")
def validate(
    file: Annotated[
        Path,
        typer.Argument(
            help="A .jsonl, .csv, .parquet or PINT .yaml file, or a save_to_disk folder."
        ),
    ],
    option: Annotated[
        list[str],
        typer.Option(
            "--option",
            "-o",
            help="Loader option KEY=VALUE, repeatable: -o text=prompt -o label=type"
            " -o attack=unsafe -o benign=safe",
        ),
    ] = [],  # noqa: B006 - typer reads the default, never mutates it
    margin: Annotated[float, typer.Option(help="Margin for sample-size warnings.")] = 0.1,
) -> None:
    """Check a data file: exit 0 with a summary, or exit 2 with FILE:LINE: field error."""
    from shieldbench.datasets import describe_dataset, load_file, sample_size_note

    try:
        ds = load_file(file, options=_parse_options(option))
    except (DatasetError, ConfigError) as exc:
        err_console.print(Text(f"invalid: {exc}", style="bold red"), soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    counts = ds.label_counts()
    console.print(
        Text(
            f"valid: {file}: {len(ds)} samples ({counts['attack']} attack, {counts['benign']}"
            f" benign), {len({s.category for s in ds})} categories, {ds.content_hash}",
            style="green",
        )
    )
    note = sample_size_note(describe_dataset(ds, margin=margin).warnings)
    if note is not None:
        console.print(Text(f"  sample size: {note}", style="yellow"))


@datasets_app.command("overlap")
def overlap(
    a: Annotated[str, typer.Argument(help="First dataset spec (e.g. the training data).")],
    b: Annotated[str, typer.Argument(help="Second dataset spec (e.g. the test data).")],
    threshold: Annotated[
        float, typer.Option(help="Shingle Jaccard similarity at or above which texts match.")
    ] = 0.8,
    examples: Annotated[int, typer.Option(help="How many matched pairs to print.")] = 5,
    fail_on_overlap: Annotated[
        bool, typer.Option("--fail-on-overlap", help="Exit 1 when any pair matches (for CI).")
    ] = False,
    as_json: _JSON = False,
) -> None:
    """Exact and near-duplicate overlap between two datasets, to catch train/test leakage."""
    from shieldbench.datasets import dataset_overlap, load_dataset

    ds_a, ds_b = load_dataset(a), load_dataset(b)
    result = dataset_overlap(ds_a, ds_b, threshold=threshold)
    if as_json:
        _echo_json(result.to_dict())
    else:
        table = Table(title=f"overlap at Jaccard >= {threshold:g}", show_header=False)
        table.add_column("what")
        table.add_column("value", justify="right")
        table.add_row(Text(f"A: {result.name_a}"), f"{result.n_a} samples")
        table.add_row(Text(f"B: {result.name_b}"), f"{result.n_b} samples")
        table.add_row("exact pairs (normalised text)", str(result.n_exact_pairs))
        table.add_row("near-duplicate pairs", str(result.n_near_pairs))
        share_a = result.n_a_overlapping / result.n_a
        share_b = result.n_b_overlapping / result.n_b
        table.add_row("samples of A with a match in B", f"{result.n_a_overlapping} ({share_a:.1%})")
        table.add_row("samples of B with a match in A", f"{result.n_b_overlapping} ({share_b:.1%})")
        table.add_row("matched pairs with different labels", str(result.n_label_conflicts))
        console.print(table)
        texts_a = {s.id: s.text for s in ds_a}
        texts_b = {s.id: s.text for s in ds_b}
        shown = sorted(result.pairs, key=lambda p: -p.similarity)[: max(0, examples)]
        if shown:
            ex = Table(title="examples", show_lines=True)
            for col in ("similarity", "A", "B"):
                ex.add_column(col, overflow="fold")
            for p in shown:
                ex.add_row(
                    f"{p.similarity:.2f}" + (" exact" if p.exact else ""),
                    Text(f"{p.id_a} [{p.label_a}]\n{_snippet(texts_a[p.id_a])}"),
                    Text(f"{p.id_b} [{p.label_b}]\n{_snippet(texts_b[p.id_b])}"),
                )
            console.print(ex)
    if fail_on_overlap and result.pairs:
        raise typer.Exit(1)


@datasets_app.command("sample")
def sample(
    spec: Annotated[str, typer.Argument(help="Dataset spec.")],
    n: Annotated[int, typer.Option("--n", "-n", help="How many samples.")] = 20,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same sample).")] = 0,
    label: Annotated[str | None, typer.Option(help="Only this label: attack or benign.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Print whole texts.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON Lines (one sample a line).")
    ] = False,
) -> None:
    """A seeded random sample, stratified by label and category."""
    from shieldbench.datasets import load_dataset, sample_dataset

    ds = sample_dataset(load_dataset(spec), n, seed=seed, label=label)
    if as_json:
        for s in ds:
            echo_json(s.to_dict(), indent=None)
        return
    table = Table(title=Text(ds.name), show_lines=True)
    for col in ("id", "label", "category", "text"):
        table.add_column(col, overflow="fold")
    for s in ds:
        category = s.category + (f"/{s.subcategory}" if s.subcategory else "")
        text = s.text if full else _snippet(s.text, 160)
        table.add_row(Text(s.id), Text(s.label), Text(category), Text(text))
    console.print(table)
