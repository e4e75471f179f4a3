"""The attack pages over both kinds of record, on SQLite and on a real PostgreSQL.

The history of ``conftest.py`` holds a mutator search and PAIR and Crescendo attacks
run by the real CLI against a loopback scripted attacker, their goals, the attacker's
prompts and the target's answers carrying script and attribute-breaking payloads,
plus a record of a kind this shieldbench does not know and one with a malformed step.
What the pages show is checked against the records read back through the library
(:meth:`LLMAttackResult.from_dict`) and the report's own parts (``llm_asr_svg``,
``llm_failure_steps``); the escaping by parsing the HTML.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from shieldbench.attacks import LLMAttackResult, Step
from shieldbench.reports import llm_asr_svg, llm_failure_steps
from shieldbench.store import open_store
from shieldbench.view._llm_attack import (
    BEST_STEPS,
    GOALS_PER_PAGE,
    PREVIEW_CHARS,
    STEPS_PER_PAGE,
)

from ._hostile_model import ANSWER_PAYLOAD
from .conftest import (
    GOAL_ATTRIBUTE,
    GOAL_SCRIPT,
    HOSTILE_CATEGORY,
    PWN,
    UNKNOWN_KIND,
    History,
    Server,
)
from .test_api import _get, _safe

pytestmark = pytest.mark.slow


def _record(history: History, attack_id: str) -> LLMAttackResult:
    with open_store(history.url, read_only=True) as store:
        return LLMAttackResult.from_dict(store.get_attack(attack_id), source=attack_id)


def _rate(r: Any) -> str:
    """A rate as the pages print it: ``12.3% [10.1–14.9] <span ...>k/n</span>``."""
    return (
        f"{100 * r.value:.1f}% [{100 * r.ci_low:.1f}–{100 * r.ci_high:.1f}]"
        f' <span class="muted">{r.k}/{r.n}</span>'
    )


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="attack-row".*?</tr>', html, re.S)


def test_the_list_shows_every_stored_attack_newest_first_with_kind_and_figures(
    viewer: Server, history: History
) -> None:
    html = _get(viewer, "/attacks")
    _safe(html)
    with open_store(history.url, read_only=True) as store:
        infos = store.attack_infos()
    rows = _rows(html)
    assert [re.search(r'class="attack-link" href="/attacks/([^"]+)"', r)[1] for r in rows] == [  # type: ignore[index]
        i.id for i in infos
    ]
    assert len(infos) == 6  # nothing is left out: the unknown and the broken record too
    by_id = {re.search(r'href="/attacks/([^"]+)"', r)[1]: r for r in rows}  # type: ignore[index]
    pair = _record(history, history.llm.pair)
    row = by_id[history.llm.pair]
    assert '<span class="attack-kind">PAIR</span>' in row
    for rate in (pair.static_asr, pair.asr, pair.preserving_asr):
        assert _rate(rate) in row
    assert f">{pair.queries} / {pair.settings.budget.queries}</td>" in row
    assert '<span class="attack-kind">Crescendo</span>' in by_id[history.llm.crescendo]
    assert '<span class="attack-kind">TAP</span>' in by_id[history.llm.tap]
    assert '<span class="attack-kind">mutator search (' in by_id[history.attack]
    unknown = by_id[history.llm.unknown]
    assert f'<span class="attack-kind">{UNKNOWN_KIND}</span>' in unknown
    assert "cannot show" in unknown
    assert "cannot show" not in by_id[history.llm.pair]


def test_an_llm_attack_page_renders_what_the_report_renders(
    viewer: Server, history: History
) -> None:
    r = _record(history, history.llm.pair)
    html = _get(viewer, f"/attacks/{history.llm.pair}")
    _safe(html)
    assert "<h1>PAIR attack on " in html
    for rate in (r.static_asr, r.asr, r.preserving_asr):
        assert _rate(rate) in html
    assert f"{r.queries} of {r.settings.budget.queries}" in html
    assert llm_asr_svg([r]).strip() in html  # the report's chart, the comparison dashed
    assert "mutators @ pair budget" in html
    failed = llm_failure_steps(r)
    table = html.split("Where the defense failed")[1].split("</table>")[0]
    cells = [int(c) for c in re.findall(r'<td class="num">(\d+)</td>', table)]
    assert cells == [x for pair in failed.counts for x in pair] + [failed.held]
    assert "Mutator search at equal budget" in html
    assert r.comparison is not None
    assert _rate(r.comparison.figures.preserving_asr) in html
    assert "Transfer of the bypasses" in html
    assert r.transfer[0].defense.spec in html
    goals = html.split('id="llm-goals"')[1].split("</table>")[0]
    assert len(re.findall(r'class="goal-link"', goals)) == len(r.outcomes) == 2
    assert html.count('<details class="best-transcript">') == sum(o.preserved for o in r.outcomes)
    tap = _get(viewer, f"/attacks/{history.llm.tap}")
    _safe(tap)
    assert "<h1>TAP attack on " in tap
    crescendo = _get(viewer, f"/attacks/{history.llm.crescendo}")
    _safe(crescendo)
    assert "<h1>Crescendo attack on " in crescendo
    assert '<th class="num">Turn</th>' in crescendo


def test_everything_from_the_data_the_attacker_and_the_model_is_escaped(
    viewer: Server, history: History
) -> None:
    r = _record(history, history.llm.pair)
    pages = [_get(viewer, f"/attacks/{history.llm.pair}")]
    pages += [_get(viewer, f"/attacks/{history.llm.pair}/goals/{i}") for i in range(2)]
    for other in (history.llm.tap, history.llm.crescendo):
        pages += [_get(viewer, f"/attacks/{other}/goals/{i}") for i in range(2)]
    for html in pages:
        _safe(html)
        assert f"<script>{PWN}" not in html
        assert f'" onmouseover="{PWN}"' not in html
    first, second = pages[1], pages[2]
    assert str(escape(GOAL_SCRIPT)) in first  # the goal
    assert str(escape(HOSTILE_CATEGORY)) in first  # its category
    assert str(escape(GOAL_ATTRIBUTE)) in second
    prompts = [s.text for o in r.outcomes for s in o.steps if s.text]
    answers = [s.answer for o in r.outcomes for s in o.steps if s.answer]
    assert any("<script>" in p for p in prompts)  # the attacker's prompts carry the payload
    assert any(ANSWER_PAYLOAD in a for a in answers)  # and so does the model's answer
    assert str(escape(r.outcomes[0].steps[0].text or "")) in first
    answered = next(s for s in r.outcomes[0].steps if s.answer)
    assert str(escape(answered.answer or "")) in first
    assert "attack succeeded" in first  # the judge's verdict on it


def test_unknown_malformed_and_missing_records_answer_pages_naming_them(
    viewer: Server, history: History
) -> None:
    unknown = _get(viewer, f"/attacks/{history.llm.unknown}", status=422)
    assert f"attack &#39;{history.llm.unknown}&#39;" in unknown
    assert UNKNOWN_KIND in unknown
    broken = _get(viewer, f"/attacks/{history.llm.broken}", status=422)
    assert f"attack &#39;{history.llm.broken}&#39;" in broken
    assert "steps[0]" in broken
    assert "step field &#39;stream&#39;" in broken
    assert "Traceback" not in broken
    assert "no stored attack with id &#39;no-such-attack&#39;" in _get(
        viewer, "/attacks/no-such-attack", status=404
    )
    _get(viewer, f"/attacks/{history.llm.pair}/goals/99", status=404)
    _get(viewer, f"/attacks/{history.attack}/goals/0", status=404)
    _get(viewer, f"/attacks/{history.llm.pair}/bypasses/0", status=404)
    _get(viewer, f"/attacks/{history.llm.pair}?page=9", status=400)
    _get(viewer, f"/attacks/{history.llm.pair}/goals/0?page=0", status=400)


def _long(r: LLMAttackResult, steps: int, answer: str, goals: int) -> LLMAttackResult:
    """``r`` with ``goals`` goals, the first with a transcript of ``steps`` steps (built
    from the library's own :class:`Step`), each answered with ``answer``."""
    first = r.outcomes[0]
    many = tuple(
        Step("sent", i % 3, i // 3, text=f"prompt {i} <b>", blocked=True, score=0.7, answer=answer)
        for i in range(steps)
    )
    more = [dataclasses.replace(r.outcomes[1], sample_id=f"z-extra-{i}") for i in range(goals - 1)]
    meta = dataclasses.replace(r.meta, id="long-transcript")
    return dataclasses.replace(
        r, outcomes=(dataclasses.replace(first, steps=many), *more), meta=meta
    )


def test_a_long_transcript_is_paged_and_long_texts_folded(
    sqlite_history: History, tmp_path: Path
) -> None:
    answer = "A" * 1000 + f"<script>{PWN}</script>"
    url = str(tmp_path / "long.db")
    record = _long(_record(sqlite_history, sqlite_history.llm.pair), 60, answer, goals=60)
    with open_store(url) as store:
        assert store.add_attack(record.to_dict())
    with open_store(url, read_only=True) as store:
        server = Server(store)
        try:
            with server.client() as client:
                path = "/attacks/long-transcript"
                pages = [client.get(f"{path}/goals/0?page={p}") for p in (1, 2, 3)]
                past_the_end = client.get(f"{path}/goals/0?page=4")
                attack = client.get(path).text
                goal_pages = [client.get(f"{path}?page={p}").text for p in (1, 2)]
        finally:
            server.stop()
    assert [p.status_code for p in pages] == [200, 200, 200]
    counts = [p.text.count('<tr class="step step-sent">') for p in pages]
    assert counts == [STEPS_PER_PAGE, STEPS_PER_PAGE, 60 - 2 * STEPS_PER_PAGE]
    assert "prompt 50 &lt;b&gt;" in pages[2].text
    assert 'rel="prev"' in pages[2].text
    assert past_the_end.status_code == 400
    one = pages[0].text
    _safe(one)
    preview = "A" * PREVIEW_CHARS + "…</pre>"
    assert one.count(preview) == STEPS_PER_PAGE  # each answer cut to its preview
    assert one.count('<details class="full">') == STEPS_PER_PAGE  # the whole text folded
    assert str(escape(answer)) in one
    _safe(attack)
    folded = attack.split('<details class="best-transcript">')[1:]
    (best,) = [b for b in folded if b.startswith("<summary>goal 0:")]
    assert best.count('<tr class="step step-sent">') == BEST_STEPS  # its first steps only
    links = [p.count('class="goal-link"') for p in goal_pages]
    assert links == [GOALS_PER_PAGE, 60 - GOALS_PER_PAGE]  # the goal table, paged
    assert 'href="/attacks/long-transcript/goals/59"' in goal_pages[1]
