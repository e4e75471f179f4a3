"""builtin:core as a whole: size, taxonomy, tiers, schema, and no duplicates.

The corpus is the project's reference benchmark, so the promises its datasheet
makes are checked here against the shipped files: the counts (at least 1,000
samples, at least 40 per attack subcategory, at least 400 benign), the exact
taxonomy names, every difficulty tier in every category with enough samples for
a rate, valid severities, the record schema and id scheme, encodings that really
decode, and no exact or near-duplicate texts anywhere in the corpus (attacks and
benign together), so that no breakdown is inflated by copies. It also checks that
two format shortcuts stay closed: "is a chat transcript" and "contains a long
encoded blob" must not separate attacks from benign traffic on their own, so the
benign half holds enough transcripts and encoded data, and their encodings are real.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import string
import unicodedata
from collections import Counter
from importlib.resources import files
from importlib.resources.abc import Traversable

import pytest

from shieldbench.datasets import load_dataset
from shieldbench.datasets._similarity import near_duplicates, normalize_text
from shieldbench.types import SEVERITIES, Sample

TAXONOMY: dict[str, tuple[str, ...]] = {
    "direct_injection": ("instruction_override", "role_switching", "constraint_bypass"),
    "indirect_injection": ("rag_injection", "tool_output_injection", "document_injection"),
    "jailbreak": ("persona_based", "encoding_based", "multi_turn", "hypothetical"),
    "extraction": ("prompt_extraction", "data_extraction", "pii_extraction"),
    "output_manipulation": ("format_injection", "content_steering", "hallucination_induction"),
}
SUBCATEGORIES = [(cat, sub) for cat, subs in TAXONOMY.items() for sub in subs]
AUTHORED_TIERS = ("known", "paraphrased", "semantic", "novel")  # "adaptive" comes from attacks/
BENIGN_KINDS = frozenset(
    {
        "everyday",
        "coding",
        "security_education",
        "false_positive_risk",
        "conversational",
        "roleplay_creative",
        "documents",
        "transcripts",
        "encoded_data",
    }
)
FIELDS = frozenset(
    {"id", "text", "label", "category", "subcategory", "severity", "tier", "language"}
)
MIN_SAMPLES = 1000
MIN_PER_SUBCATEGORY = 40
MIN_BENIGN = 400
MIN_TIER_SHARE = 0.15  # of each category, so every tier supports a rate per category
MIN_NON_ENGLISH_SHARE = 0.10


def _core_folder() -> Traversable:
    return files("shieldbench.datasets").joinpath("builtin", "core")


def _raw_records() -> list[tuple[str, int, dict[str, object]]]:
    """(file name, line number, record) for every line of every core file."""
    out = []
    for f in sorted(_core_folder().iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".jsonl"):
            continue
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            out.append((f.name, lineno, json.loads(line)))
    return out


def _strict_normal_form(text: str) -> str:
    """Case, spacing and punctuation never make two texts different."""
    stripped = normalize_text(text).translate(str.maketrans("", "", string.punctuation))
    return " ".join(stripped.split())


@pytest.fixture(scope="module")
def core() -> list[Sample]:
    return list(load_dataset("builtin:core").samples)


@pytest.fixture(scope="module")
def attacks(core: list[Sample]) -> list[Sample]:
    return [s for s in core if s.label == "attack"]


@pytest.fixture(scope="module")
def benign(core: list[Sample]) -> list[Sample]:
    return [s for s in core if s.label == "benign"]


# --- size and taxonomy ---------------------------------------------------------------


def test_corpus_size(core: list[Sample], benign: list[Sample]) -> None:
    assert len(core) >= MIN_SAMPLES
    assert len(benign) >= MIN_BENIGN


def test_attack_taxonomy_is_exactly_the_documented_one(attacks: list[Sample]) -> None:
    found = {(s.category, s.subcategory) for s in attacks}
    assert found == set(SUBCATEGORIES)


@pytest.mark.parametrize(("category", "subcategory"), SUBCATEGORIES)
def test_enough_samples_per_subcategory(
    attacks: list[Sample], category: str, subcategory: str
) -> None:
    n = sum(s.category == category and s.subcategory == subcategory for s in attacks)
    assert n >= MIN_PER_SUBCATEGORY, f"{category}/{subcategory}: {n}"


@pytest.mark.parametrize("category", list(TAXONOMY))
def test_every_tier_in_every_category(attacks: list[Sample], category: str) -> None:
    in_category = [s for s in attacks if s.category == category]
    tiers: Counter[str | None] = Counter(s.tier for s in in_category)
    assert set(tiers) == set(AUTHORED_TIERS), tiers
    for tier in AUTHORED_TIERS:
        share = tiers[tier] / len(in_category)
        assert share >= MIN_TIER_SHARE, f"{category}: tier {tier} is {share:.0%}"


@pytest.mark.parametrize(("category", "subcategory"), SUBCATEGORIES)
def test_every_tier_in_every_subcategory(
    attacks: list[Sample], category: str, subcategory: str
) -> None:
    tiers = {s.tier for s in attacks if s.subcategory == subcategory}
    assert tiers == set(AUTHORED_TIERS), f"{category}/{subcategory}: {tiers}"


def test_benign_kinds_are_the_documented_ones(benign: list[Sample]) -> None:
    assert {s.subcategory for s in benign} == BENIGN_KINDS
    assert {s.category for s in benign} == {"benign"}


# --- schema ---------------------------------------------------------------------------


def test_severity_and_tier_follow_the_label(core: list[Sample]) -> None:
    for s in core:
        if s.label == "attack":
            assert s.severity in SEVERITIES, s.id
            assert s.tier in AUTHORED_TIERS, s.id
        else:
            assert s.severity is None, s.id
            assert s.tier is None, s.id


def test_every_severity_is_used(attacks: list[Sample]) -> None:
    assert {s.severity for s in attacks} == set(SEVERITIES)


def test_records_have_exactly_the_documented_fields() -> None:
    records = _raw_records()
    assert records
    for name, lineno, record in records:
        assert set(record) == FIELDS, f"{name}:{lineno}: {sorted(set(record) ^ FIELDS)}"


def test_attack_files_hold_one_category_each() -> None:
    for name, lineno, record in _raw_records():
        if record["label"] == "attack":
            assert name == f"{record['category']}.jsonl", f"{name}:{lineno}"
        else:
            assert name.startswith("benign_"), f"{name}:{lineno}"


def test_ids_are_unique_and_follow_the_scheme(core: list[Sample]) -> None:
    ids = Counter(s.id for s in core)
    assert [i for i, n in ids.items() if n > 1] == []
    for s in core:
        if s.label == "attack":
            pattern = rf"core-{s.category}-{s.subcategory}-\d{{3}}"
        else:
            pattern = rf"core-benign-{s.subcategory}-\d{{3}}"
        assert re.fullmatch(pattern, s.id), s.id


def test_texts_are_clean(core: list[Sample]) -> None:
    for s in core:
        assert s.text.strip(), s.id
        assert s.text == s.text.strip(), s.id
        # Format characters (zero-width, tag characters) are deliberate attack
        # material; control characters other than newline and tab are not.
        controls = {c for c in s.text if unicodedata.category(c) == "Cc"} - {"\n", "\t"}
        assert not controls, (s.id, controls)


def test_languages(core: list[Sample], attacks: list[Sample]) -> None:
    for s in core:
        assert re.fullmatch(r"[a-z]{2}", s.metadata["language"]), s.id
    non_english = sum(s.metadata["language"] != "en" for s in attacks)
    assert non_english / len(attacks) >= MIN_NON_ENGLISH_SHARE


# --- encodings really encode -----------------------------------------------------------

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?<![0-9a-f])(?:[0-9a-f]{2}[ -]?){12,}(?![0-9a-f])")


def _decodings(token: str) -> list[bytes]:
    """Every way ``token`` decodes as binary, hex, Base64 or Base32 (padding restored)."""
    out = []
    digits = re.sub(r"[ -]", "", token)
    if re.fullmatch(r"(?:[01]{8})+", digits):
        out.append(bytes(int(digits[i : i + 8], 2) for i in range(0, len(digits), 8)))
    if re.fullmatch(r"(?:[0-9a-f]{2})+", digits):
        out.append(bytes.fromhex(digits))
    if digits != token:  # separated hex or binary groups are not Base64
        return out
    padded = token.rstrip("=")
    for decode, block in ((base64.b64decode, 4), (base64.b32decode, 8)):
        with contextlib.suppress(binascii.Error, ValueError):
            out.append(decode(padded + "=" * (-len(padded) % block)))
    return out


def _readable(raw: bytes) -> bool:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return sum(c.isalpha() or c.isspace() for c in text) / max(len(text), 1) > 0.7


def test_encoded_payloads_decode_to_text(attacks: list[Sample]) -> None:
    encoded = [s for s in attacks if s.subcategory == "encoding_based"]
    checked = 0
    for s in encoded:
        for token in _BASE64.findall(s.text):
            if re.fullmatch(r"[A-Za-z]+", token):
                continue  # an ordinary long word, not an encoding
            assert any(_readable(raw) for raw in _decodings(token)), (s.id, token[:20])
            checked += 1
        for token in _HEX.findall(s.text):
            assert any(_readable(raw) for raw in _decodings(token)), (s.id, token[:20])
            checked += 1
    assert checked >= 10  # the check itself must have found the encodings


def test_tag_character_payloads_decode_to_ascii(attacks: list[Sample]) -> None:
    hidden = [
        "".join(chr(ord(c) - 0xE0000) for c in s.text if 0xE0020 <= ord(c) <= 0xE007E)
        for s in attacks
    ]
    payloads = [h for h in hidden if h]
    assert payloads
    assert all(_readable(h.encode()) for h in payloads), payloads


# --- no duplicates ---------------------------------------------------------------------


def test_no_exact_duplicates(core: list[Sample]) -> None:
    forms: dict[str, str] = {}
    clashes = []
    for s in core:
        form = _strict_normal_form(s.text)
        if form in forms:
            clashes.append((forms[form], s.id))
        forms[form] = s.id
    assert clashes == []


def test_no_near_duplicates(core: list[Sample]) -> None:
    pairs = near_duplicates([s.text for s in core], threshold=0.8)
    assert [(core[i].id, core[j].id, round(sim, 3)) for i, j, sim in pairs] == []


# --- format shortcuts: transcripts and encoded blobs are not attack-only ---------------

MIN_BENIGN_WITH_FORMAT = 50

# A speaker line: a role label ("User:", "Human:", "Agent (Mira):", "Utilisateur :",
# "Turn 2 — User:") or any name after a timestamp ("[11:02] Priya:", "00:00:04 Rachel Kim:").
_ROLES = "|".join(
    (
        "User|Human|Assistant|AI|Bot|You|Customer|Client|Agent|Support(?: engineer)?",
        "Helpdesk|Interviewer|Candidate|Student|Tutor|Teacher|Host|Guest|Caller|Nurse",
        "Player|Keeper|Game master|GM|DM|Librarian|Mechanic|Visitor|Guide|Developer|Employee",
        "Child|Parent|OP|Waiter|Usuario|Usuário|Utilisateur|Nutzer|Utente|Gebruiker",
        "Asistente|Assistente|Assistent|Cliente|Atendente|Kunde|Bewerberin|Aluno",
        "Entrevistadora|Entrevistado",
    )
)
_TIMESTAMP = r"(?:\[[^\]\n]{1,24}\]|\d{1,2}:\d{2}(?::\d{2})?)"
_NAME = r"[^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*)?"
_SPEAKER_LINE = re.compile(
    rf"^[ \t]*(?:(?:Turn \d+ [—-] )?(?P<role>{_ROLES})|{_TIMESTAMP}[ \t]+(?P<name>{_NAME}))"
    r"(?:[ \t]*\([^)\n]{1,30}\))?[ \t]?:[ \t]",
    re.MULTILINE,
)
# Base64 / Base64url runs of 24+ characters mixing upper case, lower case and digits
# (so long words and paths do not count), and 12+ hex bytes, optionally spaced.
_BLOB_BASE64 = re.compile(r"(?<![\w+/-])[A-Za-z0-9+/_-]{24,}={0,2}")
_BLOB_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ -]{0,2}){12,}(?![0-9A-Fa-f])")
_JWT = re.compile(r"\b(eyJ[\w-]+)\.(eyJ[\w-]+)\.[\w-]{16,}")
_DATA_URI = re.compile(r"data:(image/[\w+.-]+);base64,([A-Za-z0-9+/]+={0,2})")
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/gif": b"GIF89a", "image/svg+xml": b"<svg"}


def _is_transcript(text: str) -> bool:
    """Three or more speaker lines from at least two speakers."""
    speakers = [m["role"] or m["name"] for m in _SPEAKER_LINE.finditer(text)]
    return len(speakers) >= 3 and len(set(speakers)) >= 2


def _has_blob(text: str) -> bool:
    for token in _BLOB_BASE64.findall(text):
        if all(re.search(chars, token) for chars in ("[A-Z]", "[a-z]", "[0-9]")):
            return True
    return any(re.search("[0-9]", token) for token in _BLOB_HEX.findall(text))


def _b64url_json(segment: str) -> object:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def test_format_detectors_recognise_the_attack_formats(attacks: list[Sample]) -> None:
    # The detectors below are the shortcut itself: they must fire on the attacks.
    multi_turn = [s for s in attacks if s.subcategory == "multi_turn"]
    assert all(_is_transcript(s.text) for s in multi_turn), [
        s.id for s in multi_turn if not _is_transcript(s.text)
    ]
    encoded = [s for s in attacks if s.subcategory == "encoding_based"]
    assert sum(_has_blob(s.text) for s in encoded) >= 10
    assert not _is_transcript("From: a@example.org\nTo: b@example.org\nSubject: hi\n\nhello")
    assert not _has_blob("see /usr/local/lib/python3/site-packages and internationalization")


def test_transcript_format_alone_does_not_separate_the_classes(benign: list[Sample]) -> None:
    transcripts = [s for s in benign if _is_transcript(s.text)]
    assert len(transcripts) >= MIN_BENIGN_WITH_FORMAT, len(transcripts)
    assert len({s.metadata["language"] for s in transcripts}) >= 4


def test_encoded_blobs_alone_do_not_separate_the_classes(benign: list[Sample]) -> None:
    with_blob = [s for s in benign if _has_blob(s.text)]
    assert len(with_blob) >= MIN_BENIGN_WITH_FORMAT, len(with_blob)
    assert len({s.metadata["language"] for s in with_blob}) >= 4


def test_benign_encoded_data_is_really_encoded(benign: list[Sample]) -> None:
    """JWT segments are JSON and data: URIs hold the image type they declare."""
    encoded = [s.text for s in benign if s.subcategory == "encoded_data"]
    jwts = [m.groups() for text in encoded for m in _JWT.finditer(text)]
    images = [m.groups() for text in encoded for m in _DATA_URI.finditer(text)]
    assert len(jwts) >= 3
    assert len(images) >= 5
    for header, payload in jwts:
        decoded_header = _b64url_json(header)
        assert isinstance(decoded_header, dict)
        assert "alg" in decoded_header, header
        assert isinstance(_b64url_json(payload), dict), payload
    for mime, data in images:
        raw = base64.b64decode(data, validate=True)
        assert raw.startswith(_MAGIC[mime]), (mime, data[:20])
