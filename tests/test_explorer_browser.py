"""The metric explorer as a support engineer uses it, in headless Chromium (issue 20 §4, §7), at 1400 and 800 px:
find a metric by name, add it, drag across a panel to zoom, and every panel shows that range; an incident's
button zooms to it; nothing is requested, nothing is logged as an error, nothing overflows the page.
A metric and node named to break out of the page show as text. Without Chromium: skipped, failed under CI=true."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from test_browser import Chromium, require_chromium
from test_explorer import CRAFTED, write_node

import analysis
from analysis.outputs.report import explore, write_explorer

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples"
DIRTY = "serverStatus.wiredTiger.cache.tracked dirty bytes in the cache"
STATE = """(() => { const root = document.querySelector('section.explorer');
  return {min: +root.dataset.min, max: +root.dataset.max, label: root.querySelector('.explorer-range').textContent,
          panels: [...root.querySelectorAll('.explorer-panel')].map(p => ({metric: p.dataset.metric, min: +p.dataset.min, max: +p.dataset.max,
                    width: p.getBoundingClientRect().width, canvas: p.querySelector('canvas')?.getBoundingClientRect().width ?? 0})),
          results: [...root.querySelectorAll('.explorer-results li')].map(li => li.textContent),
          overflow: document.documentElement.scrollWidth - innerWidth, scripts: document.scripts.length}; })()"""


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory) -> tuple[Path, object]:
    result = analysis.analyze(DEMO / "diagnostic.data", DEMO / "mongod.log")
    explorer = explore(result, DEMO / "diagnostic.data", "demo")
    return write_explorer(explorer, tmp_path_factory.mktemp("explorer") / "node.html"), explorer


def box(browser: Chromium, selector: str) -> dict:
    return browser.evaluate(
        f"(() => {{ const r = document.querySelector({selector!r}).getBoundingClientRect(); "
        "return {left: r.left, top: r.top, width: r.width, height: r.height}; })()"
    )


def mouse(browser: Chromium, kind: str, x: float, y: float, buttons: int = 0) -> None:
    browser.call(
        "Input.dispatchMouseEvent",
        type=kind,
        x=x,
        y=y,
        button="left" if kind != "mouseMoved" or buttons else "none",
        buttons=buttons,
        clickCount=1 if kind != "mouseMoved" else 0,
    )


def click(browser: Chromium, selector: str) -> None:
    browser.evaluate(f"document.querySelector({selector!r}).scrollIntoView({{block: 'center'}})")
    b = box(browser, selector)
    x, y = b["left"] + b["width"] / 2, b["top"] + b["height"] / 2
    mouse(browser, "mousePressed", x, y, 1)
    mouse(browser, "mouseReleased", x, y)


def search(browser: Chromium, text: str) -> None:
    browser.evaluate("document.querySelector('.explorer-search').focus()")
    browser.call("Input.insertText", text=text)


def shown(label: str) -> tuple[dt.datetime, dt.datetime]:
    """The range the page says it shows."""
    first, last = re.match(r"(.+?) UTC – (.+?) UTC \(", label).groups()
    return tuple(dt.datetime.fromisoformat(t).replace(tzinfo=dt.timezone.utc) for t in (first, last))


@pytest.mark.parametrize("width", [1400, 800])
def test_search_add_and_zoom(chromium, demo_page, width, tmp_path):
    path, explorer = demo_page
    axis = explorer.axis
    whole = (axis.first_ms / 1000, (axis.first_ms + axis.columns * axis.column_ms) / 1000)
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        opened = browser.evaluate(STATE)
        assert [p["metric"] for p in opened["panels"]] == list(explorer.opening) and len(explorer.opening) >= 4
        assert (opened["min"], opened["max"]) == pytest.approx(whole)

        search(browser, "tracked DIRTY")
        found = browser.evaluate(STATE)["results"]
        assert any(DIRTY in r for r in found) and all("dirty" in r.lower() for r in found), found
        index = next(i for i, r in enumerate(found) if DIRTY in r)
        click(browser, f".explorer-results li:nth-child({index + 1}) button")
        added = browser.evaluate(STATE)
        assert added["panels"][-1]["metric"] == DIRTY and added["results"] == []

        # Drag across the new panel from 30 % to 60 % of its plot: every panel now shows that range.
        browser.evaluate(f"document.querySelector('[data-metric=\"{DIRTY}\"]').scrollIntoView({{block: 'center'}})")
        over = box(browser, f'[data-metric="{DIRTY}"] .u-over')
        y = over["top"] + over["height"] / 2
        x0, x1 = over["left"] + 0.3 * over["width"], over["left"] + 0.6 * over["width"]
        mouse(browser, "mousePressed", x0, y, 1)
        for step in range(1, 6):
            mouse(browser, "mouseMoved", x0 + (x1 - x0) * step / 5, y, 1)
        mouse(browser, "mouseReleased", x1, y)
        zoomed = browser.evaluate(STATE)
        span, pixel = whole[1] - whole[0], (whole[1] - whole[0]) / over["width"]
        expected = (whole[0] + 0.3 * span, whole[0] + 0.6 * span)
        assert zoomed["min"] == pytest.approx(expected[0], abs=2 * pixel) and zoomed["max"] == pytest.approx(
            expected[1], abs=2 * pixel
        )
        assert {(p["min"], p["max"]) for p in zoomed["panels"]} == {(zoomed["min"], zoomed["max"])}
        first, last = shown(zoomed["label"])
        assert first.timestamp() == pytest.approx(zoomed["min"], abs=0.001) and last.timestamp() == pytest.approx(
            zoomed["max"], abs=0.001
        )

        # The incident's button: its window with a margin, on every panel.
        incident = explorer.incidents[0]
        click(browser, ".explorer-incident")
        focused = browser.evaluate(STATE)
        pad = max(60, (incident.end_ms - incident.start_ms) / 2000)
        assert (focused["min"], focused["max"]) == pytest.approx((incident.start_ms / 1000 - pad, incident.end_ms / 1000 + pad))
        assert {(p["min"], p["max"]) for p in focused["panels"]} == {(focused["min"], focused["max"])}

        (tmp_path / f"explorer-{width}.png").write_bytes(browser.screenshot())
        errors, requests = browser.errors(), browser.requests()
        assert all(0 < p["canvas"] <= p["width"] <= width for p in focused["panels"]) and focused["overflow"] <= 0, focused
    assert errors == [], errors
    assert requests and [u for u in requests if not u.startswith(("file:", "data:"))] == []


def test_names_from_the_input_show_as_text(chromium, tmp_path):
    node = write_node(tmp_path / "diagnostic.data")
    name = "serverStatus." + CRAFTED
    path = write_explorer(explore(analysis.analyze(node), node, CRAFTED, ["serverStatus.</script>*"]), tmp_path / "node.html")
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        search(browser, 'alert("name")')
        click(browser, ".explorer-results button")
        state = browser.evaluate(STATE)
        heading = browser.evaluate(
            "[document.title, document.querySelector('h1').textContent, document.querySelector('.explorer-panel b').textContent]"
        )
        dialogs = [m for m, _ in browser.events if m == "Page.javascriptDialogOpening"]
        errors = browser.errors()
    assert [p["metric"] for p in state["panels"]] == [name] and state["scripts"] == 3
    assert heading == [f"ftdc-analyze explorer: {CRAFTED}"] * 2 + [name]
    assert dialogs == [] and errors == [], errors


def wheel(browser: Chromium, x: float, y: float, delta: float, ctrl: bool = False) -> None:
    browser.call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0, deltaY=delta, modifiers=2 if ctrl else 0)


def test_the_wheel_scrolls_the_page_and_zooms_with_ctrl(chromium, demo_page):
    """A report read down past its explorer must not stick there: the wheel scrolls; Ctrl + wheel zooms."""
    path, _ = demo_page
    with Chromium(chromium, width=1400, height=700) as browser:
        browser.open(path.as_uri())
        browser.evaluate("document.querySelector('.u-over').scrollIntoView({block: 'center'})")
        before, scrolled = browser.evaluate(STATE), browser.evaluate("window.scrollY")
        over = box(browser, ".u-over")
        x, y = over["left"] + over["width"] / 2, over["top"] + over["height"] / 2
        wheel(browser, x, y, 300)
        browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        after = browser.evaluate(STATE)
        assert browser.evaluate("window.scrollY") > scrolled and (after["min"], after["max"]) == (before["min"], before["max"])
        browser.evaluate("document.querySelector('.u-over').scrollIntoView({block: 'center'})")
        over = box(browser, ".u-over")
        wheel(browser, over["left"] + over["width"] / 2, over["top"] + over["height"] / 2, -120, ctrl=True)
        zoomed = browser.evaluate(STATE)
        assert zoomed["max"] - zoomed["min"] < 0.9 * (before["max"] - before["min"])
