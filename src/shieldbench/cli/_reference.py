"""The command-line reference of the documentation, written from the command tree.

:func:`cli_reference_markdown` walks the same click command that ``shieldbench``
runs (typer builds it from the registered commands) and writes one section per
command: its usage line, its help, and a table of its arguments and options with
their type, default and help, grouped into the command's help panels. The docs
build calls it (``docs/hooks/cli_reference.py``), so the reference cannot drift from
the code: a new command or option appears in it on the next build.
"""

from __future__ import annotations

from collections.abc import Iterator

import typer
from typer import core as typer_core
from typer._click import Command, Context  # typer's own click (typer.main builds these)

__all__ = ["cli_reference_markdown"]


def cli_reference_markdown() -> str:
    """Markdown for every command of ``shieldbench``, in the order of ``--help``."""
    from shieldbench.cli import app

    root = typer.main.get_command(app)
    ctx = Context(root, info_name="shieldbench")
    return "\n".join(_sections(root, ctx, level=2)).rstrip() + "\n"


def _sections(command: Command, ctx: Context, *, level: int) -> Iterator[str]:
    path = ctx.command_path
    if level > 2:
        yield f"{'#' * level} `{path}`\n"
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    yield f"```text\n{usage}\n```\n"
    if command.help:
        yield _plain(command.help) + "\n"
    rows = list(_param_rows(command, ctx))
    if rows:
        yield "| option | type | default | panel | description |"
        yield "|---|---|---|---|---|"
        yield from rows
        yield ""
    if command.epilog:
        yield _plain(command.epilog) + "\n"
    if isinstance(command, typer_core.TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.commands[name]
            if not sub.hidden:
                sub_ctx = Context(sub, parent=ctx, info_name=name)
                yield from _sections(sub, sub_ctx, level=min(level + 1, 4))


def _param_rows(command: Command, ctx: Context) -> Iterator[str]:
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False) or not isinstance(
            param, typer_core.TyperOption | typer_core.TyperArgument
        ):
            continue
        if isinstance(param, typer_core.TyperArgument):
            names = param.display_name_raw + ("..." if param.nargs != 1 else "")
        else:
            names = ", ".join([*param.opts, *param.secondary_opts])
        kind = param.display_type_rich(ctx) or ""
        default = _default(param, ctx)
        panel = getattr(param, "rich_help_panel", None) or ""
        help_text = _plain(getattr(param, "help", None) or "")
        if param.required:
            help_text += " (required)"
        cells = (f"`{names}`", kind, default, panel, help_text)
        yield "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _default(param: typer_core.TyperOption | typer_core.TyperArgument, ctx: Context) -> str:
    value = param._extract_default_help_str(ctx=ctx)
    described = isinstance(param.show_default, str)
    if not described and (value is None or not (param.show_default or ctx.show_default)):
        return ""
    text = param._get_default_string(ctx=ctx, show_default_is_str=described, default_value=value)
    return f"`{text}`" if text else ""


def _plain(text: str) -> str:
    """Help text as one Markdown paragraph per blank-line-separated block."""
    blocks = (" ".join(block.split()) for block in text.strip().split("\n\n"))
    text = "\n\n".join(b.replace("\b", "").strip() for b in blocks if b.strip())
    return text.replace("<", "&lt;").replace(">", "&gt;")  # "<benchmark id>" is no HTML tag
