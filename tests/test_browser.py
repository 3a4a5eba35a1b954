"""The demo's HTML report as a person sees it: opened in headless Chromium (Debian's
`chromium`, which `.ci/run` installs when it is missing) over the DevTools protocol.

It must render (title, one headline per incident, the incident cards first, the first of them on
the first screen, then the finding cards, every card's plot laid out with its text where it belongs),
log no console error or exception, and request nothing but `file:` and `data:` URLs.
Without Chromium the test is skipped locally and fails under CI=true.

`python3 -m samples.screenshot` reuses `build_demo_report` and `Chromium` to rewrite
`samples/report-screenshot.png`, the README's picture of the report.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
BROWSERS = ("chromium", "chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def find_chromium() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def build_demo_report(path: Path):
    """The demo node's report, as `ftdc-analyze samples/diagnostic.data --log samples/mongod.log --report PATH` writes it."""
    import analysis
    from analysis.outputs.report import build_report, write_report

    result = analysis.analyze_nodes([SAMPLES / "diagnostic.data"], [SAMPLES / "mongod.log"])
    report = build_report(result)
    write_report(report, path)
    return report


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless Chromium page driven over the DevTools protocol, with a deadline on every wait.

    Use as a context manager: the browser is killed and its profile removed on exit, whatever happened.
    Every event the page sends is kept in `events` (method, params) for the caller to inspect.
    """

    def __init__(self, binary: str, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.binary, self.width, self.height, self.timeout = binary, width, height, timeout
        self.events: list[tuple[str, dict]] = []
        self._next_id = 0
        self._process: subprocess.Popen | None = None
        self._socket = None
        self._session: str | None = None
        self._profile: str | None = None
        self._consumed = 0  # events already returned by wait_for

    # -- life cycle
    def __enter__(self) -> Chromium:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        import websocket  # websocket-client, in the `test` extra

        self._profile = tempfile.mkdtemp(prefix="ftdc-chromium-")
        log = open(os.path.join(self._profile, "stderr.log"), "wb")
        self._process = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={self.width},{self.height}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while True:
            lines = port_file.read_text().split("\n") if port_file.exists() else []
            if len(lines) >= 2 and lines[0].strip().isdigit() and lines[1].strip():
                break
            if self._process.poll() is not None:
                raise BrowserError(f"chromium exited with {self._process.returncode} before listening: {self.stderr()}")
            if time.monotonic() > deadline:
                raise BrowserError(f"chromium did not write DevToolsActivePort within {self.timeout:g} s: {self.stderr()}")
            time.sleep(0.1)
        url = f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
        # Chromium refuses DevTools connections that send an Origin header it was not told to allow.
        self._socket = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height, deviceScaleFactor=1, mobile=False)
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable")

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.close()
            except Exception:
                pass
            self._socket = None
        if self._process is not None and self._process.poll() is None:
            try:
                os.killpg(self._process.pid, 9)  # the browser and its renderer, GPU and zygote processes
            except ProcessLookupError:
                pass
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def stderr(self) -> str:
        path = Path(self._profile or "") / "stderr.log"
        return path.read_text(errors="replace")[-2000:] if self._profile and path.exists() else ""

    # -- protocol
    def _receive(self, deadline: float) -> dict:
        import websocket

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowserError("timed out waiting for chromium")
        self._socket.settimeout(remaining)
        try:
            message = json.loads(self._socket.recv())
        except websocket.WebSocketTimeoutException:
            raise BrowserError("timed out waiting for chromium") from None
        if "method" in message and message.get("sessionId") == self._session:
            self.events.append((message["method"], message.get("params", {})))
        return message

    def call(self, method: str, timeout: float | None = None, **params: Any) -> dict:
        """Sends one command (to the page once attached) and returns its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session is not None:
            message["sessionId"] = self._session
        self._socket.send(json.dumps(message))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def wait_for(self, event: str, timeout: float | None = None) -> dict:
        """The first `event` of the page not seen by an earlier wait."""
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = self._consumed
        while True:
            for index in range(seen, len(self.events)):
                if self.events[index][0] == event:
                    self._consumed = index + 1
                    return self.events[index][1]
            seen = len(self.events)
            self._receive(deadline)

    def open(self, url: str) -> None:
        """Navigates and returns once the page and its images have loaded."""
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = True) -> bytes:
        """A PNG of the whole page (or of the viewport)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": max(size["width"], self.width), "height": size["height"], "scale": 1},
            )
        return base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])

    # -- what the page did
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log entries at level error."""
        found = []
        for method, params in self.events:
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(f"exception: {details.get('text')} {details.get('exception', {}).get('description', '')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(
                    f"console.{params['type']}: {[a.get('value', a.get('description')) for a in params.get('args', [])]}"
                )
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        return found

    def requests(self) -> list[str]:
        return [params["request"]["url"] for method, params in self.events if method == "Network.requestWillBeSent"]


