"""``shieldbench defenses list|inspect`` and ``shieldbench check``: what defenses say.

Thin commands over :mod:`shieldbench.defenses`: ``defenses list`` shows every
registered defense (availability, usage, description, install hint, example spec);
``defenses inspect SPEC`` builds one and prints what it resolved to (for a model:
labels, max length, parameters, device, what the score means, its version);
``check`` screens one text with one or more defenses and prints each verdict.
"""

from __future__ import annotations

import sys
from time import perf_counter
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from shieldbench._redact import redact
from shieldbench.cli._app import app, console, defenses_app
from shieldbench.cli._console import echo_json

# shieldbench.defenses (every built-in defense and combinator) is imported by the
# commands, so that ``shieldbench --help`` does not load it.
if TYPE_CHECKING:
    from shieldbench.defenses import Defense

__all__: list[str] = []

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _echo_json(data: Any) -> None:
    echo_json(data)


@defenses_app.command("list")
def list_defenses(as_json: _JSON = False) -> None:
    """Every registered defense: availability, usage, description and install hint."""
    from shieldbench.defenses import registry

    plugins = list(registry)
    if as_json:
        _echo_json(
            [
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
            ]
        )
        return
    if console.width < _TABLE_WIDTH:
        _print_compact(plugins)
    else:
        _print_table(plugins)
    console.print(
        Text(
            "Compose them: any(a, b), all(a, b), vote(a, b, c, k=2), fuse(a, b, weights=0.7|0.3),"
            " tiered(fast, deep), dual(inline, warn), fail_closed(d, timeout=2), preprocess(d),"
            ' dedup(d). Try one: shieldbench check "some text" --defense SPEC'
        )
    )


_TABLE_WIDTH = 140  # narrower terminals get one block per defense: specs are never cut


def _print_compact(plugins: list[Any]) -> None:
    """One block per defense; spec strings on their own lines, whole (no mid-word fold)."""
    for p in plugins:
        missing = p.missing_module()
        status = "available" if missing is None else f"not available ({missing})"
        console.print(Text(f"{p.name}  [{status}]", style="bold"))
        console.print(Text(f"  {p.description}"))
        lines = [("usage", p.usage), ("example", p.example if missing is None else None)]
        if missing is not None:
            lines.append(("install", p.install_hint or f"the package providing {missing}"))
        for label, value in lines:
            if value:
                console.print(Text(f"  {label}: {value}"), soft_wrap=True)


def _print_table(plugins: list[Any]) -> None:
    table = Table(title="Defenses", show_lines=True)
    for col in ("name", "available", "usage", "description", "install / example"):
        table.add_column(col, overflow="fold")
    for p in plugins:
        missing = p.missing_module()
        if missing is None:
            status = Text("yes", style="green")
            extra = Text(p.example or "", style="dim")
        else:
            status = Text(f"no ({missing})", style="red")
            extra = Text(p.install_hint or f"install the package providing {missing}")
        table.add_row(Text(p.name, style="bold"), status, Text(p.usage), Text(p.description), extra)
    console.print(table)


@defenses_app.command("inspect")
def inspect_defense(
    spec: Annotated[
        str, typer.Argument(help="A defense spec, e.g. 'hf(models/pg, label=INJECTION)'.")
    ],
    as_json: _JSON = False,
) -> None:
    """Build a defense and print what its spec resolved to, before a long run.

    Every defense: its name, version and how the engine will call it. A model
    (``hf:``, ``onnx:``) adds its path, architecture, parameter count, device and
    dtype, its labels (the attack ones marked), what the score means, the
    threshold, max length and how long texts are windowed. A spec that does not
    build (missing folder, unknown label, missing extra) exits 2 with one line.
    """
    from shieldbench.defenses import build_defense, close_every, defense_version

    built = build_defense(spec)
    try:
        describe = getattr(built, "describe", None)
        facts: dict[str, Any] = dict(describe()) if callable(describe) else {}
        calls = [c for c in ("check_batch", "acheck") if callable(getattr(built, c, None))]
        row: dict[str, Any] = {
            "spec": spec,
            "name": built.name,
            "version": defense_version(built),
            "calls": ", ".join([*calls, "check"]),
            **facts,
        }
    finally:
        close_every([built])
    if as_json:
        _echo_json(row)
        return
    table = Table(title="Defense", show_header=False, show_lines=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in row.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, int) and not isinstance(value, bool) and key == "parameters":
            value = f"{value:,}"
        table.add_row(key.replace("_", " "), Text("-" if value is None else str(value)))
    console.print(table)


def _screen(spec: str, defense: Defense, text: str, build_ms: float) -> dict[str, Any]:
    from shieldbench.defenses import defense_version

    row: dict[str, Any] = {
        "spec": spec,
        "name": defense.name,
        "version": defense_version(defense),
        "build_ms": round(build_ms, 3),
    }
    start = perf_counter()
    try:
        verdict = defense.check(text)
    except Exception as exc:  # a failing defense is reported, never dropped
        # Messages may quote what a server sent back (an echoed header, a URL with a key).
        row.update(status="error", error=redact(f"{type(exc).__name__}: {exc}"))
    else:
        row.update(status="ok", **verdict.to_dict())
        if row.get("label") is not None:
            row["label"] = redact(str(row["label"]))
        row["reasons"] = [redact(str(r)) for r in row.get("reasons") or ()]
    row["latency_ms"] = round((perf_counter() - start) * 1000.0, 3)
    return row


def _verdict_cell(row: dict[str, Any]) -> Text:
    if row["status"] != "ok":
        return Text("ERROR", style="bold yellow")
    return Text("BLOCKED", style="bold red") if row["blocked"] else Text("allowed", style="green")


@app.command("check")
def check(
    text: Annotated[str, typer.Argument(help="The text to screen; '-' reads it from stdin.")],
    defense: Annotated[
        list[str],
        typer.Option(
            "--defense",
            "-d",
            help="A defense spec (repeat for several), e.g. pattern, 'any(pattern, semantic)'.",
        ),
    ],
    as_json: _JSON = False,
) -> None:
    """Screen one text with one or more defenses and print each verdict.

    Shows blocked, score, label, reasons and the latency of this one call (a cold
    call: the first includes any lazy model loading). Exit code 1 when a defense
    failed on the text, 0 otherwise.
    """
    from shieldbench.defenses import build_defense, closing

    if text == "-":
        text = sys.stdin.read()
    rows: list[dict[str, Any]] = []
    for spec in defense:
        start = perf_counter()
        built = build_defense(spec)
        build_ms = (perf_counter() - start) * 1000.0
        with closing([built]):
            rows.append(_screen(spec, built, text, build_ms))
    if as_json:
        _echo_json(rows)
    else:
        table = Table(title="Verdicts", show_lines=True)
        for col in ("defense", "verdict", "score", "label", "reasons / error", "ms"):
            table.add_column(col, overflow="fold", justify="right" if col == "ms" else "left")
        for row in rows:
            score = row.get("score")
            why = row.get("error") or ", ".join(row.get("reasons") or ())
            table.add_row(
                Text(row["spec"]),
                _verdict_cell(row),
                "-" if score is None else f"{score:.3f}",
                Text(str(row.get("label") or "")),
                Text(why),
                f"{row['latency_ms']:.1f}",
            )
        console.print(table)
    if any(row["status"] != "ok" for row in rows):
        raise typer.Exit(1)
