"""The metric explorer as a support engineer uses it, in headless Chromium (issue 20 §4, §7), at 1400 and 800 px:
find a metric by name, add it, drag across a panel to zoom, and every panel shows that range; an incident's
button zooms to it; nothing is requested, nothing is logged as an error, nothing overflows the page.
A metric and node named to break out of the page show as text. Without Chromium: skipped, failed under CI=true."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
import test_explorer
from test_browser import Chromium, require_chromium
from test_explorer import CRAFTED, write_node
from test_explorer_serve import serving

import analysis
from analysis.outputs.report import explore, explorer_page, write_explorer
from analysis.outputs.report.explorer import drawable
from ftdc.catalog import read_catalog
from ftdc.writer import FTDCWriter

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


# -- one cursor, axes, a view that can be shared, several lines on a panel (issue 36 §1)
LEGENDS = """[...document.querySelectorAll('section.explorer')].flatMap(root => [...root.querySelectorAll('.explorer-panel')].map(p => ({
  section: root.id, metric: p.dataset.metric,
  rows: [...p.querySelectorAll('.u-legend tr.u-series')].map(r => [r.querySelector('th').textContent.trim(), r.querySelector('.u-value').textContent])})))"""
AXES = """[...document.querySelectorAll('section.explorer')].flatMap(root => root.explorer.panels.map(p => ({
  section: root.id, metric: p.node.dataset.metric, lines: p.lines.length,
  axes: p.plot.axes.map(a => ({label: a.label, values: (a._values || []).filter(v => v !== null)})),
  // How far the last time tick's label reaches past the plot's right edge (px; <= 0 when it is whole).
  past: (() => { const u = p.plot, a = u.axes[0], ctx = document.createElement('canvas').getContext('2d');
    ctx.font = a.font[0]; const i = a._splits.length - 1;
    return u.valToPos(a._splits[i], 'x') + u.bbox.left / devicePixelRatio + ctx.measureText(a._values[i]).width / 2 - u.width; })()})))"""
SETTLE = "new Promise(r => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 300))"
SUFFIX = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def number(text: str) -> float:
    """A value as explorer.js writes it (3 significant digits, k M G T)."""
    return float(text[:-1]) * SUFFIX[text[-1]] if text[-1] in SUFFIX else float(text)


def hover(browser: Chromium, selector: str, share: float) -> None:
    browser.evaluate(f"document.querySelector({selector!r}).scrollIntoView({{block: 'center'}})")
    over = box(browser, f"{selector} .u-over")
    x, y = over["left"] + share * over["width"], over["top"] + over["height"] / 2
    mouse(browser, "mouseMoved", x - 3, y)
    mouse(browser, "mouseMoved", x, y)
    browser.evaluate(SETTLE)


def column_at(label: str, explorer) -> int:
    """The column of the axis whose middle the legend's time names."""
    t = dt.datetime.fromisoformat(label.removesuffix(" UTC")).replace(tzinfo=dt.timezone.utc).timestamp() * 1000
    return round((t - explorer.axis.first_ms) / explorer.axis.column_ms - 0.5)


def assert_reads(text: str, low: float, high: float, series) -> None:
    """The legend's `min–max` (or one value) of a column is that column's, to the 3 digits shown."""
    if np.isnan(low):
        assert text == "–"
        return
    shown = [number(t) for t in re.split(r"(?<=[0-9kMGT])–", text)]
    slack = lambda v: 0.006 * abs(v) + (series.high - series.low) / 65534 + 1e-9  # noqa: E731
    assert shown[0] == pytest.approx(low, abs=slack(low)) and shown[-1] == pytest.approx(high, abs=slack(high)), (text, low, high)


@pytest.mark.parametrize("width", [1400, 800])
def test_one_cursor_reads_every_panel_at_the_same_instant(chromium, demo_page, width):
    path, explorer = demo_page
    byname = {s.name: s for s in explorer.series}
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        hover(browser, ".explorer-panel:nth-child(2)", 0.55)
        legends = browser.evaluate(LEGENDS)
        errors = browser.errors()
    assert len(legends) == len(explorer.opening) >= 4
    times = {p["rows"][0][1] for p in legends}
    assert len(times) == 1 and "–" not in times, legends  # one instant on every panel, under the mouse or not
    column = column_at(times.pop(), explorer)
    for panel in legends:
        series = byname[panel["metric"]]
        low, high = (v[column] for v in test_explorer.decoded(series))
        assert_reads(panel["rows"][1][1], low, high, series)
    assert sum(p["rows"][1][1] != "–" for p in legends) >= 4 and errors == []