def require_chromium() -> str:
    """Chromium's path; skip locally when it (or websocket-client) is missing, fail under CI=true."""
    binary = find_chromium()
    missing = None if binary else "chromium is not installed (apt-get install chromium; .ci/run does it)"
    try:
        import websocket  # noqa: F401
    except ImportError:
        missing = missing or "websocket-client is not installed (pip install -e '.[test]')"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test needs it under CI=true: {missing}")
        pytest.skip(missing)
    return binary


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


# Each card's plot as laid out: sized, visible, and its text as the browser set it: every text inside the
# figure, threshold labels inside their panel, legends above it and clear of its title, span labels apart.
PLOT = """const plot = card => {
  const holder = card.querySelector(':scope > div.plot');
  if (!holder) return null;
  const svg = holder.querySelector(':scope > svg'), box = svg.getBoundingClientRect(), style = getComputedStyle(svg);
  const inside = (a, b) => a.x >= b.x - 1 && a.y >= b.y - 1 && a.x + a.width <= b.x + b.width + 1 && a.y + a.height <= b.y + b.height + 1;
  const apart = (a, b) => a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
  const texts = [...svg.querySelectorAll('text')], view = svg.viewBox.baseVal, misplaced = [];
  texts.filter(t => !inside(t.getBBox(), view)).forEach(t => misplaced.push('outside the figure: ' + t.textContent));
  svg.querySelectorAll('g.panel').forEach(panel => {
    const outlines = panel.querySelectorAll(':scope > rect[fill=none]'), frame = outlines[outlines.length - 1].getBBox();
    const title = panel.querySelector('text.title').getBBox();
    panel.querySelectorAll('text.threshold').forEach(t => { if (!inside(t.getBBox(), frame)) misplaced.push('threshold: ' + t.textContent); });
    panel.querySelectorAll('text.legend').forEach(t => { const b = t.getBBox();
      if (b.y + b.height > frame.y + 1 || !apart(b, title)) misplaced.push('legend: ' + t.textContent); });
  });
  const spans = [...svg.querySelectorAll('text.span-label')].map(t => t.getBBox());
  spans.forEach((a, i) => spans.slice(i + 1).forEach(b => { if (!apart(a, b)) misplaced.push('span labels overlap'); }));
  return {label: holder.getAttribute('aria-label'), texts: texts.length, misplaced,
          width: box.width, height: box.height, display: style.display, visibility: style.visibility, opacity: style.opacity};
};"""
# Each finding card outside a closed <details> (the context findings), with its plot.
CARDS = f"""(() => {{ {PLOT} return [...document.querySelectorAll('.finding')].filter(card => !card.closest('details'))
  .map(card => ({{kind: card.dataset.kind, top: card.getBoundingClientRect().top + scrollY, plot: plot(card)}})); }})()"""
# Each incident card, where it starts on the page, with its plot.
INCIDENTS = f"""(() => {{ {PLOT} return [...document.querySelectorAll('.incident')]
  .map(card => ({{id: card.dataset.id, top: card.getBoundingClientRect().top + scrollY, plot: plot(card)}})); }})()"""


def assert_laid_out(plot: dict) -> None:
    assert plot["label"] and plot["texts"] > 10 and plot["misplaced"] == [], plot
    assert plot["width"] > 0 and plot["height"] > 0, plot
    assert plot["display"] != "none" and plot["visibility"] == "visible" and float(plot["opacity"]) > 0, plot


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("browser") / "report.html"
    return path, build_demo_report(path)


