"""Lazy attributes for package ``__init__`` modules, so that start-up stays fast.

A package re-exports names from its private modules. When a private module pulls in
a heavy third-party library (numpy, torch, ...) that most users of the package never
touch, :func:`lazy_attributes` builds a module ``__getattr__`` (PEP 562) that imports
the defining module the first time one of its names is used, and caches the value in
the package namespace (later lookups cost nothing). The public API does not change:
``from package import Name`` and ``package.Name`` work as before, and ``__all__``
still lists every name.

Type checkers never run ``__getattr__``; the package imports the same names under
``if TYPE_CHECKING:`` so mypy sees real types, and defines ``__getattr__`` only in the
``else`` branch so that a misspelt name is still a type error::

    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from mypkg._heavy import Model
    else:
        __getattr__ = lazy_attributes(globals(), {"Model": "mypkg._heavy"})

Example:
    >>> import types
    >>> pkg = types.ModuleType("pkg")
    >>> pkg.__getattr__ = lazy_attributes(vars(pkg), {"dumps": "json"})
    >>> pkg.dumps([1])
    '[1]'
    >>> "dumps" in vars(pkg)   # cached after the first use
    True
    >>> pkg.loads
    Traceback (most recent call last):
    ...
    AttributeError: module 'pkg' has no attribute 'loads'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    namespace: MutableMapping[str, Any], names: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the module whose ``globals()`` is ``namespace``:
    ``names`` maps each lazy attribute to the absolute name of the module that defines
    it under the same name. Other names raise :class:`AttributeError` as usual."""
    table = dict(names)
    package = namespace.get("__name__", "?")

    def __getattr__(name: str) -> Any:
        module_name = table.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    return __getattr__
