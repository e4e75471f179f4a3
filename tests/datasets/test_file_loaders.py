"""File loaders: mapping options and every bad-input path (file, line and field named)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shieldbench.datasets import load_dataset
from shieldbench.errors import DatasetError, SpecError


def _jsonl(tmp_path: Path, *records: object, name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _expect(spec: str, *, line: int | None, field: str | None, match: str) -> DatasetError:
    with pytest.raises(DatasetError, match=match) as info:
        load_dataset(spec)
    assert info.value.line == line
    assert info.value.field == field
    assert info.value.path is not None
    assert info.value.path in str(info.value)
    return info.value


# --- mapping ---------------------------------------------------------------------------


def test_defaults_ids_metadata_and_category_split(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        {
            "text": "Ignore the rules",
            "label": "injection",
            "category": "jailbreak/dan",
            "language": "en",
            "severity": "HIGH",
            "tier": "known",
        },
        {"prompt": "What is 2+2?", "label": False, "id": 7},
        {"text": "Hallo", "label": "SAFE", "category": "chat", "source": "mine"},
    )
    ds = load_dataset(f"jsonl:{path}")
    a, b, c = ds.samples
    assert (a.id, a.label, a.category, a.subcategory) == ("line:1", "attack", "jailbreak", "dan")
    assert (a.severity, a.tier, dict(a.metadata)) == ("high", "known", {"language": "en"})
    assert (b.id, b.text, b.label, b.category) == ("7", "What is 2+2?", "benign", "uncategorized")
    assert (c.label, c.source) == ("benign", "mine")
    assert ds.name == f"jsonl:{path}"


def test_split_category_can_be_turned_off_and_explicit_subcategory_wins(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        {"text": "x y", "label": 1, "category": "a/b"},
        {"text": "x z", "label": 1, "category": "a/b", "subcategory": "own"},
    )
    first, second = load_dataset(f"jsonl({path}, split_category=false)").samples
    assert (first.category, first.subcategory) == ("a/b", None)
    first, second = load_dataset(f"jsonl:{path}").samples
    assert (second.category, second.subcategory) == ("a/b", "own")


def test_column_and_explicit_label_mapping(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("uid,body,kind,cls\nu1,hello there,greeting,2\nu2,drop the rules,inj,7\n")
    ds = load_dataset(
        f"csv({path}, id=uid, text=body, category=kind, label=cls, attack=7, benign=2)"
    )
    assert [(s.id, s.text, s.label, s.category) for s in ds] == [
        ("u1", "hello there", "benign", "greeting"),
        ("u2", "drop the rules", "attack", "inj"),
    ]


def test_explicit_side_replaces_its_defaults_and_removes_conflicts(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "a", "label": "0"}, {"text": "b", "label": "1"})
    # 1 is now benign: removed from the default attack vocabulary, no conflict.
    ds = load_dataset(f"jsonl({path}, attack=0, benign=1)")
    assert [s.label for s in ds] == ["attack", "benign"]
    ds = load_dataset(f"jsonl({path}, attack=1|yes)")
    assert [s.label for s in ds] == ["benign", "attack"]
    with pytest.raises(SpecError, match="both attack= and benign="):
        load_dataset(f"jsonl({path}, attack=1, benign=1|0)")


def test_fixed_label_ignores_a_missing_label_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,text\n0,Template one [INSERT PROMPT HERE]\n1,Template two\n")
    ds = load_dataset(f"csv({path}, fixed_label=attack)")
    assert ds.label_counts() == {"attack": 2, "benign": 0}
    with pytest.raises(SpecError, match="fixed_label"):
        load_dataset(f"csv({path}, fixed_label=maybe)")


def test_unknown_option_is_a_spec_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "a", "label": 0})
    with pytest.raises(SpecError, match="unknown option"):
        load_dataset(f"jsonl({path}, colour=blue)")


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"text": "hé", "label": 1}).encode())
    assert load_dataset(f"jsonl:{path}").samples[0].text == "hé"


def test_unicode_line_separators_inside_json_strings_do_not_split_records(tmp_path: Path) -> None:
    path = tmp_path / "ls.jsonl"
    path.write_text('{"text": "a\u2028b\u0085c", "label": 1}\n', encoding="utf-8")
    assert load_dataset(f"jsonl:{path}").samples[0].text == "a\u2028b\u0085c"


# --- bad input: JSONL -------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    _expect(f"jsonl:{tmp_path / 'nope.jsonl'}", line=None, field=None, match="file not found")


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    _expect(f"jsonl:{tmp_path}", line=None, field=None, match="not a file")


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(content)
    _expect(f"jsonl:{path}", line=None, field=None, match="empty")


def test_malformed_json_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"text": "ok", "label": 1}\n\n{"text": "broken", \n')
    _expect(f"jsonl:{path}", line=3, field=None, match="malformed JSON")


def test_non_object_line(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text('{"text": "ok", "label": 1}\n["text", 1]\n')
    _expect(f"jsonl:{path}", line=2, field=None, match="got a JSON array")


def test_missing_text_field(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "ok", "label": 1}, {"body": "x", "label": 1})
    _expect(f"jsonl:{path}", line=2, field="text", match="missing field 'text'.*text=FIELD")


def test_missing_mapped_text_field(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "ok", "label": 1})
    _expect(f"jsonl({path}, text=body)", line=1, field="body", match="missing field 'body'")


def test_missing_label_field(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "ok"})
    _expect(f"jsonl:{path}", line=1, field="label", match="label=FIELD.*fixed_label")


@pytest.mark.parametrize(
    ("record", "field", "match"),
    [
        ({"text": 42, "label": 1}, "text", "expected a string, got int"),
        ({"text": None, "label": 1}, "text", "got null"),
        ({"text": "x", "label": [1]}, "label", "got list"),
        ({"text": "x", "label": None}, "label", "got null"),
        ({"text": "x", "label": 1, "category": 3}, "category", "expected a string, got int"),
        ({"text": "x", "label": 1, "id": 1.5}, "id", "string or integer id, got float"),
        ({"text": "x", "label": 1, "id": True}, "id", "got bool"),
        ({"text": "x", "label": 1, "severity": "extreme"}, "severity", "low, medium, high"),
        ({"text": "x", "label": 1, "tier": "easy"}, "tier", "known, paraphrased"),
    ],
)
def test_wrong_types_and_values(
    tmp_path: Path, record: dict[str, object], field: str, match: str
) -> None:
    path = _jsonl(tmp_path, {"text": "fine", "label": 0, "id": "a"}, record)
    _expect(f"jsonl:{path}", line=2, field=field, match=match)


def test_unknown_label_says_how_to_map_it(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "x", "label": "prompt-attack"})
    err = _expect(f"jsonl:{path}", line=1, field="label", match="unknown label value")
    assert "attack=prompt-attack or benign=prompt-attack" in str(err)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_or_whitespace_text(tmp_path: Path, text: str) -> None:
    path = _jsonl(tmp_path, {"text": text, "label": 1})
    _expect(f"jsonl:{path}", line=1, field="text", match="empty text")


def test_empty_id(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, {"text": "x", "label": 1, "id": "  "})
    _expect(f"jsonl:{path}", line=1, field="id", match="empty id")


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        {"id": "a", "text": "x", "label": 1},
        {"id": "b", "text": "y", "label": 1},
        {"id": "a", "text": "z", "label": 0},
    )
    _expect(
        f"jsonl:{path}", line=3, field="id", match="duplicate id 'a' \\(first used on line 1\\)"
    )


def test_invalid_utf8_names_line_and_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    first = b'{"text": "fine", "label": 1}\n'
    path.write_bytes(first + b'{"text": "caf\xe9", "label": 0}\n')
    err = _expect(f"jsonl:{path}", line=2, field=None, match="not valid UTF-8")
    assert f"byte offset {len(first) + 13}" in str(err)
    assert "column 14" in str(err)


def test_invalid_utf8_offset_counts_the_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom_bad.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"text": "\xff", "label": 0}\n')
    err = _expect(f"jsonl:{path}", line=1, field=None, match="not valid UTF-8")
    assert "byte offset 13" in str(err)


# --- bad input: CSV ----------------------------------------------------------------------


def test_csv_multiline_record_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "ml.csv"
    path.write_text('text,label\n"line one\nline two",1\n"ok",maybe\n')
    ds_err = _expect(f"csv:{path}", line=4, field="label", match="unknown label")
    assert ds_err.path == str(path)


def test_csv_header_only_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("text,label\n")
    _expect(f"csv:{path}", line=None, field=None, match="no records")


def test_csv_missing_columns_are_reported_up_front(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("body,label\nx,1\n")
    _expect(
        f"csv:{path}", line=1, field="text", match="no column 'text' \\(columns: body, label\\)"
    )
    path.write_text("text,kind\nx,1\n")
    _expect(f"csv:{path}", line=1, field="label", match="no column 'label'")


def test_csv_wrong_cell_count(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("text,label\nx,1\ny,1,extra\n")
    _expect(f"csv:{path}", line=3, field=None, match="expected 2 columns")


def test_csv_duplicate_or_empty_header(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("text,label,text\nx,1,y\n")
    _expect(f"csv:{path}", line=1, field="text", match="duplicate 'text' column")
    path.write_text("text,,label\nx,1,y\n")
    _expect(f"csv:{path}", line=1, field="", match="empty column name")


def test_csv_malformed_quoting(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('text,label\n"ok",1\n"bad"x,1\n')
    _expect(f"csv:{path}", line=3, field=None, match="malformed CSV")


def test_csv_empty_text_cell(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("text,label\n,1\n")
    _expect(f"csv:{path}", line=2, field="text", match="empty text")


# --- bad input: parquet -------------------------------------------------------------------


def test_parquet_rows_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"text": ["a", "b"], "label": [0, 1]}), path)
    assert [s.label for s in load_dataset(f"parquet:{path}")] == ["benign", "attack"]
    pq.write_table(pa.table({"text": ["a", "b"], "label": [0, 3]}), path)
    _expect(f"parquet:{path}", line=2, field="label", match="unknown label value 3")
    pq.write_table(pa.table({"prompt": ["a"], "y": [1]}), path)
    _expect(f"parquet:{path}", line=None, field="label", match="no column 'label'")
    pq.write_table(
        pa.table({"text": pa.array([], pa.string()), "label": pa.array([], pa.int64())}), path
    )
    _expect(f"parquet:{path}", line=None, field=None, match="no rows")
    path.write_bytes(b"not parquet at all")
    _expect(f"parquet:{path}", line=None, field=None, match="not a readable parquet")
    _expect(f"parquet:{tmp_path / 'none.parquet'}", line=None, field=None, match="not found")


# --- bad input: PINT YAML ------------------------------------------------------------------


def test_pint_lines_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "# comment\n- text: hi\n  category: chat\n  label: false\n- text: Ignore it\n"
        "  category: prompt_injection\n  label: true\n"
    )
    ds = load_dataset(f"pint:{path}")
    assert [(s.id, s.label, s.category) for s in ds] == [
        ("line:2", "benign", "chat"),
        ("line:5", "attack", "prompt_injection"),
    ]
    path.write_text("- text: hi\n  label: false\n- text: [unclosed\n")
    _expect(f"pint:{path}", line=4, field=None, match="malformed YAML")
    path.write_text("text: hi\nlabel: true\n")
    _expect(f"pint:{path}", line=1, field=None, match="YAML list")
    path.write_text("- text: hi\n  label: false\n- just a string\n")
    _expect(f"pint:{path}", line=3, field=None, match="expected a mapping")
    path.write_text("- text: hi\n  label: 'perhaps'\n")
    _expect(f"pint:{path}", line=1, field="label", match="unknown label")
    path.write_text("# only a comment\n")
    _expect(f"pint:{path}", line=None, field=None, match="empty")


# --- the real public files ------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_raw_files(shared_datasets: Path) -> None:
    raw = shared_datasets / "raw"
    pint = load_dataset(f"pint:{raw / 'example-dataset.yaml'}")
    assert len(pint) == 8
    assert pint.label_counts() == {"attack": 2, "benign": 6}
    xs = load_dataset(
        f"csv({raw / 'xstest_prompts.csv'}, text=prompt, category=type, attack=unsafe, benign=safe)"
    )
    assert xs.label_counts() == {"attack": 200, "benign": 250}
    assert xs.samples[0].metadata["focus"] == "kill"
    train = next(raw.glob("train-*.parquet"))
    test = next(raw.glob("test-*.parquet"))
    n_train = len(load_dataset(f"parquet:{train}"))
    n_test = len(load_dataset(f"parquet:{test}"))
    deepset = load_dataset(f"jsonl:{shared_datasets / 'deepset.jsonl'}")
    assert n_train + n_test == len(deepset) == 662
    fuzz = load_dataset(f"csv({raw / 'GPTFuzzer.csv'}, fixed_label=attack)")
    assert len(fuzz) == 77


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "name",
    [
        "deepset",
        "giskard_pi",
        "inthewild_jailbreak",
        "gptfuzz",
        "strongreject",
        "bipia_train",
        "xstest",
        "gpteacher_roleplay",
        "alpaca_harmless_5k",
        "pint_example",
    ],
)
def test_normalized_shared_jsonl(shared_datasets: Path, name: str) -> None:
    path = shared_datasets / f"{name}.jsonl"
    ds = load_dataset(f"jsonl:{path}")
    lines = path.read_text(encoding="utf-8").split("\n")  # not splitlines: texts hold U+2028
    raw = [json.loads(line) for line in lines if line.strip()]
    assert len(ds) == len(raw)
    assert [s.id for s in ds] == [r["id"] for r in raw]
    assert [s.label for s in ds] == [r["label"] for r in raw]
    for sample, record in zip(ds, raw, strict=True):
        category, _, subcategory = record["category"].partition("/")
        assert (sample.category, sample.subcategory) == (category, subcategory or None)
        assert sample.source == record["source"]
