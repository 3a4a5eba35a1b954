"""The report's first screen in Chromium at 1400 and 800 px: each incident's headline on one line with its severity in
words and a link to its card, the node table within its card (a long host name wraps, the incidents column stays),
the table of contents on the first screen at 1400 px; the sortable headers work from the keyboard."""

from __future__ import annotations

import json

import pytest

from analysis.outputs.report import html
from tests.test_browser import Chromium, build_demo_report, require_chromium

pytestmark = pytest.mark.browser

LONG_HOST = "mongodbproductionmember0001.internal.paymentsexamplecorporation.net:27017"  # no hyphen to wrap at
FIRST = """(() => {
  const table = document.querySelector('table.nodes'), holder = table.parentElement;
  const lines = [...document.querySelectorAll('ul.headline li')].map(li => ({text: li.innerText, height: li.getBoundingClientRect().height,
    line: parseFloat(getComputedStyle(li).lineHeight), link: li.querySelector('a')?.getAttribute('href'),
    badge: li.querySelector('.badge')?.textContent, whole: li.scrollWidth <= li.clientWidth}));
  const cell = [...table.rows[1].cells].at(-1).getBoundingClientRect();
  return {lines, tableRight: table.getBoundingClientRect().right, holderRight: holder.getBoundingClientRect().right,
          scrolls: holder.scrollWidth > holder.clientWidth + 1, incidentsCellRight: cell.right,
          toc: document.querySelector('nav.toc').getBoundingClientRect().bottom};
})()"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The demo's report with the node named by a long host name (a cloud host's), as its table shows it."""
    folder = tmp_path_factory.mktemp("first")
    report = build_demo_report(folder / "demo.html")
    report.nodes[0].name = LONG_HOST
    for card in report.incidents:
        card.node = LONG_HOST
        card.headline = card.headline.replace("db-prod-01.example.net:27017", LONG_HOST)
    report.headlines = [h.replace("db-prod-01.example.net:27017", LONG_HOST) for h in report.headlines]
    path = folder / "report.html"
    path.write_text(html.render(report))
    return path, report


@pytest.mark.parametrize("width", [1400, 800])
def test_headlines_one_line_with_severity_node_table_fits_toc_first_screen(page, width):
    path, report = page
    with Chromium(require_chromium(), width=width, height=900) as browser:
        browser.open(path.as_uri())
        first = browser.evaluate(FIRST)
        targets = [
            browser.evaluate(f"!!document.getElementById({json.dumps(line['link'][1:])})")
            for line in first["lines"]
            if line.get("link")
        ]
        browser.open((path.parent / "demo.html").as_uri())
        demo = browser.evaluate(FIRST)
        errors = browser.errors()
    assert errors == []
    # The demo's node name is a usual one: at 1400 px its short headline is whole, not cut by its ellipsis.
    assert demo["lines"] and all(line["whole"] for line in demo["lines"]) or width < 1400, demo["lines"]
    cards = report.incidents
    assert cards and len([line for line in first["lines"] if line.get("link")]) == len(cards)
    for line, card in zip(first["lines"], cards):
        assert line["height"] <= 1.5 * line["line"], line  # one line
        assert line["badge"] == card.incident.severity and line["text"].lower().startswith(card.incident.severity), line
        assert card.incident.id in line["text"] and html.short_title(card.incident.title) in line["text"], line
    assert targets and all(targets)  # each headline's link reaches its card
    assert not first["scrolls"] and first["tableRight"] <= first["holderRight"] + 1, first
    assert first["incidentsCellRight"] <= first["holderRight"] + 1, first
    if width == 1400:
        assert first["toc"] <= browser.height, first


def test_sortable_headers_work_from_the_keyboard(page):
    path, _ = page
    with Chromium(require_chromium(), width=1400, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        # Tab from the start of the page reaches a sortable header.
        header = None
        for _ in range(200):
            browser.call("Input.dispatchKeyEvent", type="keyDown", key="Tab", code="Tab", windowsVirtualKeyCode=9)
            browser.call("Input.dispatchKeyEvent", type="keyUp", key="Tab", code="Tab", windowsVirtualKeyCode=9)
            header = browser.evaluate(
                "document.activeElement.closest('table.sortable thead th') ? document.activeElement.textContent : null"
            )
            if header:
                break
        assert header, "no sortable header in the Tab order"
        before = browser.evaluate("document.activeElement.getAttribute('aria-sort')")
        for key, code in (("Enter", 13), (" ", 32)):
            for event in ("keyDown", "keyUp"):
                browser.call(
                    "Input.dispatchKeyEvent",
                    type=event,
                    key=key,
                    code="Enter" if code == 13 else "Space",
                    windowsVirtualKeyCode=code,
                )
            if code == 13:
                after_enter = browser.evaluate("document.activeElement.getAttribute('aria-sort')")
        after_space = browser.evaluate("document.activeElement.getAttribute('aria-sort')")
        errors = browser.errors()
    assert errors == []
    assert before is None and after_enter == "descending" and after_space == "ascending", (
        header,
        before,
        after_enter,
        after_space,
    )
