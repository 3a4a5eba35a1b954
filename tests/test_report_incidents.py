"""The report a support engineer reads (issue 12 §2, §3b): incidents first, each card's plot of its own
chain and window, numbers that agree between text and plots, plots that can be read, several nodes
told as one replica set. The figures are drawn and measured, not just built."""

import datetime as dt
import json
import re
import warnings
from html import escape
from pathlib import Path

import matplotlib.dates as mdates
import numpy as np
import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import analysis
from analysis.advice import wording
from analysis.findings import culprits
from analysis.findings.finding import Culprit
from analysis.outputs.report import build_report, culprit_table, figures, plots, write_report
from conftest import require_samples

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


def drawn(fig):
    """The figure drawn as the PNG is: its renderer, for measuring what is on it."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def titles(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts if tuple(t.get_position()) == (0, 1.03)]


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
    assert escape(incident.root_cause.summary) in card and card.count("<img") == 1 and card.count("<ul>") == 1
    for step in incident.chain:  # every step names its findings
        assert escape(step.text) in card and ", ".join(step.findings) in card


def test_a_quiet_node_says_no_incident_and_what_was_checked():
    node = quiet(analysis.analyze, SAMPLES / "scenarios" / "healthy" / "diagnostic.data")
    assert not node.incidents
    report = build_report([node])
    [headline] = report.headlines
    assert "No incident" in headline and f"{node.overview.samples:,} samples" in headline
    assert node.overview.first.strftime("%Y-%m-%dT%H:%M") in headline and node.overview.last.strftime("%Y-%m-%dT%H:%M") in headline
    assert all(kind in headline for kind in analysis.detectors.RECORDS)
    assert not report.incidents


# --- §3b: each card's plot shows its own window and chain -------------------------------------

def test_each_card_plots_its_own_window(demo, demo_report):
    section = demo_report.nodes[0]
    # The demo's findings are all folded into its incident, drawn there; a finding's own plot is drawn as the detail needs it.
    assert not section.evidence
    pngs = [c.figure.png for c in demo_report.incidents] + [plots.png(figures.finding(demo, demo.findings[i])) for i in section.carded]
    assert len(set(pngs)) == len(pngs) == len(demo.incidents) + len(section.carded)
    for f in (demo.findings[i] for i in section.carded):
        low, high = figures.finding(demo, f).axes[0].get_xlim()
        assert mdates.num2date(low) <= f.start and f.end <= mdates.num2date(high)
        # Centred on its own window (cut only where the data ends).
        margin_before, margin_after = f.start - mdates.num2date(low), mdates.num2date(high) - f.end
        assert abs(margin_before - margin_after) < dt.timedelta(seconds=2) or mdates.num2date(low) == demo.overview.first \
            or mdates.num2date(high) == demo.overview.last


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
    culprit = Culprit(ns="app.events", plan_summary="COLLSCAN", shape=None, query_hash=None, count=300, overlap_s=93_274.0, share=0.9,
                      max_ms=400_000, example=None, collscan=True, command="aggregate", held_s=90_000.0)
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
    [row] = [c for f in demo.findings if f.id == where for c in f.culprits if (c.ns, c.command) == (cause.evidence["ns"], cause.evidence["command"])]
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
    assert len(seconds) == 2 and all("op-seconds" in h for h in seconds) and share == ["share of all slow ops' working op-seconds"]
    assert ">s in window<" not in text and "| s in window |" not in text


def test_the_queue_in_a_title_is_the_queue_plotted(chunk_80):
    tickets = [f for f in chunk_80.findings if f.kind == "ticket_exhaustion" and "queued at peak" in f.title]
    assert tickets
    for f in tickets:
        said = float(re.search(r"([\d,]+) \w+ queued at peak", f.title).group(1).replace(",", ""))
        fig = figures.finding(chunk_80, f)
        plotted, waiters = [], []
        for ax in fig.axes:
            for line in ax.get_lines():
                label = line.get_label()
                if f.resource in label and ("queue" in label or "waiters" in label):
                    t = np.array(mdates.date2num(line.get_xdata()))
                    inside = (t >= mdates.date2num(f.start)) & (t <= mdates.date2num(f.end))
                    (waiters if "waiters" in label else plotted).append(np.nanmax(np.asarray(line.get_ydata(), float)[inside]))
        assert plotted and max(plotted) == said, (f.title, plotted)
        # The mean waiters run higher than any sampled queue: plotted too, and the explanation gives their peak.
        assert waiters and max(waiters) > said and f"{max(waiters):,.0f} waiting on average" in f.explanation


@pytest.mark.parametrize("report_of", ["demo", "replica_set"])
def test_one_index_and_one_max_time_per_query_across_the_report(report_of, request, tmp_path):
    result = request.getfixturevalue(report_of)
    nodes, cross = (result.nodes, result.cross_node) if hasattr(result, "nodes") else ([result], [])
    path = tmp_path / "r.md"
    write_report(build_report(nodes, cross), path)
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
        assert "UTC" in fig.axes[-1].get_xlabel()


def test_legends_sit_off_the_data(demo, replica_set):
    for fig in every_figure(demo, replica_set):
        renderer = drawn(fig)
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:
                assert legend.get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1 - 1


def test_threshold_labels_are_whole_and_inside_their_panel(demo):
    fig = figures.incident(demo, demo.incidents[0])
    renderer = drawn(fig)
    labels = [(ax, t) for ax in fig.axes for t in ax.texts if re.match(r"eviction_\w+ [\d.]+ % \(", t.get_text())]
    assert len(labels) >= 3
    for ax, text in labels:
        name = text.get_text().split(" ")[0]
        assert text.get_text().endswith(f"({demo.thresholds.source(name)})") and "…" not in text.get_text()
        box, panel = text.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1 + 1, text.get_text()


def test_span_labels_are_not_printed_over_each_other(demo):
    fig = figures.timeline(demo)
    renderer = drawn(fig)
    ids = {f.id for f in demo.problems}
    labels = [t for t in fig.axes[0].texts if set(t.get_text().split(", ")) <= ids]
    assert sorted(i for t in labels for i in t.get_text().split(", ")) == sorted(ids)
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_checkpoints_show_beneath_a_findings_shading(demo):
    stall = next(f for f in demo.problems if f.kind == "checkpoint_stall")
    checkpoint = next(c for c in demo.checkpoints if c.start >= stall.start and c.end <= stall.end)
    fig = figures.finding(demo, stall)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[:, :, :3].astype(int)
    ax = fig.axes[0]
    row = pixels.shape[0] - 1 - int(ax.transAxes.transform((0, plots.STRIP / 2))[1])

    def strip(start: dt.datetime, end: dt.datetime) -> np.ndarray:
        """The strip's median colour across [start, end] (a data line may cross it here and there)."""
        xs = [int(ax.transData.transform((mdates.date2num(start + (end - start) * k / 20), 0))[0]) for k in range(1, 20)]
        return np.median(pixels[row, xs], axis=0)

    during = strip(checkpoint.start, checkpoint.end)
    assert during.max() < 140 and abs(during[0] - during[2]) < 40  # dark grey, not the finding's red
    assert strip(stall.start - dt.timedelta(seconds=40), stall.start - dt.timedelta(seconds=20)).min() > 200  # no checkpoint there