def constant_and_counter(explorer) -> tuple[str, str]:
    flat = next(s.name for s in explorer.series if s.source == "ftdc" and s.low == s.high and s.name.startswith("serverStatus."))
    counter = next(s.name for s in explorer.series if s.unit == "/s" and "bytes" in s.name.lower())
    return flat, counter


@pytest.mark.parametrize("width", [1400, 800])
def test_every_panel_has_three_y_ticks_and_units_on_its_axes(chromium, demo_page, width):
    path, explorer = demo_page
    flat, counter = constant_and_counter(explorer)
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate(
            f"document.querySelector('section.explorer').explorer.add({flat!r}); "
            f"document.querySelector('section.explorer').explorer.add({counter!r})"
        )
        browser.evaluate(SETTLE)
        whole = browser.evaluate(AXES)
        browser.evaluate(
            "(() => { const e = document.querySelector('section.explorer').explorer; "
            "const lo = +document.querySelector('section.explorer').dataset.min + 3600; e.setRange(lo, lo + 60); })()"
        )
        browser.evaluate(SETTLE)
        minute = browser.evaluate(AXES)
    assert {p["metric"] for p in whole} >= {flat, counter, *explorer.opening}
    for panel in whole + minute:
        time, *ys = panel["axes"]
        assert time["label"] == "time (UTC)" and len(time["values"]) >= 2 and panel["past"] <= 0, panel
        assert len(ys) == 1 and ys[0]["label"], panel
        assert len(ys[0]["values"]) >= 3 and len(set(ys[0]["values"])) == len(ys[0]["values"]), panel
    units = {p["metric"]: p["axes"][1]["label"] for p in whole}
    assert units[counter] == "bytes/s" and units["writes_latency_ms"] == "ms" and units["cache_dirty_pct"] == "%"


def state_of(browser: Chromium) -> dict:
    return browser.evaluate(
        """(() => { const root = document.querySelector('section.explorer');
        return {min: +root.dataset.min, max: +root.dataset.max, hash: location.hash,
                panels: root.explorer.panels.map(p => p.lines.map(l => [l.sec.node, l.name])),
                heads: [...root.querySelectorAll('.explorer-panel b')].map(b => b.textContent)}; })()"""
    )


def test_the_view_is_kept_in_the_fragment_and_restored(chromium, demo_page):
    path, explorer = demo_page
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("location.hash") == ""  # opening writes nothing: the report's own anchors stay
        click(browser, ".explorer-in")
        click(browser, ".explorer-right")
        click(browser, ".explorer-panel:nth-child(2) .explorer-remove")
        click(browser, ".explorer-panel:nth-child(1) .explorer-more")
        search(browser, "tracked dirty bytes in the cache")
        browser.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
        browser.evaluate(SETTLE)
        before = state_of(browser)
    assert before["hash"].startswith("#explorer&from=") and len(before["panels"]) == len(explorer.opening) - 1
    assert before["panels"][0] == [["demo", explorer.opening[0]], ["demo", DIRTY]]
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri() + before["hash"])
        after = state_of(browser)
        errors = browser.errors()
    assert after["panels"] == before["panels"] and after["heads"] == before["heads"] and errors == []
    assert (after["min"], after["max"]) == pytest.approx((before["min"], before["max"]), abs=0.001)


@pytest.mark.parametrize(
    "fragment",
    [
        "#explorer&from=abc&to=1e999&p=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
        "#explorer&from=1&to=2&p=%E0%A4%A&p=&p=:&p=nowhere:writes_latency_ms&p=" + "x" * 30_000,
        "#explorer&p=" + "&p=".join(["writes_latency_ms,ops_per_s"] * 100) + "&from=-1e3&to=NaN",
        "#<script>alert(1)</script>&from=1&p=writes_latency_ms",
    ],
    ids=["html", "bad-escapes-and-too-long", "too-many-panels", "another-section"],
)
def test_a_hostile_fragment_opens_a_checked_view(chromium, demo_page, fragment):
    path, explorer = demo_page
    whole = (explorer.axis.first_ms / 1000, (explorer.axis.first_ms + explorer.axis.columns * explorer.axis.column_ms) / 1000)
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri() + fragment)
        state = state_of(browser)
        dialogs = [m for m, _ in browser.events if m == "Page.javascriptDialogOpening"]
        errors, images = browser.errors(), browser.evaluate("document.images.length")
    assert dialogs == [] and errors == [] and images == 0, errors
    if fragment.startswith("#explorer&p="):
        # Forty panels at most of the hundred asked for, each the two metrics asked for; no range (neither number is one).
        assert state["panels"] == [[["demo", "writes_latency_ms"], ["demo", "ops_per_s"]]] * 40
    else:
        assert [p[0][1] for p in state["panels"]] == list(explorer.opening)
    assert (state["min"], state["max"]) == pytest.approx(whole) or "from=1&" in fragment