def test_report_renders_in_chromium(chromium, demo_report, tmp_path):
    path, report = demo_report
    section = report.nodes[0]
    with Chromium(chromium) as browser:
        browser.open(path.as_uri())
        state = browser.evaluate(
            "({title: document.title, readyState: document.readyState, "
            "headlines: [...document.querySelectorAll('ul.headline li')].map(li => li.title || li.innerText), "
            "headlineHeight: document.querySelector('ul.headline')?.getBoundingClientRect().height ?? 0})"
        )
        incidents = browser.evaluate(INCIDENTS)
        cards = browser.evaluate(CARDS)
        png = browser.screenshot(full_page=True)
        errors, requests = browser.errors(), browser.requests()
    (tmp_path / "report.png").write_bytes(png)

    assert state["readyState"] == "complete"
    assert state["title"] == report.title
    assert [h.strip() for h in state["headlines"]] == [h.strip() for h in report.headlines] and state["headlineHeight"] > 0

    # The incidents come first: one card each, in order, the first on the first screen, each with the plot of its chain.
    assert [c["id"] for c in incidents] == [c.incident.id for c in report.incidents] and incidents
    assert incidents[0]["top"] < browser.height and all(c["top"] < cards[0]["top"] for c in incidents)
    for card in incidents:
        assert card["plot"] is not None, card
        assert_laid_out(card["plot"])

    # Then one card per carded finding, in order; one not drawn in its incident's plot has its own, decoded and on the page.
    assert [c["kind"] for c in cards] == [section.findings[i].kind for i in section.carded]
    assert len(cards) >= 1
    for card, index in zip(cards, section.carded):
        plot = card["plot"]
        assert (plot is not None) == (index in section.evidence), card
        if plot is not None:
            assert_laid_out(plot)

    assert errors == [], errors
    assert requests, "no request seen at all: the Network domain did not report"
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []

    width, height = png_size(png)
    assert width >= 1000 and height > 900 and len(png) > 20_000
    from PIL import Image  # matplotlib's dependency

    image = Image.open(io.BytesIO(png))
    image.verify()
    image = Image.open(io.BytesIO(png)).convert("L")
    low, high = image.getextrema()
    assert high - low > 100, "a blank screenshot"


# -- issue 20: the first screen, both widths, the sortable slow-operation table

SHARED = ROOT.parent / "shared" / "samples"
# Page geometry at a width: the first screen's parts, where the findings start, overflows, plots against their card.
LAYOUT = """(() => {
  const bottom = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect().bottom + scrollY : null; };
  const open = el => !el.closest('details:not([open])');
  const tables = [...document.querySelectorAll('table')].filter(open).map(t => {
    const box = t.parentElement.getBoundingClientRect(), card = t.closest('.incident,.finding,details,body').getBoundingClientRect();
    // A header's own text, not its cell: a row's header is as tall as the row's value.
    const lines = h => { const r = document.createRange(); r.selectNodeContents(h); return r.getBoundingClientRect().height; };
    const th = Math.max(0, ...[...t.querySelectorAll('th')].map(h => lines(h) / parseFloat(getComputedStyle(h).lineHeight)));
    return {cls: t.className, boxRight: box.right, cardRight: card.right, headerLines: th}; });
  const plots = [...document.querySelectorAll('div.plot')].filter(open).map(d => ({width: d.querySelector('svg').getBoundingClientRect().width,
    room: d.parentElement.clientWidth - parseFloat(getComputedStyle(d.parentElement).paddingLeft) - parseFloat(getComputedStyle(d.parentElement).paddingRight)}));
  const findings = document.querySelector('[id$=-findings]');
  return {nodes: bottom('table.nodes'), headlines: bottom('ul.headline'), toc: bottom('nav.toc'),
          findings: findings ? findings.getBoundingClientRect().top + scrollY : null,
          pageWidth: document.documentElement.scrollWidth, viewport: innerWidth, tables, plots};
})()"""


def _open_everything(browser) -> None:
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")


@pytest.mark.parametrize("width", [1400, 800])
def test_first_screen_and_both_widths(chromium, demo_report, width):
    path, report = demo_report
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        first = browser.evaluate(LAYOUT)
        _open_everything(browser)
        opened = browser.evaluate(LAYOUT)
        errors, requests = browser.errors(), browser.requests()
    if width == 1400:
        # One screen holds the node(s), the incidents' headlines and the table of contents; the findings within three.
        assert first["nodes"] < first["headlines"] < first["toc"] <= browser.height, first
        assert first["findings"] < 3 * browser.height, first
    for layout in (first, opened):
        assert layout["pageWidth"] <= layout["viewport"], "the page scrolls sideways"
        assert layout["tables"] and layout["plots"]
        for table in layout["tables"]:
            assert table["boxRight"] <= table["cardRight"] + 1, table  # a wide table scrolls inside its card
            assert table["headerLines"] <= 4.5, table  # no header wrapped to six lines
        for plot in layout["plots"]:
            assert plot["width"] >= 0.97 * plot["room"], plot  # the plot follows the card's width
    assert errors == [], errors
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []


