"""``shieldbench history``: runs over time, one run, export and import of run files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from shieldbench.cli._app import app, console
from shieldbench.cli._store import DbOption, TagOption, open_cli_store, parse_tags
from shieldbench.errors import ConfigError, RunError, StoreError

if TYPE_CHECKING:
    from shieldbench.store import RunInfo

__all__ = ["history_app"]

history_app = typer.Typer(
    help="Runs kept over time: list, show, export, import, trend.", invoke_without_command=True
)
app.add_typer(history_app, name="history")


def _pct(t: tuple[float | None, float | None, float | None]) -> str:
    value, low, high = t
    if value is None:
        return "–"
    return f"{100 * value:.1f}% [{100 * (low or 0):.1f}–{100 * (high or 0):.1f}]"


def _ms(t: tuple[float | None, float | None, float | None]) -> str:
    value, low, high = t
    if value is None:
        return "–"

    def f(x: float | None) -> str:  # a missing bound: too few calls for the tail
        return "none (too few calls)" if x is None else f"{x:.2f}"

    return f"{value:.2f} [{f(low)}–{f(high)}]"


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--since {text!r}: write a date, e.g. 2026-01-31") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _defense_labels(rows: list[RunInfo]) -> list[str]:
    """Each run's defense by canonical spec, with its version where the listing holds
    two versions of that spec (never by display name, which variants share)."""
    from shieldbench.identity import identity_labels

    return identity_labels([r.identity for r in rows])


def _table(rows: list[RunInfo]) -> Table:
    t = Table(title="Run history (95% intervals)", title_justify="left", highlight=False)
    t.add_column("id", overflow="fold", min_width=12)
    t.add_column("started (UTC)", overflow="fold", min_width=10)
    t.add_column("defense @ dataset", overflow="fold", min_width=12)
    for name in ("block rate", "FPR"):
        t.add_column(name, overflow="fold", min_width=12)
    t.add_column("per-call p95 ms", overflow="fold", min_width=10)
    t.add_column("n / errors", justify="right")
    t.add_column("tags", overflow="fold")
    for r, defense in zip(rows, _defense_labels(rows), strict=True):
        t.add_row(
            escape(r.id),
            r.started.strftime("%Y-%m-%d %H:%M"),
            escape(f"{defense} @ {r.dataset_spec}"),
            _pct(r.block_rate),
            _pct(r.fpr),
            _ms(r.p95_ms),
            f"{r.n_samples} / {r.n_errors}",
            escape(" ".join(f"{k}={v}" for k, v in sorted(r.tags.items()))),
        )
    return t


@history_app.callback()
def history(
    ctx: typer.Context,
    defense: Annotated[
        str | None,
        typer.Option(
            help="Only this defense: a spec, matched by canonical form (every version);"
            " a display name only when no run has that spec."
        ),
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(help="Only this dataset (spec or content hash).")
    ] = None,
    tag: TagOption = None,
    since: Annotated[str | None, typer.Option(help="Only runs started on or after.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="The newest N runs.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    db: DbOption = None,
) -> None:
    """A table of stored runs over time: block rate, FPR, p95 latency with intervals."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = db
        return
    store = open_cli_store(db, ctx, create=False)
    rows = store.runs(
        defense=defense, dataset=dataset, tags=parse_tags(tag), since=_since(since), limit=limit
    )
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=1))
        return
    console.print(_table(rows))
    console.print(f"{len(rows)} runs in {escape(store.url)}", highlight=False)


def _db(ctx: typer.Context, db: str | None) -> str | None:
    return db if db is not None else ctx.obj


@history_app.command("show")
def show(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, latest:D@S or tag:k=v.")],
    db: DbOption = None,
) -> None:
    """One stored run: what ran, where, and its figures."""
    store = open_cli_store(_db(ctx, db), ctx, create=False)
    typer.echo(json.dumps(store.info(run_id).to_dict(), indent=1))


@history_app.command("export")
def export(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, latest:D@S or tag:k=v.")],
    out: Annotated[Path, typer.Option(help="Run file to write (JSON).")],
    db: DbOption = None,
) -> None:
    """Write a stored run back out as a run file, identical to the original."""
    from shieldbench.runio import save_run

    store = open_cli_store(_db(ctx, db), ctx, create=False)
    path = save_run(store.get_run(run_id), out)
    console.print(f"run {escape(run_id)} written to {escape(str(path))}", highlight=False)


def _files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in (".json", ".parquet")))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(f"{path}: no such file or folder")
    return found


@history_app.command("import")
def import_(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(help="Run files (.json, .parquet), attack.json files, or folders."),
    ],
    tag: TagOption = None,
    db: DbOption = None,
) -> None:
    """Import run files (and attack results): the same run twice is stored once."""
    from shieldbench.runio import load_run, run_from_dict

    tags = parse_tags(tag)
    runs, attacks = [], []
    for path in _files(paths):
        if path.suffix == ".parquet":  # a columnar run file
            runs.append(load_run(path))
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RunError(f"{path}: not a JSON run file ({error})") from None
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind == "shieldbench.run":
            runs.append(run_from_dict(data, source=str(path)))
        elif kind == "shieldbench.attack":
            attacks.append((path, data))
        elif len(paths) == 1 and path == paths[0]:
            raise RunError(f"{path}: not a shieldbench run or attack file (kind={kind!r})")
    if not runs and not attacks:
        raise ConfigError(f"no run or attack files in {', '.join(map(str, paths))}")
    store = open_cli_store(_db(ctx, db), ctx)
    new = sum(store.add_run(r, source="import", tags=tags, git=(None, None)) for r in runs)
    for path, attack in attacks:
        try:
            new += store.add_attack(attack, tags=tags, git=(None, None))
        except StoreError as error:
            raise StoreError(f"{path}: {error}") from None
    console.print(
        f"imported {new} new of {len(runs) + len(attacks)} into {escape(store.url)}"
        f" ({len(runs) + len(attacks) - new} already stored)",
        highlight=False,
    )


@history_app.command("trend")
def trend(
    ctx: typer.Context,
    defense: Annotated[
        str,
        typer.Option(
            help="Defense spec (canonical form; a display name only when no run has that"
            " spec). Each spec and version is its own series."
        ),
    ],
    dataset: Annotated[str, typer.Option(help="Dataset (spec or content hash).")],
    out: Annotated[Path, typer.Option(help="HTML file to write.")] = Path("trend.html"),
    tag: TagOption = None,
    since: Annotated[str | None, typer.Option(help="Only runs started on or after.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="The newest N runs.")] = 1000,
    db: DbOption = None,
) -> None:
    """An HTML page of block rate, FPR and p95 latency over time, with intervals and
    the significant changes marked."""
    from shieldbench.trend import render_trend, trend_points, trend_series

    store = open_cli_store(_db(ctx, db), ctx, create=False)
    rows = store.runs(
        defense=defense, dataset=dataset, tags=parse_tags(tag), since=_since(since), limit=limit
    )
    if not rows:
        raise ConfigError(f"no stored runs of {defense!r} on {dataset!r} in {store.url}")
    points = trend_points(rows)
    series = trend_series(points)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_trend(points, title=f"{defense} on {dataset}"), encoding="utf-8")
    marked = sum(p.block_changed or p.fpr_changed for p in points)
    console.print(
        f"trend of {len(points)} runs ({marked} with a significant change) written to"
        f" {escape(str(out))}",
        highlight=False,
    )
    if len(series) > 1:
        console.print(
            f"{len(series)} series, one per defense spec and version (never mixed): "
            + escape("; ".join(series.values())),
            highlight=False,
        )