def write_member(directory: Path, offset_s: int, level) -> Path:
    with FTDCWriter(directory, samples_per_chunk=50) as writer:
        for i in range(600):
            writer.add_sample(
                {
                    "start": test_explorer.START + dt.timedelta(seconds=offset_s + i),
                    "serverStatus": {"pid": 1, "uptime": 1000 + i, "made up": {"level": level(i), "operations": 5 * i}},
                }
            )
    return directory


@pytest.mark.parametrize("width", [1400, 800])
def test_two_metrics_and_two_nodes_on_one_panel(chromium, tmp_path, width):
    level = "serverStatus.made up.level"
    a, b = write_member(tmp_path / "a", 0, lambda i: i % 7), write_member(tmp_path / "b", 30, lambda i: 100 + i % 5)
    explorers = [explore(analysis.analyze(p), p, name) for p, name in ((a, "node-a"), (b, "node-b"))]
    path = write_explorer(explorers, tmp_path / "rs.html")
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate(f"document.querySelector('#explorer-1').explorer.add({level!r})")
        browser.evaluate(SETTLE)
        click(browser, f'#explorer-1 [data-metric="{level}"] .explorer-nodes')
        click(browser, f'#explorer-1 [data-metric="{level}"] .explorer-more')
        search(browser, "made up operations")
        click(browser, "#explorer-1 .explorer-results .explorer-add")
        browser.evaluate(SETTLE)
        hover(browser, f'#explorer-1 [data-metric="{level}"]', 0.5)
        legends = {p["section"] + p["metric"]: p["rows"] for p in browser.evaluate(LEGENDS)}
        axes = {p["metric"]: p for p in browser.evaluate(AXES) if p["section"] == "explorer-1"}
        hash_ = browser.evaluate("location.hash")
        heads = browser.evaluate(f"document.querySelector('#explorer-1 [data-metric=\"{level}\"] .explorer-names').textContent")
        overflow = browser.evaluate("document.documentElement.scrollWidth - innerWidth")
        errors = browser.errors()
    rows = legends["explorer-1" + level]
    assert [r[0] for r in rows] == ["UTC", "node-a level", "node-b level", "node-a operations"], rows
    column = column_at(rows[0][1], explorers[0])
    # Node b started 30 s later: at node a's second `column`, node b is at its `column - 30`.
    assert number(rows[1][1]) == column % 7 and number(rows[2][1]) == 100 + (column - 30) % 5 and number(rows[3][1]) == 5, rows
    assert "node-b" in heads and axes[level]["lines"] == 3
    assert [ax["label"] for ax in axes[level]["axes"]] == ["time (UTC)", "count", "count/s"]  # a second unit: the right axis
    assert "explorer-2:" + quote(level, safe="") in hash_ and errors == [] and overflow <= 0
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri() + hash_)
        restored = browser.evaluate(
            "document.querySelector('#explorer-1').explorer.panels.map(p => p.lines.map(l => l.sec.node + ' ' + l.name))"
        )
    assert [f"node-a {level}", f"node-b {level}", "node-a serverStatus.made up.operations"] in restored


