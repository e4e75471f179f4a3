"""Name -> factory registries for defenses and datasets.

A plugin is plain data (:class:`PluginInfo`) plus a factory ``(Spec) -> object``,
registered with a decorator::

    from shieldbench.registry import defenses
    from shieldbench.spec import Spec

    @defenses.register("always-block", description="Blocks everything (a baseline).")
    def _always_block(spec: Spec) -> Defense:
        return AlwaysBlock()

Third-party packages register without importing shieldbench at import time, through
the entry-point groups ``shieldbench.defenses`` and ``shieldbench.datasets``: the
entry point's name is the plugin name and its object is the factory (or a
:class:`PluginInfo`-compatible object with a ``factory`` attribute). Entry points are
loaded lazily, the first time a name is looked up or the registry is listed.

Optional dependencies are declared with ``requires`` (importable module names); a
plugin whose module is missing is listed as unavailable with its ``install_hint`` and
raises :class:`~shieldbench.errors.PluginUnavailableError` when built.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from shieldbench.errors import ConfigError, PluginUnavailableError, SpecError
from shieldbench.spec import Spec, parse_spec

if TYPE_CHECKING:
    from importlib import metadata

__all__ = ["PluginInfo", "Registry", "datasets", "defenses"]

T = TypeVar("T")
Factory = Callable[[Spec], Any]


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A registered plugin: its name, what it does, what it needs, how to get it.

    ``usage`` shows the spec syntax (``jsonl:PATH``); ``requires`` lists modules that
    must be importable; ``origin`` is ``builtin`` or the distribution providing it;
    ``example`` is a spec that builds a working instance with no outside service
    (the contract tests and ``list`` commands use it), ``None`` when the plugin
    always needs user input (a URL, a file).
    """

    name: str
    factory: Factory
    description: str = ""
    usage: str = ""
    requires: tuple[str, ...] = ()
    install_hint: str | None = None
    origin: str = "builtin"
    example: str | None = None

    def missing_module(self) -> str | None:
        """The first required module that cannot be imported, or ``None``."""
        for module in self.requires:
            try:
                if importlib.util.find_spec(module) is None:
                    return module
            except (ImportError, ValueError):
                return module
        return None

    @property
    def available(self) -> bool:
        return self.missing_module() is None


class Registry(Generic[T]):
    """Maps plugin names to factories; builds objects from spec strings."""

    def __init__(
        self, kind: str, entry_point_group: str, *, builtin_modules: tuple[str, ...]
    ) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._builtin_modules = builtin_modules
        self._plugins: dict[str, PluginInfo] = {}
        self._loaded = False

    def register(
        self,
        name: str,
        *,
        description: str = "",
        usage: str = "",
        requires: tuple[str, ...] = (),
        install_hint: str | None = None,
        example: str | None = None,
    ) -> Callable[[Callable[[Spec], T]], Callable[[Spec], T]]:
        """Decorator registering ``factory(spec) -> T`` under ``name``."""

        def decorator(factory: Callable[[Spec], T]) -> Callable[[Spec], T]:
            self.add(
                PluginInfo(
                    name=name,
                    factory=factory,
                    description=description,
                    usage=usage or name,
                    requires=requires,
                    install_hint=install_hint,
                    example=example,
                )
            )
            return factory

        return decorator

    def add(self, info: PluginInfo) -> None:
        """Register a plugin; a name can be registered once.

        A module executed twice (``importlib.reload``, pytest's importlib import mode
        collecting doctests) re-registers the same definition: that replaces it.
        """
        existing = self._plugins.get(info.name)
        if (
            existing is not None
            and existing.factory is not info.factory
            and _definition(existing.factory) != _definition(info.factory)
        ):
            raise SpecError(
                f"{self.kind} {info.name!r} is already registered (by {existing.origin});"
                " choose another name"
            )
        self._plugins[info.name] = info

    def unregister(self, name: str) -> None:
        """Remove a plugin (tests and interactive use)."""
        self._plugins.pop(name, None)

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)
        from importlib import metadata  # on first lookup: it costs ~20 ms at import

        for ep in metadata.entry_points(group=self.entry_point_group):
            if ep.name in self._plugins:
                continue
            dist = ep.dist.name if ep.dist is not None else "unknown distribution"
            self._plugins[ep.name] = PluginInfo(
                name=ep.name,
                factory=_LazyEntryPoint(ep),
                description=f"third-party plugin from {dist}",
                usage=ep.name,
                origin=dist,
            )

    def __contains__(self, name: object) -> bool:
        self._ensure_loaded()
        return name in self._plugins

    def __iter__(self) -> Iterator[PluginInfo]:
        self._ensure_loaded()
        return iter(sorted(self._plugins.values(), key=lambda p: p.name))

    def names(self) -> list[str]:
        return [p.name for p in self]

    def get(self, name: str) -> PluginInfo:
        """The plugin registered as ``name``; :class:`SpecError` with suggestions if none."""
        self._ensure_loaded()
        info = self._plugins.get(name)
        if info is None:
            close = difflib.get_close_matches(name, self._plugins, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SpecError(
                f"no {self.kind} named {name!r}{hint} (see 'shieldbench {self.kind}s list')"
            )
        return info

    def create(self, spec: str | Spec) -> T:
        """Build the object a spec string names."""
        parsed = parse_spec(spec) if isinstance(spec, str) else spec
        info = self.get(parsed.name)
        missing = info.missing_module()
        if missing is not None:
            raise PluginUnavailableError(info.name, missing, info.install_hint)
        result: T = info.factory(parsed)
        return result


def _definition(factory: object) -> tuple[object, object]:
    """Where a factory is defined: ``(module, qualified name)``."""
    return (getattr(factory, "__module__", None), getattr(factory, "__qualname__", factory))


class _LazyEntryPoint:
    """A factory that imports its entry point on first use."""

    def __init__(self, ep: metadata.EntryPoint) -> None:
        self._ep = ep
        self._factory: Factory | None = None

    def __call__(self, spec: Spec) -> Any:
        if self._factory is None:
            try:
                loaded = self._ep.load()
            except (ImportError, AttributeError) as exc:
                dist = self._ep.dist.name if self._ep.dist is not None else "its distribution"
                raise ConfigError(
                    f"plugin {self._ep.name!r} from {dist} cannot be loaded"
                    f" ({self._ep.value}: {type(exc).__name__}: {exc}); reinstall or"
                    f" uninstall {dist}"
                ) from exc
            self._factory = getattr(loaded, "factory", loaded)
        return self._factory(spec)


defenses: Registry[Any] = Registry(
    "defense",
    "shieldbench.defenses",
    # output-side detectors (secrets, pii, leak, refusal) live in shieldbench.judges
    builtin_modules=("shieldbench.defenses._builtin", "shieldbench.judges._defenses"),
)
datasets: Registry[Any] = Registry(
    "dataset", "shieldbench.datasets", builtin_modules=("shieldbench.datasets._builtin",)
)
