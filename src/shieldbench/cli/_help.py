"""``--help`` that reads the way click and typer users expect.

:class:`ConventionalGroup` is the root command's class (``typer.Typer(cls=...)``).
When typer has built the whole command tree it walks it once and:

- lists the commands in the order of the workflow (:data:`WORKFLOW_ORDER`: run,
  compare, report, gate, history, attack, ...) instead of the order the modules
  happened to be imported in; a command missing from the list comes after the
  listed ones, in registration order;
- shows arguments as click does (``RUNS...``, not ``{runs}...``), and option and
  argument types as click does: ``TEXT``, ``INTEGER``, ``FLOAT``, ``PATH``,
  ``[a|b]`` for a choice, nothing for a flag (typer's own display is
  ``<list[str]>``, ``<bool>``);
- shows a described default bare, ``[default: fail_closed]`` (typer wraps a
  ``show_default="..."`` string in parentheses: ``[default: (fail_closed)]``);
- shows each command's summary in the commands list as one paragraph (a docstring's
  line breaks are not kept);
- puts options into the help panels a command declared with :func:`option_panels`
  (typer's ``rich_help_panel``), for options shared between commands through one
  ``Annotated`` alias, whose panel differs by command;
- loads typer's rich formatter without its Markdown and traceback support before
  formatting a help page (:mod:`shieldbench.cli._richhelp`: a faster ``--help``).

typer builds its own option objects and has no hook for how a type or a default is
displayed, so the walk re-classes each option as :class:`_Option`, a subclass that
changes only those two displays, and each command and group as :class:`_Command` and
:class:`_Group`, which change only ``format_help``; parsing is untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from typer import core as typer_core
from typer._click import Command, Context, HelpFormatter

from shieldbench.cli._richhelp import load_rich_help

__all__ = ["WORKFLOW_ORDER", "ConventionalGroup", "option_panels"]

# The top-level commands as a user meets them: benchmark, compare and report, gate in
# CI, keep a history, attack adaptively, then the data, defenses, service and tools.
WORKFLOW_ORDER = (
    "run",
    "compare",
    "report",
    "gate",
    "history",
    "attack",
    "view",
    "check",
    "defenses",
    "datasets",
    "generate",
    "mutators",
    "plan",
    "calibrate",
    "judges",
    "targets",
    "monitor",
    "merge",
    "serve",
    "audit",
    "train",
)

_PANELS: dict[str, dict[str, str]] = {}  # command name -> option name -> panel title

_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "bool": "BOOLEAN"}


def option_panels(command: str, panels: Mapping[str, Iterable[str]]) -> None:
    """Group ``command``'s options into help panels: panel title -> parameter names
    (the Python names, ``dataset`` for ``--dataset``), panels shown in this order."""
    _PANELS[command] = {name: title for title, names in panels.items() for name in names}


class _Option(typer_core.TyperOption):
    """A typer option whose type and default display follow click's conventions."""

    def display_type_rich(self, ctx: Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag:
            return None
        return click_type_name(self)

    def _get_default_string(
        self, *, ctx: Context, show_default_is_str: bool, default_value: Any
    ) -> str:
        if show_default_is_str:
            return str(self.show_default)
        return super()._get_default_string(
            ctx=ctx, show_default_is_str=show_default_is_str, default_value=default_value
        )


class _Argument(typer_core.TyperArgument):
    """A typer argument shown as click shows one: ``RUNS...``, with ``PATH`` as its type."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar if self.metavar is not None else (self.name or "").upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return f"{name}..." if self.nargs != 1 else name

    def display_type_rich(self, ctx: Context) -> str | None:
        return click_type_name(self)


def click_type_name(param: typer_core.TyperOption | typer_core.TyperArgument) -> str:
    """click's name for an option's value: ``TEXT``, ``INTEGER``, ``[a|b]``...

    A repeatable option names its element type (click's ``multiple=True`` shows the
    same); ``-D/--dataset TEXT`` is given once per value.
    """
    desc = param.type_descriptor
    if desc.is_choice:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
    if desc.is_path:
        return "PATH"
    if desc.is_datetime:
        return "DATETIME"
    element = param.bare_type().removeprefix("list[").removesuffix("]")
    name = _TYPE_NAMES.get(element, element.upper())
    return f"{name} RANGE" if desc.is_ranged else name


class _Command(typer_core.TyperCommand):
    """A typer command whose help loads typer's formatter the light way first."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        load_rich_help()
        super().format_help(ctx, formatter)


class _Group(typer_core.TyperGroup):
    """A typer group (``defenses``, ``datasets``...) whose help loads typer's formatter
    the light way first."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        load_rich_help()
        super().format_help(ctx, formatter)


_COMMAND_CLASSES: dict[type, type] = {
    typer_core.TyperCommand: _Command,
    typer_core.TyperGroup: _Group,
}


def _conventional(command: Command, ctx: Context, path: str) -> None:
    command.__class__ = _COMMAND_CLASSES.get(type(command), type(command))
    if command.short_help is None and command.help:  # one line in the commands list
        command.short_help = " ".join(command.help.split("\n\n", 1)[0].split())
    panels = _PANELS.get(path, {})
    help_option = command.get_help_option(ctx)  # built lazily by click: re-class it too
    for param in [*command.params, *([help_option] if help_option else [])]:
        if type(param) is typer_core.TyperOption:
            param.__class__ = _Option
        elif type(param) is typer_core.TyperArgument:
            param.__class__ = _Argument
        if param.name in panels and isinstance(param, typer_core.TyperOption):
            param.rich_help_panel = panels[param.name]
    if panels:  # panel order: as declared (rich prints panels in first-seen order)
        order = {title: i for i, title in enumerate(dict.fromkeys(panels.values()))}
        command.params.sort(key=lambda p: order.get(panels.get(p.name or "", ""), len(order)))
    if isinstance(command, typer_core.TyperGroup):
        for name, sub in command.commands.items():
            sub_ctx = Context(sub, parent=ctx, info_name=name)
            _conventional(sub, sub_ctx, f"{path} {name}".strip())


class ConventionalGroup(typer_core.TyperGroup):
    """The root group: workflow order and click-style help (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        rank = {name: i for i, name in enumerate(WORKFLOW_ORDER)}
        names = sorted(self.commands, key=lambda n: rank.get(n, len(rank)))  # stable sort
        self.commands = {name: self.commands[name] for name in names}
        _conventional(self, Context(self, info_name=self.name), "")

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        load_rich_help()
        super().format_help(ctx, formatter)
