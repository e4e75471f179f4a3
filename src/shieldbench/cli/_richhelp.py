"""typer's rich help formatter, loaded without the parts our help never uses.

typer formats ``--help`` with :mod:`typer.rich_utils`, which imports
:mod:`rich.markdown` (markdown-it, and pygments through :mod:`rich.syntax`) and
:mod:`rich.traceback` (:mod:`rich.pretty`) at its top level. Our app uses rich markup
(``rich_markup_mode="rich"``, typer's default), never Markdown, and has typer's pretty
tracebacks off, so on a plain ``shieldbench --help`` those imports are about a third
of the start-up time and draw nothing.

:func:`load_rich_help` imports :mod:`typer.rich_utils` while ``rich.markdown`` and
``rich.traceback`` are, in ``sys.modules``, small stand-in modules whose
``Markdown`` and ``Traceback`` are classes that import the real module when first
used (constructing a ``Markdown``, calling ``Traceback.from_exception``) and return
the real object. The stand-ins are removed from ``sys.modules`` as soon as
:mod:`typer.rich_utils` is loaded, so any other ``import rich.markdown`` gets the real
module. Should a typer release import something else from those modules, the
stand-ins step aside and :mod:`typer.rich_utils` is imported as usual: the help looks
the same either way, only the start-up time differs.

:class:`~shieldbench.cli._help.ConventionalGroup` calls it before formatting any help
page (the root's and every command's); ``tests/test_startup.py`` checks that
``shieldbench --help`` loads neither module and that the stand-ins build the real
objects.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["load_rich_help"]


class _Markdown:
    """Stands in for :class:`rich.markdown.Markdown`: constructing one builds the real one."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    """Stands in for :class:`rich.traceback.Traceback` (typer only calls
    ``from_exception``, for its pretty tracebacks)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback(*args, **kwargs)

    @staticmethod
    def from_exception(*args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


_STAND_INS: dict[str, tuple[str, type]] = {
    "rich.markdown": ("Markdown", _Markdown),
    "rich.traceback": ("Traceback", _Traceback),
}


def load_rich_help() -> None:
    """Import :mod:`typer.rich_utils` without ``rich.markdown`` and ``rich.traceback``
    (see the module docstring); nothing to do when it is already imported."""
    if "typer.rich_utils" in sys.modules:
        return
    placed: dict[str, types.ModuleType] = {}
    for name, (attribute, stand_in) in _STAND_INS.items():
        if name not in sys.modules:  # already really imported: nothing to save
            module = types.ModuleType(name, f"shieldbench's stand-in for {name}")
            setattr(module, attribute, stand_in)
            placed[name] = sys.modules[name] = module
    try:
        importlib.import_module("typer.rich_utils")  # typer finds it in sys.modules
    except ImportError:  # a typer that needs more of them: import it the usual way
        sys.modules.pop("typer.rich_utils", None)
        _remove(placed)
        importlib.import_module("typer.rich_utils")
    finally:
        _remove(placed)


def _remove(placed: dict[str, types.ModuleType]) -> None:
    for name, module in placed.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
