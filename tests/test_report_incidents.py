"""The report a support engineer reads (issue 12 §2, §3b): incidents first, each card's plot of its own
chain and window, numbers that agree between text and plots, plots that can be read, several nodes
told as one replica set. The figures are drawn (SVG) and measured from what they draw, not just built."""

import dataclasses
import datetime as dt
import json
import re
import warnings
from html import escape
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import polars as pl
import pytest
from conftest import require_samples
from rich.console import Console

import analysis
from analysis.advice import wording
from analysis.findings import culprits
from analysis.findings.detectors import NAMES, RECORDS
from analysis.findings.finding import Culprit
from analysis.outputs.console import render_incidents
from analysis.outputs.document import result_document
from analysis.outputs.report import build_report, culprit_table, explorer, figures, plots, write_report

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
DEMO = SAMPLES
REPLICA_SET = SAMPLES / "scenarios" / "replica-set"


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def demo():
    return quiet(analysis.analyze, DEMO / "diagnostic.data", DEMO / "mongod.log")


@pytest.fixture(scope="module")
def demo_report(demo):
    return build_report([demo])


@pytest.fixture(scope="module")
def demo_page(demo_report, tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "report.html"
    write_report(demo_report, path)
    return path.read_text()


@pytest.fixture(scope="module")
def replica_set():
    return quiet(analysis.analyze_nodes, sorted(REPLICA_SET.glob("node*/diagnostic.data")), REPLICA_SET)


@pytest.fixture(scope="module")
def chunk_80(ftdc_samples):
    path = require_samples("ftdc", "mongod-8.0-chunk")
    return quiet(analysis.analyze, next(path.glob("metric-*")))


SVG = "{http://www.w3.org/2000/svg}"


def parsed(fig: str) -> ElementTree.Element:
    return ElementTree.fromstring(fig)


def of_class(root, cls: str) -> list:
    return [e for e in root.iter() if e.get("class") == cls]


def texts(fig: str, cls: str = "") -> list[str]:
    return ["".join(e.itertext()) for e in parsed(fig).iter(f"{SVG}text") if not cls or e.get("class") == cls]


def titles(fig: str) -> list[str]:
    return texts(fig, "title")


def frame(panel) -> tuple[float, float, float, float]:
    """A panel's plot area: (left, top, right, bottom), its outline the panel's last rectangle."""
    rect = [r for r in panel.iter(f"{SVG}rect") if r.get("fill") == "none"][-1]
    x, y = float(rect.get("x")), float(rect.get("y"))
    return x, y, x + float(rect.get("width")), y + float(rect.get("height"))


def span(fig: str) -> tuple[dt.datetime, dt.datetime]:
    root = parsed(fig)
    return dt.datetime.fromisoformat(root.get("data-start")), dt.datetime.fromisoformat(root.get("data-end"))


def steps(d: str) -> list[tuple[float, float, float]]:
    """A step path's horizontal runs (x0, x1, y), from its M, h and v commands."""
    out, x, y = [], 0.0, 0.0
    for command, a, b in re.findall(r"([MhvH])([-\d.]+)(?: ([-\d.]+))?", d):
        if command == "M":
            x, y = float(a), float(b)
        elif command in "hH":
            end = x + float(a) if command == "h" else float(a)
            out.append((x, end, y))
            x = end
        else:
            y += float(a)
    return out


def number(label: str) -> float:
    return float(label[:-1]) * {"k": 1e3, "M": 1e6, "G": 1e9}[label[-1]] if label[-1] in "kMG" else float(label)


def value_of(panel):
    """A linear panel's pixel row -> value, from its tick labels (each drawn 4 px below its tick)."""
    ticks = [(number(t.text), float(t.get("y")) - 4) for t in panel.iter(f"{SVG}text") if t.get("class") == "ytick"]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return lambda y: v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def width(text: str, size: float = plots.FONT) -> float:
    """The figure's own generous estimate of a text's width (plots._width)."""
    return plots._width(text, size)


def x_of(fig: str, t: dt.datetime) -> float:
    start, end = span(fig)
    return plots.LEFT + plots.PIXELS * (t - start) / (end - start)


# --- §2: incidents first -----------------------------------------------------------------------


def test_the_first_screen_is_the_headlines_then_the_incident_cards(demo, demo_report, demo_page):
    assert demo.incidents
    assert len(demo_report.headlines) == len(demo.incidents)
    for headline, incident in zip(demo_report.headlines, demo.incidents):
        # One per incident: its title (root cause → effect) and its first fix.
        assert incident.title in headline and wording.text(incident.recommendations[0]) in headline and incident.id in headline
    first_incident, first_finding = demo_page.index('<div class="incident '), demo_page.index('<div class="finding ')
    assert demo_page.index('class="headline"') < first_incident < first_finding
    card = demo_page[first_incident:first_finding]
    incident = demo.incidents[0]
    # One list of fixes: a handful, and the rest folded under their count.
    folded = len(incident.recommendations) > wording.HANDFUL
    assert escape(incident.root_cause.summary) in card and card.count('<div class="plot"') == 1
    assert card.count("<ul>") == 1 + folded and card.count("<details class=more-fixes>") == folded
    for step in incident.chain:  # every step names its findings
        assert escape(step.text) in card and ", ".join(step.findings) in card


def test_a_quiet_node_says_no_incident_and_what_was_checked():
    node = quiet(analysis.analyze, SAMPLES / "scenarios" / "healthy" / "diagnostic.data")
    assert not node.incidents
    report = build_report([node])
    [headline] = report.headlines
    assert "No incident" in headline and f"{node.overview.samples:,} samples" in headline
    # The span in words, with its zone (issue 39 §5: no bare ISO stamp), and each kind by its name, not its identifier.
    assert f"from {node.overview.first:%Y-%m-%d %H:%M:%S} – {node.overview.last:%H:%M:%S} UTC" in headline
    # Every kind its data let run, and only those (this node records no replica set status: issue 39, judge4 #4).
    checks = headline.split("Checked, ", 1)[1].split(": ", 1)[1].split(";", 1)[0].split(", ")
    unchecked = {f.kind for f in node.findings if f.not_checked}
    assert unchecked == {"replication_lag", "cpu_saturation"}  # and no runnable threads: the simulator records none
    ran = [kind for kind, record in RECORDS.items() if not unchecked & set(record.kinds)]
    assert sorted(checks) == sorted(NAMES[kind] for kind in ran)
    assert "replication lag" not in checks and "primary change" not in checks
    assert not report.incidents
    # Its notes counted in words, one in the singular, in the terminal too ("1 context finding(s), --findings lists them"
    # before).
    assert len(node.findings) == 2
    for findings, said in (
        (node.findings, "; 2 context findings, --findings lists them."),
        (node.findings[:1], "; 1 context finding, --findings lists it."),
    ):
        console = Console(width=400, record=True)
        console.print(render_incidents(dataclasses.replace(node.result, findings=findings), 400), soft_wrap=True)
        assert said in console.export_text()


def test_a_quiet_member_names_the_replica_sets_findings_about_it(replica_set, tmp_path):
    """rs1-b took the primary (the set-wide X2, a warning) yet has no incident of its own: its "No incident" line says
    the set's finding concerns it, in every format, rather than "none reached warning or critical" (judge4 #3)."""
    [b] = [n for n, name in zip(replica_set.nodes, replica_set.names) if name.startswith("rs1-b")]
    [change] = [f for f in replica_set.cross_node if f.kind == "primary_change"]
    assert not b.incidents and change.severity == "warning" and change.evidence["to_address"] == b.node.address
    report = build_report(replica_set)
    [section] = [s for s in report.nodes if s.analysis is b]
    [line] = section.headlines
    assert "none reached warning" not in line and f"the replica set's {change.id} (warning) concerns it" in line
    # Its one-hour capture said as the healthy node's three hours are, to the minute from an hour on (judge4 #16).
    assert "07:00:00 – 07:59:59 UTC (1 h, 3,600 samples)" in line
    document = result_document(replica_set)
    [node] = [n for n in document["nodes"] if n["name"] == section.name]
    assert node["headlines"] == [line]
    write_report(report, tmp_path / "r.md")
    assert line.split(": ", 1)[1][:40] in (tmp_path / "r.md").read_text()
    console = Console(width=400, record=True)
    console.print(render_incidents(b.result, 400, replica_set.cross_node), soft_wrap=True)
    said = console.export_text()
    assert "no warning or critical" not in said and f"{change.id} (warning) concerns it" in said


# --- §3b: each card's plot shows its own window and chain -------------------------------------


def test_each_card_plots_its_own_window(demo, demo_report):
    section = demo_report.nodes[0]
    # The demo's findings are all folded into its incident, drawn there; a finding's own plot is drawn as the detail needs it.
    assert not section.evidence
    drawings = [c.figure.svg for c in demo_report.incidents] + [figures.finding(demo, demo.findings[i]) for i in section.carded]
    assert len(set(drawings)) == len(drawings) == len(demo.incidents) + len(section.carded)
    for f in (demo.findings[i] for i in section.carded):
        low, high = span(figures.finding(demo, f))
        assert low <= f.start and f.end <= high
        # Centred on its own window (cut only where the data ends).
        margin_before, margin_after = f.start - low, high - f.end
        assert (
            abs(margin_before - margin_after) < dt.timedelta(seconds=2)
            or low == demo.overview.first
            or high == demo.overview.last
        )


def test_an_incident_plot_stacks_its_chain_cause_above_effect(demo):
    incident = demo.incidents[0]
    names = titles(figures.incident(demo, incident))
    assert incident.root_cause.kind == "operation" and names[0].startswith("root cause: COLLSCAN")
    # Each step's panels in chain order, numbered as the chain is.
    steps = [int(t.split(".")[0]) for t in names[1:]]
    assert steps == sorted(steps) and set(steps) == set(range(1, len(incident.chain) + 1))


def test_the_report_of_a_real_chunk_is_small(chunk_80, tmp_path):
    """The real 8.0 report was 4.3 MB with twelve copies of one plot; now one per card, a palette each."""
    path = tmp_path / "r.html"
    write_report(build_report([chunk_80]), path)
    assert path.stat().st_size < 1_000_000


# --- §3b: numbers that agree ------------------------------------------------------------------


def test_operation_seconds_are_named_and_give_concurrency():
    culprit = Culprit(
        ns="app.events",
        plan_summary="COLLSCAN",
        shape=None,
        query_hash=None,
        count=300,
        overlap_s=93_274.0,
        share=0.9,
        max_ms=400_000,
        example=None,
        collscan=True,
        command="aggregate",
        held_s=90_000.0,
    )
    text = culprits.describe(culprit, 378.0)
    assert "93,274 operation-seconds" in text and f"{93_274 / 378:,.1f} running at once" in text


def test_no_text_says_a_query_held_more_seconds_than_its_window(demo_page):
    assert not re.search(r"held [\d,.]+ s of the window", demo_page)
    assert "operation-seconds" in demo_page and "running at once" in demo_page


def test_a_root_causes_culprit_is_told_with_its_findings_table_numbers(demo):
    """The root cause names the finding whose window it describes, so its numbers are that finding's culprit row's."""
    cause = demo.incidents[0].root_cause
    text = cause.evidence["culprit"]
    where = re.match(r"in (\w+)'s window: ", text).group(1)
    [row] = [
        c
        for f in demo.findings
        if f.id == where
        for c in f.culprits
        if (c.ns, c.command) == (cause.evidence["ns"], cause.evidence["command"])
    ]
    said = float(re.search(r"([\d,.]+) operation-seconds", text).group(1).replace(",", ""))
    assert abs(said - row.overlap_s) <= 0.5 and f"({row.share:.0%} of the time slow operations worked there)" in text


@pytest.mark.parametrize("fmt", [".html", ".md"])
def test_the_culprit_table_says_what_its_seconds_and_share_are_of(demo_report, tmp_path, fmt):
    path = tmp_path / f"r{fmt}"
    write_report(demo_report, path)
    text = path.read_text()
    shown = escape if fmt == ".html" else str  # no Markdown-active character in them
    assert all(shown(h) in text for h in culprit_table.HEADERS) and shown(culprit_table.NOTE) in text
    share = [h for h in culprit_table.HEADERS if "share" in h]
    seconds = [h for h in culprit_table.HEADERS if "seconds" in h and h not in share]
    assert len(seconds) == 2 and all("op-seconds" in h for h in seconds) and share == ["share of working op-seconds"]
    assert ">s in window<" not in text and "| s in window |" not in text


def test_the_queue_in_a_title_is_the_queue_plotted(chunk_80):
    """The peak the title says is the peak drawn: exactly in the pixel columns the figure draws, and to the pixel
    in the drawing (read back through the panel's own tick labels)."""
    tickets = [f for f in chunk_80.findings if f.kind == "ticket_exhaustion" and "queued at peak" in f.title]
    assert tickets
    for f in tickets:
        said = float(re.search(r"([\d,]+) \w+ queued at peak", f.title).group(1).replace(",", ""))
        fig = figures.finding(chunk_80, f)
        start, end = span(fig)
        left, right = x_of(fig, f.start), x_of(fig, f.end)
        plotted, drawn, waiters = [], [], []
        for panel in of_class(parsed(fig), "panel"):
            top, bottom = frame(panel)[1::2]
            value = value_of(panel) if any(t.get("class") == "ytick" for t in panel.iter(f"{SVG}text")) else None
            for group in of_class(panel, "series"):
                label = group.get("data-label")
                if f.resource in label and ("queue" in label or "waiters" in label):
                    line = list(group)[-1].get("d")
                    peak = value(min(y for x0, x1, y in steps(line) if x1 > left and x0 < right))
                    (waiters if "waiters" in label else drawn).append(peak)
                    if "waiters" not in label:
                        reduced = plots.pixel_columns(
                            chunk_80.series, [group.get("data-column")], start, end, sampling_ms=explorer.period_ms(chunk_80)
                        )
                        at = reduced.axis.first_ms + reduced.axis.column_ms * np.arange(reduced.axis.columns)
                        inside = (at + reduced.axis.column_ms > f.start.timestamp() * 1000) & (at <= f.end.timestamp() * 1000)
                        plotted.append(np.nanmax(reduced.pairs[group.get("data-column")][inside, 1]))
                    pixel = abs(value(top) - value(bottom)) / (bottom - top)
        assert plotted and max(plotted) == said, (f.title, plotted)
        assert abs(max(drawn) - said) <= pixel, (f.title, drawn)
        # The mean waiters run higher than any sampled queue: plotted too, and their peak is in the finding's evidence (the
        # text quotes one number for the queue, the sampled one the title gives).
        assert waiters and max(waiters) > said
        assert round(f.evidence["queued_peak"][f"{f.resource}_ticket_waiters"]) == round(max(waiters))


@pytest.mark.parametrize("report_of", ["demo", "replica_set"])
def test_one_index_and_one_max_time_per_query_across_the_report(report_of, request, tmp_path):
    result = request.getfixturevalue(report_of)
    path = tmp_path / "r.md"
    write_report(build_report(result if hasattr(result, "nodes") else [result]), path)
    text = path.read_text()
    advice: dict[str, set] = {}
    for ns, index in re.findall(r"Give (\S+) an index for this query[^:]*: (.+?createIndex\(.+?\))", text):
        advice.setdefault(f"index {ns}", set()).add(index)
    for ns, limit in re.findall(r"(\S+) \S+ \(\S+\): .*?maxTimeMS: (\d+)", text):
        advice.setdefault(f"maxTimeMS {ns}", set()).add(limit)
    assert any(k.startswith("index") for k in advice)
    assert all(len(v) == 1 for v in advice.values()), advice


# --- §3b: plots that can be read ----------------------------------------------------------------


def every_figure(demo, replica_set):
    yield figures.timeline(demo)
    yield figures.incident(demo, demo.incidents[0])
    yield figures.finding(demo, demo.problems[0])
    yield figures.members(replica_set.nodes, replica_set.cross_node)


def test_every_plot_says_its_times_are_utc(demo, replica_set):
    for fig in every_figure(demo, replica_set):
        [label] = texts(fig, "xlabel")
        assert "UTC" in label
        assert texts(fig, "xtick")


def test_legends_sit_off_the_data(demo, replica_set):
    for fig in every_figure(demo, replica_set):
        legends = 0
        for panel in of_class(parsed(fig), "panel"):
            top = frame(panel)[1]
            for legend in of_class(panel, "legend"):
                legends += 1
                assert float(legend.get("y")) + 3 <= top  # its baseline and descenders above the panel
        assert legends


def test_threshold_labels_are_whole_and_inside_their_panel(demo):
    fig = figures.incident(demo, demo.incidents[0])
    labels = [(panel, t) for panel in of_class(parsed(fig), "panel") for t in of_class(panel, "threshold")]
    assert len(labels) >= 3
    for panel, text in labels:
        left, top, right, bottom = frame(panel)
        said = text.text
        name = said.split(" ")[0]
        assert (
            re.match(r"eviction_\w+ [\d.]+ % \(", said) and said.endswith(f"({demo.thresholds.source(name)})") and "…" not in said
        )
        x, y = float(text.get("x")), float(text.get("y"))
        x0, x1 = (x - width(said), x) if text.get("text-anchor") == "end" else (x, x + width(said))
        assert left <= x0 and x1 <= right and top <= y - plots.FONT and y <= bottom, said


def test_span_labels_are_not_printed_over_each_other(demo):
    fig = figures.timeline(demo)
    ids = {f.id for f in demo.problems}
    labels = [t for t in of_class(parsed(fig), "span-label") if set(t.text.split(", ")) <= ids]
    assert sorted(i for t in labels for i in t.text.split(", ")) == sorted(ids)
    boxes = sorted((float(t.get("x")), float(t.get("x")) + width(t.text)) for t in labels)
    assert all(a[1] <= b[0] for a, b in zip(boxes, boxes[1:])), boxes


PATH_TOKEN = re.compile(r"[A-Za-z]|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def segments(d: str) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The straight segments of an SVG path in the commands the figures write (M, L, H, V, h, v, Z)."""
    out, x, y, start, command = [], 0.0, 0.0, (0.0, 0.0), ""
    tokens = PATH_TOKEN.findall(d)
    i = 0
    while i < len(tokens):
        if tokens[i].isalpha():
            command, i = tokens[i], i + 1
            if command in "Zz":
                out.append(((x, y), start))
                x, y = start
            continue
        if command in "ML":
            to = (float(tokens[i]), float(tokens[i + 1]))
            i += 2
            if command == "L":
                out.append(((x, y), to))
            else:
                start = to
        else:
            v = float(tokens[i])
            i += 1
            to = {"h": (x + v, y), "H": (v, y), "v": (x, y + v), "V": (x, v)}[command]
            out.append(((x, y), to))
        x, y = to
    return out


def crosses(segment, box: tuple[float, float, float, float]) -> bool:
    """Whether `segment` passes through `box` (left, top, right, bottom): Liang-Barsky clipping."""
    (x0, y0), (x1, y1) = segment
    left, top, right, bottom = box
    enter, leave = 0.0, 1.0
    for p, q in ((x0 - x1, x0 - left), (x1 - x0, right - x0), (y0 - y1, y0 - top), (y1 - y0, bottom - y0)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            enter = max(enter, q / p)
        else:
            leave = min(leave, q / p)
    return enter <= leave


def text_box(element) -> tuple[float, float, float, float]:
    """A text's box: the figure's own generous width, its ascenders and descenders around the baseline."""
    x, y, size = float(element.get("x")), float(element.get("y")), float(element.get("font-size"))
    wide = width("".join(element.itertext()), size)
    left = {"end": x - wide, "middle": x - wide / 2}.get(element.get("text-anchor") or "start", x)
    return left, y - size, left + wide, y + 0.2 * size


def test_notes_along_a_panels_top_are_clear_of_its_lines(demo):
    """The note naming a panel's series at zero throughout (its top left) and the span labels (the first panel's
    top) sit in a band the panel's scale keeps free wherever a line (a series or a threshold) would pass under
    them: the demo's queued panel and its CPU panel each once ran their line through the note."""
    notes = labels = 0
    drawings = [figures.incident(demo, demo.incidents[0]), figures.timeline(demo)]
    for fig in drawings + [figures.finding(demo, f) for f in demo.problems]:
        root = parsed(fig)
        for n, panel in enumerate(of_class(root, "panel")):
            lines = [p.get("d") for g in of_class(panel, "series") for p in g if p.get("fill") == "none"]
            lines += [p.get("d") for p in panel if p.tag == f"{SVG}path" and p.get("stroke-dasharray")]
            drawn = [s for d in lines for s in segments(d)]
            above = of_class(panel, "zero") + (of_class(root, "span-label") if n == 0 and drawn else [])
            notes += len(of_class(panel, "zero"))
            labels += len(above) - len(of_class(panel, "zero"))
            for text in above:
                box = text_box(text)
                assert drawn and not [s for s in drawn if crosses(s, box)], (panel.get("data-title"), text.text)
    assert notes >= 2 and labels >= len(demo.problems)


def opacity(gradient, x: float) -> float:
    """The gradient's opacity at pixel column x (its stops in pairs bounding each run of one opacity)."""
    stops = [(float(s.get("offset")), float(s.get("stop-opacity"))) for s in gradient]
    at = (x - plots.LEFT) / plots.PIXELS
    return next(o for (a, o), (b, _) in zip(stops[::2], stops[1::2]) if a <= at < b)


def test_checkpoints_show_beneath_a_findings_shading(demo):
    """The strip along each panel's foot is dark where a checkpoint ran, drawn above the finding's tint, and clear
    where none ran."""
    stall = next(f for f in demo.problems if f.kind == "checkpoint_stall")
    checkpoint = next(c for c in demo.checkpoints if c.start >= stall.start and c.end <= stall.end)
    fig = figures.finding(demo, stall)
    root = parsed(fig)
    gradients = {g.get("id"): g for g in root.iter(f"{SVG}linearGradient")}
    panel = of_class(root, "panel")[0]
    shapes = list(panel)
    [strip] = of_class(panel, "checkpoint-strip")
    tint = next(r for r in shapes if r.tag == f"{SVG}rect" and r.get("fill") == plots.SEVERITY_COLORS[stall.severity])
    assert shapes.index(tint) < shapes.index(strip)  # drawn over the tint
    gradient = gradients[strip.get("fill")[5:-1]]
    assert {s.get("stop-color") for s in gradient} == {"#595959"}  # dark grey, not the finding's red
    inside = [opacity(gradient, x_of(fig, checkpoint.start + (checkpoint.end - checkpoint.start) * k / 10)) for k in range(2, 9)]
    assert min(inside) > 0.9
    before = [opacity(gradient, x_of(fig, stall.start - dt.timedelta(seconds=s))) for s in range(20, 41, 5)]
    assert max(before) == 0  # no checkpoint there


def labels_drawn(fig: str) -> list[str]:
    return [g.get("data-label") for g in of_class(parsed(fig), "series")]


def test_the_4_2_write_queue_is_plotted(ftdc_samples, demo):
    """A queue that held operations is drawn; one at zero throughout (the 4.2 sample's) is named in its panel instead of
    drawn as a flat line (issue 20 §1: a ticket panel shows what matters, not eight flat lines)."""
    node = quiet(analysis.analyze, require_samples("ftdc", "mongod-4.2.1") / "diagnostic.data")
    assert "write_queued" in node.series.columns and node.series["write_queued"].max() == 0  # globalLock.currentQueue.writers
    fig = figures.timeline(node)
    assert any(t.startswith("zero throughout:") and "writers queued" in t for t in texts(fig, "zero")), texts(fig)
    assert "writers queued" not in labels_drawn(fig)
    assert demo.series["write_queued"].max() > 0
    assert "writers queued" in labels_drawn(figures.timeline(demo))


# --- §3b: several nodes -------------------------------------------------------------------------


def test_several_nodes_one_headline_per_incident(replica_set):
    report = build_report(replica_set)
    incidents = [(name, i) for name, node in zip(replica_set.names, replica_set.nodes) for i in node.incidents]
    assert len(incidents) >= 2 and len(report.headlines) == len(incidents) + len(report.cross_incidents)
    for headline, (name, incident) in zip(report.headlines, incidents):
        assert headline.startswith(f"{name}, {incident.id}") and incident.title in headline


def test_several_nodes_get_a_replica_set_timeline_with_states_and_the_election(replica_set, tmp_path):
    fig = figures.members(replica_set.nodes, replica_set.cross_node)
    rows = texts(fig, "row")
    for node in replica_set.nodes:  # every member's state row, named by its address
        assert node.node.address in rows
    election = next(f for f in replica_set.cross_node if f.kind == "primary_change")
    assert any(t.startswith("election:") for t in texts(fig, "mark-label"))
    marked = of_class(parsed(fig), "mark")
    assert any(dt.datetime.fromisoformat(line.get("data-at")) == election.end for line in marked)
    assert all(line.get("d").count("M") == len(of_class(parsed(fig), "panel")) for line in marked)  # across every panel
    path = tmp_path / "rs.html"
    write_report(build_report(replica_set), path)
    page = path.read_text()
    assert (
        page.index("<h2 id=incidents>Incidents</h2>")
        < page.index("<h2 id=replica-set>Replica set</h2>")
        < page.index(escape(replica_set.names[0]) + "</h2>")
    )


def test_a_lagging_members_card_shows_its_own_disk_and_cache(replica_set):
    lagging = [
        (node, i) for node in replica_set.nodes for i in node.incidents if any(s.kind == "replication_lag" for s in i.chain)
    ]
    assert lagging
    for node, incident in lagging:
        names = titles(figures.incident(node, incident))
        lag = next(n for n, s in enumerate(incident.chain, 1) if s.kind == "replication_lag")
        assert any(t.startswith(f"{lag}. replication lag, this member's own cache") for t in names), names
        assert any("disk" in t for t in names), names


# --- §3b: failed operations ---------------------------------------------------------------------


def test_failed_operations_are_named_as_such(tmp_path):
    log = tmp_path / "mongod.log"
    lines = []
    for line in (DEMO / "mongod.log").read_text().splitlines():
        doc = json.loads(line)
        if doc.get("attr", {}).get("type") == "update":  # the demo's IDHACK updates: interrupted, no plan
            doc["attr"].pop("planSummary", None)
            doc["attr"].update(ok=0, errName="ClientDisconnect", errCode=279)
        lines.append(json.dumps(doc))
    log.write_text("\n".join(lines) + "\n")
    node = quiet(analysis.analyze, DEMO / "diagnostic.data", log)
    failed = [c for f in node.findings for c in f.culprits if c.command == "update"]
    assert failed and all(c.failed == c.count and c.error == "ClientDisconnect" for c in failed)
    assert all(
        culprit_table.plan(c) == f"failed {c.count} of {c.count} run{'s' * (c.count != 1)}: ClientDisconnect" for c in failed
    )
    path = tmp_path / "r.html"
    write_report(build_report([node]), path)
    page = path.read_text()
    assert "ClientDisconnect" in page
    rows = re.findall(r"<tr><td>shop\.orders</td><td>update</td><td>([^<]*)</td>", page)
    assert rows and all(r.startswith("failed") for r in rows)


def test_a_run_that_succeeded_is_not_called_failed():
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    ops = pl.DataFrame(
        {
            "ts": [t0 + dt.timedelta(seconds=10)] * 2,
            "started": [t0] * 2,
            "duration_ms": [10_000] * 2,
            "ns": ["a.b"] * 2,
            "command": ["find"] * 2,
            "op_type": ["query"] * 2,
            "write_statement": [False] * 2,
            "plan_summary": ["IXSCAN { a: 1 }"] * 2,
            "plan_kind": ["IXSCAN"] * 2,
            "shape": ["{}"] * 2,
            "query_hash": [None] * 2,
            "query_shape_hash": [None] * 2,
            "command_json": [None] * 2,
            "ok": [True, False],
            "err_name": [None, "MaxTimeMSExpired"],
        },
        schema_overrides={
            "ts": pl.Datetime("ms", "UTC"),
            "started": pl.Datetime("ms", "UTC"),
            "query_hash": pl.String,
            "query_shape_hash": pl.String,
            "command_json": pl.String,
        },
    )
    [culprit] = culprits.rank(ops, t0, t0 + dt.timedelta(seconds=10))
    assert culprit.count == 2 and culprit.failed == 1 and culprit.error == "MaxTimeMSExpired"
    assert culprit_table.plan(culprit) == "IXSCAN { a: 1 } (failed 1 of 2 runs: MaxTimeMSExpired)"


def test_findings_are_drawn_once_and_the_worst_incidents_get_the_cards(monkeypatch):
    from analysis.outputs import document

    dips = SAMPLES / "scenarios" / "throughput-dip"
    result = quiet(analysis.analyze, dips / "diagnostic.data", dips / "mongod.log")
    assert len(result.incidents) == 3
    monkeypatch.setattr(document, "MAX_CARDS", 1)  # the one limit the cards and the headlines share (analysis.outputs.document)
    report = build_report([result])
    section = report.nodes[0]
    [card] = section.incidents
    worst = sorted(result.incidents, key=lambda i: (["critical", "warning", "info"].index(i.severity), -i.seconds))[0]
    assert card.incident is worst and card.figure is not None
    assert [i.id for _, i in report.more_incidents] == [i.id for i in result.incidents if i is not worst]
    # A finding folded into the carded incident is drawn in its plot; one of another incident has a plot of its own.
    by_id = {f.id: i for i, f in enumerate(section.findings)}
    for index in section.carded:
        assert (index in section.evidence) == (section.findings[index].id not in card.incident.finding_ids)
    assert all(by_id[f] not in section.evidence for f in card.incident.finding_ids)
    from analysis.outputs.report import html

    assert f"{len(report.more_incidents)} more, less severe incidents" in html.render(report)
