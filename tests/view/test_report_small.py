"""The static HTML report on a phone-sized screen (390 px), in a real Chromium.

The report the CLI wrote for the planted runs (``conftest.py``) is opened from disk:
the page must not scroll sideways (tables scroll in their own box), its navigation
must wrap onto several lines instead of running off the screen, every chart must fit
the width, and nothing may log an error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._cdp import Browser, find_chromium
from .conftest import History

pytestmark = [pytest.mark.browser, pytest.mark.slow]


_CULPRITS = """(() => { const out = [];
  const clipped = e => { for (let p = e.parentElement; p; p = p.parentElement) {
    if (getComputedStyle(p).overflowX !== 'visible') return !['HTML', 'BODY'].includes(p.tagName);
  } return false; };
  document.querySelectorAll('body *').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.right > document.documentElement.clientWidth + 1 && !clipped(e)
        && !Array.from(e.children).some(c => c.getBoundingClientRect().right > r.right - 1)) {
      out.push(e.tagName + '.' + e.className + ' in ' + e.parentElement.tagName + ': '
               + (e.textContent || '').slice(0, 60));
    }
  });
  return out.slice(0, 6); })()"""


@pytest.fixture
def browser() -> Iterator[Browser]:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    b = Browser(chromium, width=390, height=800)
    yield b
    b.close()


def test_the_report_fits_a_390_px_screen(browser: Browser, sqlite_history: History) -> None:
    report = sqlite_history.folder / "r1" / "report.html"
    browser.open(report.as_uri())
    assert browser.overflow_px() == 0, browser.js(_CULPRITS)
    lines = browser.js(
        "new Set(Array.from(document.querySelectorAll('nav.toc a'))"
        ".map(a => Math.round(a.getBoundingClientRect().top))).size"
    )
    assert lines >= 2
    widest = browser.js(
        "Math.max(...Array.from(document.querySelectorAll('figure svg'))"
        ".map(s => s.getBoundingClientRect().right))"
    )
    assert 0 < widest <= 390
    assert browser.js("window.__pwned === undefined")
    assert browser.console == []
