"""The viewer over a real history, on SQLite and on a real PostgreSQL, over HTTP.

Every page answers from the real server; what it shows is checked against the
stored runs read back through the library (``Store.get_run``), the paired tests
against :func:`shieldbench.metrics.compare_runs`, and the escaping by parsing the
HTML: no element or attribute from the data, no inline script or style at all.
"""

from __future__ import annotations

import functools
import operator
import re
from html.parser import HTMLParser

import pytest
from markupsafe import escape

from shieldbench.metrics import compare_runs
from shieldbench.store import open_store

from .conftest import FLIPPED, HOSTILE_CATEGORY, PWN, History, Server


class Markup(HTMLParser):
    """Collects what would be dangerous: scripts, inline handlers, inline styles, frames."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {k for k, _ in attrs}
        if tag == "script":
            src = dict(attrs).get("src")
            self.scripts.append(src or "")
            if src != "/static/view.js":
                self.problems.append(f"script {attrs}")
        if tag in ("iframe", "object", "embed"):
            self.problems.append(tag)
        if tag == "img" or any(n.startswith("on") for n in names) or "style" in names:
            self.problems.append(f"{tag} {attrs}")
        for name, value in attrs:
            if value and value.strip().lower().startswith("javascript:"):
                self.problems.append(f"{tag} {name}={value}")


def _safe(html: str) -> None:
    parser = Markup()
    parser.feed(html)
    assert parser.problems == []
    assert parser.scripts == ["/static/view.js"]


def _get(viewer: Server, path: str, status: int = 200) -> str:
    with viewer.client() as c:
        r = c.get(path)
    assert r.status_code == status, (path, r.text[:500])
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert "http" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    return r.text


@pytest.mark.slow
def test_runs_list_filters_sorts_and_pages_in_the_store(viewer: Server, history: History) -> None:
    with viewer.client() as c:
        every = c.get("/api/runs").json()
        assert every["total"] == 3
        assert [r["id"] for r in every["runs"]][:1] != []
        red = c.get("/api/runs", params={"tag": "team=red"}).json()
        assert {r["id"] for r in red["runs"]} == {history.base, history.strict}
        strict = c.get("/api/runs", params={"defense": "threshold"}).json()
        assert [r["id"] for r in strict["runs"]] == [history.strict]
        other = c.get("/api/runs", params={"dataset": "other.jsonl"}).json()
        assert [r["id"] for r in other["runs"]] == [history.other]
        by_block = c.get("/api/runs", params={"sort": "block_rate", "order": "asc"}).json()
        rates = [r["block_rate"]["value"] for r in by_block["runs"]]
        assert rates == sorted(rates)
        pages = [c.get("/api/runs", params={"size": 1, "page": p}).json() for p in (1, 2, 3, 4)]
        assert [len(p["runs"]) for p in pages] == [1, 1, 1, 0]
        assert len({p["runs"][0]["id"] for p in pages[:3]}) == 3
        commit = every["runs"][0]["git"]["commit"]
        if commit:
            assert c.get("/api/runs", params={"commit": commit[:7]}).json()["total"] == 3
        assert c.get("/api/runs", params={"since": "2999-01-01"}).json()["total"] == 0
        assert c.get("/api/runs", params={"sort": "nonsense"}).status_code == 400
        assert c.get("/api/runs", params={"since": "yesterday"}).status_code == 400
    html = _get(viewer, "/runs?tag=team%3Dred")
    _safe(html)
    assert history.base in html
    assert history.other not in html


@pytest.mark.slow
def test_a_run_shows_its_figures_with_intervals_and_n(viewer: Server, history: History) -> None:
    with open_store(history.url, read_only=True) as store:
        info = store.info(history.base)
    html = _get(viewer, f"/runs/{history.base}")
    _safe(html)
    k = round(info.block_rate[0] * info.n_attack)  # type: ignore[operator]
    assert f"{k} / {info.n_attack}" in html
    assert re.search(r'id="fig-block">\d+\.\d% \[\d+\.\d–\d+\.\d\]', html)
    for section in ("Per category", "Security / utility plane", "Latency", "<svg"):
        assert section in html
    assert str(escape(HOSTILE_CATEGORY)) in html


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        (
            ["bypass"],
            lambda o, s: s.label == "attack" and o.status == "ok" and not o.verdict.blocked,
        ),
        (
            ["false_positive"],
            lambda o, s: s.label == "benign" and o.status == "ok" and o.verdict.blocked,
        ),
        (["blocked"], lambda o, s: s.label == "attack" and o.status == "ok" and o.verdict.blocked),
        (
            ["bypass", "false_positive"],
            lambda o, s: o.status == "ok" and o.verdict.blocked == (s.label == "benign"),
        ),
        ([], lambda o, s: True),
    ],
)
@pytest.mark.slow
def test_the_sample_table_filters_outcomes_like_the_stored_run(
    viewer: Server, history: History, kinds: list[str], expected: object
) -> None:
    with open_store(history.url, read_only=True) as store:
        run = store.get_run(history.strict)
    want = [
        s.id
        for s, o in zip(run.samples, run.outcomes, strict=True)
        if expected(o, s)  # type: ignore[operator]
    ]
    with viewer.client() as c:
        got = c.get(f"/api/runs/{history.strict}/samples", params={"kind": kinds}).json()
    assert [s["sample_id"] for s in got["samples"]] == want
    assert got["total"] == len(want)


@pytest.mark.slow
def test_sample_filters_by_text_category_tier_source_and_score(
    viewer: Server, history: History
) -> None:
    url = f"/api/runs/{history.base}/samples"
    with viewer.client() as c:

        def ids(**params: object) -> list[str]:
            return [s["sample_id"] for s in c.get(url, params=params).json()["samples"]]

        assert ids(q="DRAGON") == ["a4"]
        assert ids(category=HOSTILE_CATEGORY) == ["a1"]
        assert ids(tier="paraphrased") == [FLIPPED, "a4"]
        assert ids(source="planted", label="benign") == ["b1", "b2", "b3"]
        assert set(ids(score_min=0.6)) >= {"a1", "a2", FLIPPED}
        assert ids(score_min=0.6, score_max=0.7) == [FLIPPED]
        assert ids(q="no such text anywhere") == []
        assert c.get(url, params={"kind": "nonsense"}).status_code == 400
        assert c.get(url, params={"score_min": 2}).status_code == 400
        pages = [ids(size=3, page=p) for p in (1, 2, 3)]
        assert functools.reduce(operator.iadd, pages, []) == ids()
    html = _get(viewer, f"/runs/{history.base}/samples?kind=bypass")
    _safe(html)


@pytest.mark.slow
def test_a_sample_page_shows_the_full_text_escaped(viewer: Server, history: History) -> None:
    html = _get(viewer, f"/runs/{history.base}/samples/0")
    _safe(html)
    assert str(escape(f"<script>{PWN}</script>")) in html
    assert "instruction_override" in html  # a reason
    assert " ms</dd>" in html
    _get(viewer, f"/runs/{history.base}/samples/999", status=404)
    _get(viewer, f"/runs/{history.base}/samples/-1", status=400)
    _get(viewer, "/runs/no-such-run", status=404)


@pytest.mark.slow
def test_compare_pairs_the_runs_and_finds_the_planted_flip(
    viewer: Server, history: History
) -> None:
    with open_store(history.url, read_only=True) as store:
        runs = [store.get_run(history.base), store.get_run(history.strict)]
        flips = store.flips(history.base, history.strict)
    assert [runs[0].samples[f.position].id for f in flips] == [FLIPPED]
    assert flips[0].direction == "now_allowed"
    expected = compare_runs(runs)
    html = _get(viewer, f"/compare?run={history.base}&run={history.strict}")
    _safe(html)
    assert f">{FLIPPED}</a>" in html
    assert "1 of 7 samples differ" in html
    p = expected.pairs[0].attacks.test.p_value
    assert (f"{p:.4f}" if p >= 1e-4 else "&lt;0.0001") in html
    both = f"/compare?run={history.base}&run={history.strict}"
    assert f">{FLIPPED}</a>" not in _get(viewer, both + "&direction=now_blocked")
    assert f">{FLIPPED}</a>" in _get(viewer, both + "&direction=now_allowed&kind=bypass")
    assert f">{FLIPPED}</a>" not in _get(viewer, both + "&category=chat")
    swapped = _get(viewer, f"/compare?run={history.strict}&run={history.base}")
    assert "blocked by B, not by A: 1" in swapped
    _get(viewer, f"/compare?run={history.base}&run={history.other}", status=400)
    _get(viewer, f"/compare?run={history.base}", status=400)


@pytest.mark.slow
def test_trend_and_attacks_pages(viewer: Server, history: History) -> None:
    html = _get(viewer, "/trend")
    _safe(html)
    with open_store(history.url, read_only=True) as store:
        dataset = store.info(history.base).dataset_hash
    html = _get(viewer, f"/trend?dataset={dataset}")
    _safe(html)
    assert "pattern @ " in html
    assert "pattern(threshold=0.8) @ " in html
    assert "block rate fell &lt;script&gt;" in html  # the planted alert, on this dataset
    html = _get(viewer, "/attacks")
    _safe(html)
    assert history.attack in html
    html = _get(viewer, f"/attacks/{history.attack}")
    _safe(html)
    for part in ("Rounds", "Mutators that worked", "Bypasses", "<svg"):
        assert part in html
    if "/bypasses/0" in html:
        _safe(_get(viewer, f"/attacks/{history.attack}/bypasses/0"))
    _get(viewer, f"/attacks/{history.attack}/bypasses/9999", status=404)
    _get(viewer, "/attacks/nope", status=404)


@pytest.mark.slow
def test_the_viewer_cannot_write(history: History) -> None:
    from shieldbench.alerts import Alert
    from shieldbench.errors import StoreError

    with open_store(history.url, read_only=True) as store:
        with pytest.raises(StoreError):
            store.add_alert(Alert("k", "t", "m"))
        assert len(store.alerts()) == 1
