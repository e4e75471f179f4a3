"""``shieldbench generate``: a labelled dataset of attacks written for the user's application.

Thin over :func:`shieldbench.attacks.generate_dataset`; the file is JSON Lines
that ``run`` loads with ``jsonl:FILE``, and a ``FILE.provenance.json`` beside it
records the model, the instructions, the counts and the failures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._outpaths import check_out_file
from shieldbench.errors import ConfigError

__all__: list[str] = []


@app.command("generate")
def generate(
    purpose: Annotated[str, typer.Option(help="What the application does, in a sentence.")],
    categories: Annotated[
        str,
        typer.Option(help="Comma-separated attack categories, e.g. data_exfiltration,jailbreak."),
    ],
    attacker: Annotated[
        str, typer.Option(help="The writing model: openai:MODEL@URL, llm:ollama/MODEL...")
    ],
    out: Annotated[Path, typer.Option(help="JSONL file to write (load it with jsonl:FILE).")],
    n: Annotated[
        int, typer.Option("--n", min=1, help="Attack samples, spread over categories.")
    ] = 50,
    benign: Annotated[
        int | None, typer.Option(min=0, help="Benign requests of the application (default: --n).")
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Near-duplicate Jaccard threshold for removal.")
    ] = 0.8,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
) -> None:
    """Ask a model for attacks on your application (per category, with subcategory and
    severity) and for its benign requests; de-duplicate; write a labelled JSONL dataset
    with the model and prompt recorded on every sample."""
    from shieldbench.attacks import build_attacker, generate_dataset, write_jsonl

    check_out_file(out, option="--out", force=force)
    model = build_attacker(attacker)
    try:
        made = generate_dataset(
            model,
            purpose=purpose,
            categories=categories.split(","),
            n=n,
            benign=benign,
            threshold=threshold,
            name=str(out),
        )
    finally:
        model.close()
    if not len(made.dataset):
        raise ConfigError(
            f"the model at {attacker} wrote no usable sample ({len(made.failures)} failed or"
            f" unparseable answers; first: {made.failures[:1]})"
        )
    path = write_jsonl(made.dataset, out)
    provenance = {
        "attacker": model.describe(),
        "system_prompt": made.system_prompt,
        "purpose": purpose,
        "categories": categories.split(","),
        "labels": made.dataset.label_counts(),
        "duplicates_removed": made.duplicates,
        "short_by_category": made.short,
        "failures": list(made.failures),
        "usage": made.usage.to_dict(),
    }
    side = out.with_name(out.name + ".provenance.json")
    side.write_text(json.dumps(provenance, indent=1), encoding="utf-8")
    for line in made.failures:
        err_console.print(f"attacker: {line}", highlight=False)
    counts = made.dataset.label_counts()
    console.print(
        f"wrote {len(made.dataset)} samples ({counts['attack']} attack, {counts['benign']}"
        f" benign; {made.duplicates} duplicates removed) to {path}; load with jsonl:{path}",
        highlight=False,
    )