def test_the_4_2_write_queue_is_plotted(ftdc_samples, demo):
    """A queue that held operations is drawn; one at zero throughout (the 4.2 sample's) is named in its panel instead of
    drawn as a flat line (issue 20 §1: a ticket panel shows what matters, not eight flat lines)."""
    node = quiet(analysis.analyze, require_samples("ftdc", "mongod-4.2.1") / "diagnostic.data")
    assert "write_queued" in node.series.columns and node.series["write_queued"].max() == 0  # globalLock.currentQueue.writers
    fig = figures.timeline(node)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("zero throughout:") and "writers queued" in t for t in texts), texts
    assert not any(line.get_label() == "writers queued" for ax in fig.axes for line in ax.get_lines())
    assert demo.series["write_queued"].max() > 0
    drawn = figures.timeline(demo)
    assert any(line.get_label() == "writers queued" for ax in drawn.axes for line in ax.get_lines())


# --- §3b: several nodes -------------------------------------------------------------------------

def test_several_nodes_one_headline_per_incident(replica_set):
    report = build_report(replica_set.nodes, replica_set.cross_node)
    incidents = [(name, i) for name, node in zip(replica_set.names, replica_set.nodes) for i in node.incidents]
    assert len(incidents) >= 2 and len(report.headlines) == len(incidents) + len(report.cross_incidents)
    for headline, (name, incident) in zip(report.headlines, incidents):
        assert headline.startswith(f"{name}, {incident.id}") and incident.title in headline


