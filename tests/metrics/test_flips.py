"""``verdict_flips``: exactly the samples whose verdict differs, both ways (issue 30, 4).

The property: for any two runs, the flips listed are exactly the symmetric
difference of the two blocked sets over the samples both runs answered (split by
direction), plus one entry per shared sample answered by one run and failed in the
other (its own kind, never a block or an allow); nothing else, each sample once,
in the documented order.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.metrics import FLIP_KINDS, verdict_flips
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample, Verdict

_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_IDS = [f"s{i}" for i in range(12)]


def _mk(run_id: str, samples: tuple[Sample, ...], outcomes: tuple[Outcome, ...]) -> Run:
    info = DatasetInfo("inline", "sha256:x", len(samples))
    return Run(run_id, DefenseInfo(run_id, run_id), info, RunConfig(), samples, outcomes, _T0, _T0)


@st.composite
def _outcome(draw: st.DrawFn, sample_id: str) -> Outcome:
    status = draw(st.sampled_from(["ok", "ok", "ok", "error", "timeout"]))
    if status != "ok":
        return Outcome(sample_id, None, status, error=f"{status}: boom")
    score = draw(st.none() | st.floats(0, 1))
    return Outcome(sample_id, Verdict(draw(st.booleans()), score), "ok", latency_ms=1.0)


def _sample(sample_id: str, *, edited: bool = False) -> Sample:
    n = int(sample_id[1:])
    return Sample(
        sample_id,
        f"text {n}" + (" (edited)" if edited else ""),
        "attack" if n % 2 else "benign",
        category=f"c{n % 3}",
    )


@st.composite
def _run(draw: st.DrawFn, run_id: str, edited: frozenset[str] = frozenset()) -> Run:
    ids = draw(st.lists(st.sampled_from(_IDS), unique=True, max_size=len(_IDS)))
    samples = tuple(_sample(i, edited=i in edited) for i in ids)
    return _mk(run_id, samples, tuple(draw(_outcome(i)) for i in ids))


@st.composite
def _pair(draw: st.DrawFn) -> tuple[Run, Run]:
    edited = frozenset(draw(st.lists(st.sampled_from(_IDS), max_size=2)))
    return draw(_run("a")), draw(_run("b", edited))


@settings(max_examples=300)
@given(_pair())
def test_the_flips_are_exactly_the_verdicts_that_differ(pair: tuple[Run, Run]) -> None:
    a, b = pair
    out_a = {o.sample_id: o for o in a.outcomes}
    out_b = {o.sample_id: o for o in b.outcomes}
    sample_b = {s.id: s for s in b.samples}
    common = [s.id for s in a.samples if s.id in sample_b and sample_b[s.id] == s]
    answered = [i for i in common if out_a[i].status == "ok" and out_b[i].status == "ok"]
    blocked_a = {i for i in answered if out_a[i].verdict.blocked}  # type: ignore[union-attr]
    blocked_b = {i for i in answered if out_b[i].verdict.blocked}  # type: ignore[union-attr]
    failed_a = {i for i in common if out_a[i].status != "ok"}
    failed_b = {i for i in common if out_b[i].status != "ok"}

    flips = verdict_flips(a, b)
    by_kind = {k: {f.sample_id for f in flips.of_kind(k)} for k in FLIP_KINDS}
    assert by_kind["blocked_to_allowed"] == blocked_a - blocked_b
    assert by_kind["allowed_to_blocked"] == blocked_b - blocked_a
    assert by_kind["blocked_to_allowed"] | by_kind["allowed_to_blocked"] == blocked_a ^ blocked_b
    assert by_kind["ok_to_failed"] == failed_b - failed_a
    assert by_kind["failed_to_ok"] == failed_a - failed_b
    assert len(flips.flips) == len({f.sample_id for f in flips.flips})  # each sample once
    assert flips.n_common == len(common)
    assert flips.n_common + flips.n_only_a + flips.n_mismatched == len(a.samples)
    assert flips.n_common + flips.n_only_b + flips.n_mismatched == len(b.samples)
    assert flips.counts() == {k: len(v) for k, v in by_kind.items()}

    for f in flips.flips:
        sa = next(s for s in a.samples if s.id == f.sample_id)
        oa, ob = out_a[f.sample_id], out_b[f.sample_id]
        assert (f.text, f.label, f.category) == (sa.text, sa.label, sa.category)
        assert (f.status_a, f.status_b) == (oa.status, ob.status)
        assert f.score_a == (None if oa.verdict is None else oa.verdict.score)
        assert f.score_b == (None if ob.verdict is None else ob.verdict.score)
        if f.kind in ("ok_to_failed", "failed_to_ok"):
            assert f.effect is None
            assert (f.blocked_a is None) != (f.blocked_b is None)  # never read as block/allow
        else:
            worse = (f.kind == "blocked_to_allowed") == (f.label == "attack")
            assert f.effect == ("worse" if worse else "better")

    # order: kind, then worse before better, then the largest score change first
    keys = [
        (
            FLIP_KINDS.index(f.kind),
            {"worse": 0, "better": 1}.get(f.effect or "", 2),
            f.score_change is None,
            -abs(f.score_change or 0.0),
        )
        for f in flips.flips
    ]
    assert keys == sorted(keys)

    # and the other way round: the mirror image
    back = verdict_flips(b, a)
    mirror = {"blocked_to_allowed": "allowed_to_blocked", "ok_to_failed": "failed_to_ok"}
    mirror |= {v: k for k, v in mirror.items()}
    assert {(f.sample_id, mirror[f.kind]) for f in back.flips} == {
        (f.sample_id, f.kind) for f in flips.flips
    }


def test_a_run_against_itself_has_no_flip_and_json_keeps_every_field() -> None:
    samples = tuple(_sample(f"s{i}") for i in range(4))
    outcomes = (
        Outcome("s0", Verdict(True, 0.9), "ok"),
        Outcome("s1", None, "timeout", error="TimeoutError: 30 s"),
        Outcome("s2", Verdict(False, None), "ok"),
        Outcome("s3", None, "error", error="boom"),
    )
    a = _mk("a", samples, outcomes)
    assert verdict_flips(a, a).flips == ()
    b_outcomes = (
        Outcome("s0", None, "error", error="HTTP 503"),
        Outcome("s1", Verdict(True, 0.7), "ok"),
        Outcome("s2", Verdict(True, None), "ok"),
        Outcome("s3", None, "timeout", error="slow"),  # failed both sides: not a change
    )
    b = _mk("b", samples, b_outcomes)
    flips = verdict_flips(a, b)
    assert [(f.sample_id, f.kind) for f in flips.flips] == [
        ("s2", "allowed_to_blocked"),
        ("s0", "ok_to_failed"),
        ("s1", "failed_to_ok"),
    ]
    data = flips.to_dict(text_limit=3)
    first = data["flips"][1]
    assert first["a"] == {"status": "ok", "blocked": True, "score": 0.9, "error": None}
    assert first["b"] == {"status": "error", "blocked": None, "score": None, "error": "HTTP 503"}
    assert first["text"] == "tex"
    assert first["text_truncated"] is True
    assert data["counts"] == {
        "blocked_to_allowed": 0,
        "allowed_to_blocked": 1,
        "ok_to_failed": 1,
        "failed_to_ok": 1,
    }


def test_the_preview_is_one_line_and_cut() -> None:
    samples = (Sample("s0", "line one\n\tline two   " + "x" * 100, "attack"),)
    a = _mk("a", samples, (Outcome("s0", Verdict(True), "ok"),))
    b = _mk("b", samples, (Outcome("s0", Verdict(False), "ok"),))
    (flip,) = verdict_flips(a, b).flips
    assert flip.preview(20) == "line one line two x…"
    assert len(flip.preview(20)) == 20