@pytest.fixture(scope="module")
def busy_report(tmp_path_factory):
    """A node with a log of 58 query shapes (the 6.0.11 sample): more than the table shows at first."""
    import warnings

    import analysis
    from analysis.outputs.report import build_report, write_report

    if not SHARED.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("../shared/samples is missing")
        pytest.skip("../shared/samples is missing")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(SHARED / "ftdc" / "mongod-7.0" / "diagnostic.data", SHARED / "logs" / "mongod-6.0.11")
    path = tmp_path_factory.mktemp("busy") / "report.html"
    report = build_report([result])
    write_report(report, path)
    return path, report


def test_slow_operation_table_sorts_in_the_page(chromium, busy_report):
    path, report = busy_report
    queries = report.nodes[0].workload.queries
    table_id = "slow-ops"  # the table's id ends with this

    def column(name: str) -> str:
        return f"""(() => {{ const t = document.querySelector('table[id$={table_id}]');
        const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.startsWith('{name}'));
        return [...t.tBodies].filter(b => !b.hidden).map(b => b.rows[0]).map(r => r.cells[i].dataset.v ?? r.cells[i].textContent); }})()"""

    def click(selector: str) -> None:
        browser.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        # One click from the table of contents opens the section.
        click("nav.toc a[href$='-workload']")
        assert browser.evaluate("document.querySelector('details[id$=-workload]').open") is True
        shown = browser.evaluate(column("total s"))
        assert len(shown) == 20 < queries.height  # the top 20, most total time first
        assert [float(v) for v in shown] == sorted((float(v) for v in shown), reverse=True)
        click("table[id$=slow-ops] thead th:nth-child(3)")  # count
        counts = [float(v) for v in browser.evaluate(column("count"))]
        assert counts == sorted(queries["count"].cast(float).to_list(), reverse=True)[:20]
        click("table[id$=slow-ops] thead th:nth-child(3)")
        assert [float(v) for v in browser.evaluate(column("count"))] == sorted(queries["count"].cast(float).to_list())[:20]
        click("table[id$=slow-ops] thead th:nth-child(1)")  # namespace, as text
        names = browser.evaluate(column("namespace"))
        assert names == sorted(names, reverse=True) or names == sorted(names, key=str.lower, reverse=True)
        click("button.all[data-table$=slow-ops]")  # the rest, one click away
        assert len(browser.evaluate(column("count"))) == queries.height
        errors, requests = browser.errors(), browser.requests()
    assert errors == [], errors
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []


# -- issue 36: the slow-operation table fits its card, filters from the keyboard, its slowest lines one click away

# The slow-operation table against its card: the table's width and the room its wrapper gives it, where the card ends,
# and where each shown shape's detail (plan, shape, clients, lines) ends.
SLOW_TABLE = """(() => {
  const t = document.querySelector('table[id$=slow-ops]'), wide = t.parentElement, card = t.closest('details').getBoundingClientRect();
  const details = [...t.querySelectorAll('tbody:not([hidden]) tr.detail > td > div')].map(d => d.getBoundingClientRect().right);
  return {table: t.getBoundingClientRect().width, room: wide.clientWidth, scroll: wide.scrollWidth,
          wideRight: wide.getBoundingClientRect().right, cardRight: card.right, details,
          fonts: Math.min(...[...t.querySelectorAll('td, th, td *')].filter(e => e.textContent.trim() && e.getClientRects().length)
            .map(e => parseFloat(getComputedStyle(e).fontSize))),
          chart: (() => { const svg = document.querySelector('div.plot.slow svg'), scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return [...svg.querySelectorAll('text')].map(e => { const b = e.getBoundingClientRect();
              return {text: e.textContent, left: b.left, right: b.right, top: b.top, bottom: b.bottom,
                      px: parseFloat(e.closest('[font-size]').getAttribute('font-size')) * scale}; }); })()};
})()"""