def test_every_metric_of_the_node_plots(chromium, demo_page):
    path, explorer = demo_page
    recorded = [s for s in explorer.series if s.source == "ftdc"]
    assert {s.name for s in recorded} == set(drawable(read_catalog(DEMO / "diagnostic.data").schema()))  # not a selection
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        # What the page decodes of every series: its number of values, of those present, and their sum.
        decoded = browser.evaluate(
            """(() => { const root = document.querySelector('section.explorer'), e = root.explorer;
            return JSON.parse(root.querySelector('script.explorer-data').textContent).series.map(s => {
              const v = e.values(s.name), present = v.filter(x => x !== null);
              return [s.name, v.length, present.length, present.reduce((a, b) => a + b, 0)]; }); })()"""
        )
        sample = recorded[:: len(recorded) // 12]
        browser.evaluate(
            f"(() => {{ const e = document.querySelector('section.explorer').explorer; {json.dumps([s.name for s in sample])}.forEach(n => e.add(n)); }})()"
        )
        browser.evaluate(SETTLE)
        drawn = browser.evaluate(
            "document.querySelector('section.explorer').explorer.panels.map(p => [p.lines[0].name, p.plot.data[1].filter(v => v !== null).length])"
        )
        errors = browser.errors()
    assert errors == []
    for (name, length, present, total), series in zip(decoded, explorer.series):
        low, high = test_explorer.decoded(series)
        want = np.stack([low, high], axis=1).ravel()
        assert name == series.name and length == 2 * explorer.axis.columns and present == np.count_nonzero(~np.isnan(want))
        assert total == pytest.approx(np.nansum(want), rel=1e-9, abs=1e-6)
    assert {n for n, count in drawn if count} >= {s.name for s in sample}


def test_a_page_past_its_budget_plots_its_8_bit_levels(chromium, tmp_path, monkeypatch):
    node = write_node(tmp_path / "diagnostic.data")
    monkeypatch.setattr(explorer_page, "LEVELS_BUDGET", 0)  # every recorded metric that moves at 8 bits
    path = write_explorer(explore(analysis.analyze(node), node, "node"), tmp_path / "node.html")
    data = test_explorer.payload_of(path.read_text())
    coarse = [s for s in data["series"] if "levels8" in s]
    assert coarse
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        shown = browser.evaluate(
            f"{json.dumps([s['name'] for s in coarse])}.map(n => document.querySelector('section.explorer').explorer.values(n))"
        )
        errors = browser.errors()
    for s, values in zip(coarse, shown):
        q = np.frombuffer(base64.b64decode(s["levels8"]), dtype="u1")
        want = [None if v == explorer_page.EMPTY8 else s["low"] + v * (s["high"] - s["low"]) / 254 for v in q]
        assert values == pytest.approx(want), s["name"]
    assert errors == []


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("serve")) as both:
        yield both


def test_a_served_page_zoomed_to_a_minute_shows_each_sample(chromium, served):
    """Issue 36 §6: a zoom to one minute shows one point per sample (the server's), and zoomed out the columns again."""
    httpd, explorer = served
    level = "serverStatus.made up.level"
    first = explorer.axis.first_ms / 1000
    panel = f"(document.querySelector('section.explorer').explorer.panels.find(p => p.lines[0].name === {level!r}))"
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(f"http://127.0.0.1:{httpd.server_address[1]}/")
        browser.evaluate(f"document.querySelector('section.explorer').explorer.add({level!r})")
        columns = browser.evaluate(f"{panel}.plot.data[0].length")
        browser.evaluate(f"document.querySelector('section.explorer').explorer.setRange({first + 600}, {first + 660})")
        browser.evaluate(
            f"new Promise(r => {{ const wait = () => {panel}.node.dataset.samples ? r() : setTimeout(wait, 50); wait(); }})"
        )
        minute = browser.evaluate(
            f"(() => {{ const p = {panel}; return {{x: Array.from(p.plot.data[0]), y: p.plot.data[1], "
            "legend: p.node.querySelector('.u-legend tr.u-series:nth-child(2) .u-value').textContent}; })()"
        )
        hover(browser, f'[data-metric="{level}"]', 0.5)
        read = browser.evaluate(f"{panel}.node.querySelector('.u-legend tr.u-series:nth-child(2) .u-value').textContent")
        at = browser.evaluate(f"{panel}.node.querySelector('.u-legend tr.u-series:nth-child(1) .u-value').textContent")
        browser.evaluate(f"document.querySelector('section.explorer').explorer.setRange({first}, {first + 6000})")
        browser.evaluate(
            f"new Promise(r => {{ const wait = () => {panel}.node.dataset.samples ? setTimeout(wait, 50) : r(); wait(); }})"
        )
        back = browser.evaluate(f"{panel}.plot.data[0].length")
        errors, requests = browser.errors(), browser.requests()
    assert columns == 2 * explorer.axis.columns == 4800
    assert minute["x"] == [first + i for i in range(600, 661)] and minute["y"] == [(i * 7) % 13 for i in range(600, 661)]
    second = round(dt.datetime.fromisoformat(at.removesuffix(" UTC")).replace(tzinfo=dt.timezone.utc).timestamp() - first)
    assert number(read) == (second * 7) % 13  # the legend reads the sample under the cursor, not a column's range
    assert back == columns and errors == []
    assert {r.split("?")[0] for r in requests} == {f"http://127.0.0.1:{httpd.server_address[1]}/" + p for p in ("", "samples")}