def test_several_nodes_get_a_replica_set_timeline_with_states_and_the_election(replica_set, tmp_path):
    fig = figures.members(replica_set.nodes, replica_set.cross_node)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for node in replica_set.nodes:  # every member's state row, named by its address
        assert node.node.address in texts
    election = next(f for f in replica_set.cross_node if f.kind == "primary_change")
    assert any(t.startswith("election:") for t in texts)
    marked = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert any(mdates.date2num(line.get_xdata()[0]) == pytest.approx(mdates.date2num(election.end)) for line in marked)
    path = tmp_path / "rs.html"
    write_report(build_report(replica_set.nodes, replica_set.cross_node), path)
    page = path.read_text()
    assert page.index("<h2 id=incidents>Incidents</h2>") < page.index("<h2 id=replica-set>Replica set</h2>") < page.index(escape(replica_set.names[0]) + "</h2>")


def test_a_lagging_members_card_shows_its_own_disk_and_cache(replica_set):
    lagging = [(node, i) for node in replica_set.nodes for i in node.incidents if any(s.kind == "replication_lag" for s in i.chain)]
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
    assert all(culprit_table.plan(c) == f"failed {c.count} of {c.count} run(s): ClientDisconnect" for c in failed)
    path = tmp_path / "r.html"
    write_report(build_report([node]), path)
    page = path.read_text()
    assert "ClientDisconnect" in page
    rows = re.findall(r"<tr><td>shop\.orders</td><td>update</td><td>([^<]*)</td>", page)
    assert rows and all(r.startswith("failed") for r in rows)


def test_a_run_that_succeeded_is_not_called_failed():
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    ops = pl.DataFrame({
        "ts": [t0 + dt.timedelta(seconds=10)] * 2, "started": [t0] * 2, "duration_ms": [10_000] * 2, "ns": ["a.b"] * 2,
        "command": ["find"] * 2, "op_type": ["query"] * 2, "write_statement": [False] * 2, "plan_summary": ["IXSCAN { a: 1 }"] * 2,
        "plan_kind": ["IXSCAN"] * 2, "shape": ["{}"] * 2, "query_hash": [None] * 2, "query_shape_hash": [None] * 2, "command_json": [None] * 2,
        "ok": [True, False], "err_name": [None, "MaxTimeMSExpired"],
    }, schema_overrides={"ts": pl.Datetime("ms", "UTC"), "started": pl.Datetime("ms", "UTC"), "query_hash": pl.String,
                         "query_shape_hash": pl.String, "command_json": pl.String})
    [culprit] = culprits.rank(ops, t0, t0 + dt.timedelta(seconds=10))
    assert culprit.count == 2 and culprit.failed == 1 and culprit.error == "MaxTimeMSExpired"
    assert culprit_table.plan(culprit) == "IXSCAN { a: 1 } (failed 1 of 2 run(s): MaxTimeMSExpired)"


def test_findings_are_drawn_once_and_the_worst_incidents_get_the_cards(monkeypatch):
    from analysis.outputs import document

    dips = SAMPLES / "scenarios" / "throughput-dip"
    result = quiet(analysis.analyze, dips / "diagnostic.data", dips / "mongod.log")
    assert len(result.incidents) == 3
    monkeypatch.setattr(document, "MAX_CARDS", 1)  # the one limit the cards and the headlines share (analysis.document)
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

    assert f"{len(report.more_incidents)} more, less severe incident(s)" in html.render(report)