@pytest.mark.parametrize("width", [1400, 800])
def test_slow_operation_table_fits_its_card(chromium, busy_report, width):
    """At 1400 px the whole table, its last column too, is within its card (it was 1,314-1,458 px in a 1,140 px card);
    at 800 px it scrolls inside the card, and each shape's plan, shape and lines are within the card all the same."""
    path, _ = busy_report
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate("document.querySelector('details[id$=-workload]').open = true")
        layout = browser.evaluate(SLOW_TABLE)
        errors = browser.errors()
    assert errors == [], errors
    assert layout["wideRight"] <= layout["cardRight"] + 1, layout
    assert layout["details"] and max(layout["details"]) <= layout["cardRight"] + 1, layout
    assert layout["fonts"] >= 10, layout
    # The chart of the slow operations over time: no text under 10 px, no two texts over each other, none past the card.
    chart = layout["chart"]
    assert chart and min(t["px"] for t in chart) >= 10, chart
    assert max(t["right"] for t in chart) <= layout["cardRight"] + 1, chart
    for n, a in enumerate(chart):
        for b in chart[n + 1 :]:
            apart = a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
            assert apart, (a, b)
    if width == 1400:
        assert layout["scroll"] <= layout["room"] + 1 and layout["table"] <= layout["room"] + 1, layout


# Each finding's culprit table against its card: whether it scrolls in its wrapper, where the wrapper ends, where its
# card ends, and any cell whose words spill out of it.
CULPRIT_TABLES = """[...document.querySelectorAll('table.culprits')].map(t => ({
  scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth + 1,
  right: t.parentElement.getBoundingClientRect().right, card: t.closest('.finding, .incident').getBoundingClientRect().right,
  cells: [...t.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)}))"""


@pytest.mark.parametrize("width", [1400, 800])
def test_culprit_tables_fit_their_cards(chromium, demo_report, width):
    """A finding's culprit table, its shape column too, is within the finding's card at 1400 px without scrolling (the
    shape column was cut at the card's edge); at 800 px it scrolls inside the card. No cell's words spill out."""
    path, _ = demo_report
    with Chromium(chromium, width=width, height=900) as browser:
        browser.open(path.as_uri())
        tables = browser.evaluate(CULPRIT_TABLES)
    assert tables, "the demo report has culprit tables"
    for t in tables:
        assert t["right"] <= t["card"] + 1 and not t["cells"], t
        assert width < 1400 or not t["scrolls"], t


def test_slow_operation_filters_work_from_the_keyboard(chromium, busy_report):
    """Namespace, operation and COLLSCAN filters are native controls: reached with Tab, changed with the keys."""
    path, report = busy_report
    queries = report.nodes[0].workload.queries
    shown = """[...document.querySelector('table[id$=slow-ops]').tBodies].filter(b => !b.hidden)
      .map(b => [b.dataset.ns, b.dataset.op, b.dataset.collscan])"""

    def key(browser, name: str, code: str, text: str = "") -> None:
        for kind in ("keyDown", "keyUp"):
            browser.call("Input.dispatchKeyEvent", type=kind, key=name, code=code, text=text if kind == "keyDown" else "")

    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate("document.querySelector('details[id$=-workload]').open = true")
        browser.evaluate("document.querySelector('[data-filter=collscan]').focus()")
        key(browser, " ", "Space", " ")
        scans = browser.evaluate(shown)
        assert scans and all(c == "1" for _, _, c in scans), scans
        assert len(scans) == queries.filter(pl.col("collscan_share") > 0).height
        key(browser, " ", "Space", " ")  # off again
        browser.evaluate("document.querySelector('[data-filter=op]').focus()")
        key(browser, "ArrowDown", "ArrowDown")  # the first operation after "all"
        first = sorted(queries["command"].drop_nulls().unique())[0]
        ops = browser.evaluate(shown)
        assert ops and {op for _, op, _ in ops} == {first}, ops
        assert len(ops) == min(20, queries.filter(pl.col("command") == first).height)
        errors = browser.errors()
    assert errors == [], errors


def test_slowest_lines_are_one_click_away_and_text(chromium, busy_report):
    """Each shape's slowest lines of the log, whole and escaped, open with one click on their summary."""
    path, report = busy_report
    first = report.nodes[0].workload.queries.row(0, named=True)
    with Chromium(chromium, width=1400, height=900) as browser:
        browser.open(path.as_uri())
        browser.evaluate("document.querySelector('details[id$=-workload]').open = true")
        browser.evaluate("document.querySelector('table[id$=slow-ops] tbody tr.detail details summary').click()")
        texts = browser.evaluate(
            "[...document.querySelector('table[id$=slow-ops] tbody tr.detail details[open]').querySelectorAll('pre')]"
            ".map(p => p.textContent)"
        )
    assert texts == [run["log_line"] for run in first["slowest"]]
    assert all('"msg":"Slow query"' in t for t in texts)
