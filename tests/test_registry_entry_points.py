"""Third-party plugins through the entry-point groups, from a real installed distribution.

A ``*.dist-info`` folder on ``sys.path`` is what ``pip install`` leaves behind;
``importlib.metadata`` finds its ``entry_points.txt`` exactly as it would for a
package from PyPI. Each test uses a fresh :class:`Registry` on the real group names,
so the process-wide registries are left as they are.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from shieldbench import registry as registry_module
from shieldbench.datasets import Dataset
from shieldbench.errors import ConfigError
from shieldbench.registry import Registry
from shieldbench.types import Sample, Verdict

MODULE = "sb_thirdparty_plugin_probe"

PLUGIN_SOURCE = textwrap.dedent(
    """
    from shieldbench.datasets import Dataset
    from shieldbench.types import Sample, Verdict

    class Always:
        name = "always"

        def __init__(self, blocked):
            self.blocked = blocked

        def check(self, text):
            return Verdict(blocked=self.blocked, score=float(self.blocked))

    def defense_factory(spec):
        return Always(spec.bool_option("blocked", True))

    def dataset_factory(spec):
        n = spec.int_option("n", 2) or 2
        samples = tuple(Sample(f"tp-{i}", f"text {i}", "attack") for i in range(n))
        return Dataset(spec.text, samples)
    """
)


def _install(site: Path, entry_points: str, *, source: str = PLUGIN_SOURCE) -> None:
    (site / f"{MODULE}.py").write_text(source, encoding="utf-8")
    dist = site / "sb_thirdparty_probe-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sb-thirdparty-probe\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return tmp_path


ENTRY_POINTS = """
    [shieldbench.defenses]
    tp-always = sb_thirdparty_plugin_probe:defense_factory

    [shieldbench.datasets]
    tp-data = sb_thirdparty_plugin_probe:dataset_factory
"""


def test_the_process_registries_use_the_documented_groups() -> None:
    assert registry_module.defenses.entry_point_group == "shieldbench.defenses"
    assert registry_module.datasets.entry_point_group == "shieldbench.datasets"


def test_a_third_party_defense_and_dataset_register_lazily(site: Path) -> None:
    _install(site, ENTRY_POINTS)
    defenses: Registry[object] = Registry("defense", "shieldbench.defenses", builtin_modules=())
    datasets: Registry[object] = Registry("dataset", "shieldbench.datasets", builtin_modules=())

    assert "tp-always" in defenses.names()
    assert "tp-data" in datasets.names()
    info = defenses.get("tp-always")
    assert info.origin == "sb-thirdparty-probe"
    assert info.available
    assert MODULE not in sys.modules, "listing must not import the plugin"

    defense = defenses.create("tp-always(blocked=false)")
    assert MODULE in sys.modules
    verdict = defense.check("hello")  # type: ignore[attr-defined]
    assert isinstance(verdict, Verdict)
    assert verdict.blocked is False

    data = datasets.create("tp-data(n=3)")
    assert isinstance(data, Dataset)
    assert [s.id for s in data] == ["tp-0", "tp-1", "tp-2"]
    assert all(isinstance(s, Sample) for s in data)


def test_a_builtin_name_wins_over_an_entry_point(site: Path) -> None:
    _install(site, ENTRY_POINTS)
    datasets: Registry[object] = Registry("dataset", "shieldbench.datasets", builtin_modules=())

    @datasets.register("tp-data", description="registered in-process")
    def _mine(spec: object) -> str:
        return "mine"

    assert datasets.create("tp-data") == "mine"
    assert datasets.get("tp-data").origin == "builtin"


def test_a_broken_entry_point_fails_with_a_clear_error(site: Path) -> None:
    _install(
        site,
        """
        [shieldbench.defenses]
        tp-missing = sb_no_such_module_anywhere:factory
        tp-noattr = sb_thirdparty_plugin_probe:no_such_factory
        """,
    )
    defenses: Registry[object] = Registry("defense", "shieldbench.defenses", builtin_modules=())
    assert {"tp-missing", "tp-noattr"} <= set(defenses.names())  # listing still works
    for name, detail in [
        ("tp-missing", "sb_no_such_module_anywhere"),
        ("tp-noattr", "no_such_factory"),
    ]:
        with pytest.raises(ConfigError, match=rf"{name}.*sb-thirdparty-probe.*{detail}"):
            defenses.create(name)
