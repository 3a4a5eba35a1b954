"""One value per quantity (issue 39 §4): every scenario and real sample, in the model and in each format (the JSON
document, the Markdown report, the terminal), quotes each quantity of an incident with one value wherever it appears:
how long tickets were exhausted, how many checkpoints ran over how long, what a culprit held and how long it ran, the
baseline and what it rests on, thread time said as thread time, and the oplog window from what records it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import json
import re
import warnings
from pathlib import Path

import polars as pl
import pytest
from bson.timestamp import Timestamp
from rich.console import Console
from scenario_nodes import SCENARIO_NAMES, analyzed_result
from scenario_nodes import analyzed_nodes as _analyzed

import analysis
from analysis.advice.wording import text as advice_text
from analysis.findings.culprits import concurrency
from analysis.incidents.root_causes import rank_causes
from analysis.outputs import system
from analysis.outputs.console import render_findings, render_incidents
from analysis.outputs.report import build_report, write_report
from analysis.text import duration
from ftdc.frames import TIME_COLUMN
from ftdc.writer import FTDCWriter

ROOT = Path(__file__).resolve().parents[1]
NODES = [
    *(f"scenario:{name}" for name in SCENARIO_NAMES),
    *(f"real:{name}" for name in ("mongod-4.2.1", "mongod-7.0")),
]
UTC = dt.timezone.utc

# A duration as `analysis.text.duration` writes it: "10 s", "0.4 s", "4 min 30 s", "2 h 5 min", "3 d 4 h".
DURATION = r"\d[\d,]*(?:\.\d+)? (?:s|min|h|d)(?: \d+ (?:s|min|h))?\b"
UNITS = {"s": 1, "min": 60, "h": 3600, "d": 86400}


def seconds_of(text: str) -> float:
    """The seconds a `duration` text says ("1 h 55 min" is 6,900)."""
    return sum(float(n.replace(",", "")) * UNITS[u] for n, u in re.findall(r"([\d.,]+) (s|min|h|d)\b", text))


@pytest.fixture(scope="module", params=NODES)
def analyzed(request):
    return request.param, *_analyzed(request.param)


@pytest.fixture(scope="module")
def rendered(analyzed, tmp_path_factory):
    """The node's report in each format, as text: the JSON document, the Markdown (unescaped), the HTML page's
    words, the terminal."""
    name, nodes, _ = analyzed
    folder = tmp_path_factory.mktemp(name.replace(":", "-"))
    report = build_report(analyzed_result(name))
    texts = {}
    for fmt in (".json", ".md", ".html"):
        write_report(report, folder / f"report{fmt}")
        texts[fmt] = (folder / f"report{fmt}").read_text()
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", texts[".html"], flags=re.S)
    texts[".html"] = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())  # the page's words, as read
    texts[".md"] = re.sub(r"\\(.)", r"\1", texts[".md"])  # Markdown's escapes
    texts[".json"] = "\n".join(_strings(json.loads(texts[".json"])))
    # Wide enough that no table cell wraps (a quantity split over a cell's two lines is one value to a reader).
    console = Console(record=True, width=400, file=open("/dev/null", "w"))
    for node in nodes:
        console.print(render_incidents(node.result, 400), render_findings(node.result, 400))
    texts["terminal"] = " ".join(console.export_text().split())
    return texts


def _strings(value) -> list[str]:
    """Every string of a JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def _kind(finding) -> str:
    return finding.kind


def _card(incident) -> list[str]:
    """Every sentence of an incident's card: its title, chain, root cause and candidates, its findings' words."""
    causes = [incident.root_cause, *incident.candidates]
    return [
        incident.title,
        *(s.text for s in incident.chain),
        *(c.summary for c in causes),
        *(str(v) for c in causes for v in c.evidence.values() if isinstance(v, str)),
        *(f.title for f in incident.findings),
        *(f.explanation for f in incident.findings),
    ]


# --- tickets: the time none was free, one value ---------------------------------------------------------------

EXHAUSTED = re.compile(rf"(Read|Write) tickets exhausted for ({DURATION}(?: of {DURATION})?)")
NONE_FREE = re.compile(rf"(Read|Write) tickets \d+ of \d+ available from .*? \(none free for ({DURATION}(?: of {DURATION})?)\)")


def _exhausted(finding) -> str:
    """How long no ticket was free, from the finding's evidence: the value every sentence must quote."""
    held, window = duration(finding.evidence["seconds_exhausted"]), duration(finding.seconds)
    return held if held == window else f"{held} of {window}"


def test_tickets_exhausted_for_one_duration_in_title_text_and_evidence(analyzed):
    # "exhausted for 4 min 46 s" (the window) in the title and "none free for 4 min 33 s" (the time none was free) in
    # the text of one finding: one quantity, two values (issue 39 §4).
    name, nodes, _ = analyzed
    for node in nodes:
        for f in node.findings:
            if _kind(f) != "ticket_exhaustion" or "seconds_exhausted" not in f.evidence:
                continue
            said = {m.group(2) for m in EXHAUSTED.finditer(f.title)} | {m.group(2) for m in NONE_FREE.finditer(f.explanation)}
            assert said == {_exhausted(f)}, (name, f.id, said, _exhausted(f))
        for incident in node.incidents:
            for f in incident.findings:
                if _kind(f) == "ticket_exhaustion" and "seconds_exhausted" in f.evidence:
                    quoted = {
                        m.group(2)
                        for text in _card(incident)
                        for m in EXHAUSTED.finditer(text)
                        if m.group(1).lower() == f.resource
                    }
                    assert quoted == {_exhausted(f)}, (name, incident.id, quoted)


def _ticket_node(directory: Path) -> Path:
    """A 6.0 node whose write tickets ran out twice, 2 s apart: one window (they are merged) in which none was free
    for all but 2 s of it."""
    start = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
    metadata = {
        "start": start,
        "buildInfo": {"version": "6.0.14"},
        "getCmdLineOpts": {"parsed": {"net": {"port": 27017}}},
        "hostInfo": {"system": {"hostname": "db1.example.net", "numCores": 4, "memSizeMB": 16384}, "os": {"name": "Ubuntu"}},
        "end": start,
    }
    with FTDCWriter(directory, metadata=metadata, samples_per_chunk=60) as writer:
        for i in range(900):
            t = start + dt.timedelta(seconds=i)
            out = 128 if 600 <= i < 630 or 632 <= i < 660 else 10
            tickets = {rw: {"out": out, "available": 128 - out, "totalTickets": 128} for rw in ("write", "read")}
            tickets["read"] = {"out": 3, "available": 125, "totalTickets": 128}
            status = {
                "start": t,
                "uptime": 1000 + i,
                "connections": {"current": 50, "totalCreated": 100},
                "opcounters": {"insert": 100 * i, "query": 200 * i},
                "globalLock": {"currentQueue": {"readers": 0, "writers": 40 if out == 128 else 0}},
                "wiredTiger": {"concurrentTransactions": tickets},
                "end": t,
            }
            writer.add_sample({"start": t, "serverStatus": status, "end": t})
    return directory


def test_tickets_exhausted_for_the_time_none_was_free_when_the_window_is_longer(tmp_path):
    # The title quoted the window (1 min) while the text quoted the time none was free (58 s of 1 min).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(_ticket_node(tmp_path / "diagnostic.data"))
    found = [f for f in node.findings if _kind(f) == "ticket_exhaustion" and f.resource == "write" and f.severity != "info"]
    assert len(found) == 1
    f = found[0]
    assert f.evidence["seconds_exhausted"] < f.seconds  # the two stretches, merged: the window holds the 2 s between them
    said = {m.group(2) for m in EXHAUSTED.finditer(f.title)} | {m.group(2) for m in NONE_FREE.finditer(f.explanation)}
    assert said == {_exhausted(f)} and " of " in _exhausted(f), said


# --- checkpoints: counted once over the finding's own window ------------------------------------------------------

SPIKED = re.compile(rf"latency spiked in (\d+)(?: of the (\d+))? checkpoints over ({DURATION})")
COUNTED = re.compile(
    rf"(\d+) checkpoints?( back to back)? in (F\d+)'s ({DURATION}) \(checkpointing [\d.]+ % of the time\), "
    rf"(up to |lasting )({DURATION})"
)


def test_a_checkpoint_stall_counts_its_checkpoints_over_its_own_window(analyzed):
    # "over 28 min 44 s" (the span the chance test ran over) for a 28 min 52 s window; "38 checkpoints" beside "88
    # checkpoints" for one window: the title counts those of the finding's window, the root cause quotes that value.
    name, nodes, _ = analyzed
    for node in nodes:
        by_id = {f.id: f for f in node.findings}
        for f in node.findings:
            match = SPIKED.search(f.title)
            if _kind(f) != "checkpoint_stall" or match is None:
                continue
            counted = f.evidence["checkpoints_in_window"]
            aligned, of = int(match.group(1)), int(match.group(2) or match.group(1))
            assert match.group(3) == duration(f.seconds), (name, f.id, match.group(3), duration(f.seconds))
            assert of == counted.count >= aligned and (counted.start, counted.end) == (f.start, f.end), (name, f.id)
        for incident in node.incidents:
            for text in _card(incident):
                for m in COUNTED.finditer(text):
                    f = by_id[m.group(3)]
                    counted = f.evidence["checkpoints_in_window"]
                    assert (int(m.group(1)), m.group(4), m.group(6)) == (
                        counted.count,
                        duration(f.seconds),
                        duration(counted.longest_s),
                    ), (name, incident.id, m.group(0))
                    # "Back to back" and "up to" take two; one checkpoint is told by its length.
                    several = counted.count > 1
                    assert several or not m.group(2), (name, incident.id, m.group(0))
                    assert m.group(5) == ("up to " if several else "lasting "), (name, incident.id, m.group(0))


def test_the_checkpoints_of_a_window_ran_one_at_a_time_and_each_ran_some_of_it(analyzed):
    # dirty-cache-checkpoints-8.0: "2 checkpoints back to back in F1's 15 min (checkpointing 100 % of the time), up to
    # 15 min", count 2 and longest 900 s in a window of exactly 900 s: the one due while the long one ran was counted
    # by FTDC a sample after it ended, its start (that sample less its duration) 0.7 s inside the long one, so it
    # "overlapped" the window by its estimate's error. mongod's checkpoint thread runs one checkpoint at a time.
    name, nodes, _ = analyzed
    for node in nodes:
        done = sorted(node.checkpoints, key=lambda c: c.end)
        assert all(b.start >= a.end for a, b in zip(done, done[1:]) if b.source == "ftdc"), name
        for f in node.findings:
            counted = f.evidence.get("checkpoints_in_window")
            if counted is None:
                continue
            ran = [c for c in node.checkpoints if c.end > counted.start and c.start < counted.end]
            assert counted.count == len(ran), (name, f.id, counted.count, len(ran))
            window = (counted.end - counted.start).total_seconds()
            if counted.longest_s >= window and any(c.start <= counted.start and c.end >= counted.end for c in ran):
                assert counted.count == 1, (name, f.id)


# --- culprits: concurrency and longest run, computed once ---------------------------------------------------------

DESCRIBED = re.compile(
    rf"(\S+) (\w+)(?: \([^)]*\))?: (\d+) runs?[^;]*? operation-seconds inside the window \(([\d,.]+) running at once "
    rf"on average\).*?longest ({DURATION})"
)
NAMED = re.compile(
    rf"COLLSCANs? of (\S+) \((\w+): (\d+) runs?, longest ({DURATION}), ([\d,.]+) running at once on average(?: in (F\d+)'s ({DURATION}))?\)"
)


def test_a_culprit_is_quoted_with_one_concurrency_and_one_longest_run(analyzed):
    # "126.9 running at once" in the root cause (its time over the incident's window) beside "246.0" in the culprit's
    # row (over its finding's); "longest 39 s" beside "longest 38.9 s".
    name, nodes, _ = analyzed
    for node in nodes:
        by_id = {f.id: f for f in node.findings}
        for incident in node.incidents:
            described: dict[tuple, set] = {}
            for f in incident.findings:
                for m in DESCRIBED.finditer(f.explanation):
                    described.setdefault((f.id, m.group(1), m.group(2)), set()).add((m.group(3), m.group(4), m.group(5)))
            assert all(len(v) == 1 for v in described.values()), (name, incident.id, described)
            for cause in (incident.root_cause, *incident.candidates):
                m = NAMED.search(cause.summary)
                if m is None:
                    continue
                fid = m.group(6)
                assert fid is not None and m.group(7) == duration(by_id[fid].seconds), (name, cause.summary)
                quoted = described.get((fid, m.group(1), m.group(2)))
                assert quoted == {(m.group(3), m.group(5), m.group(4))}, (name, incident.id, cause.summary, quoted)
                # Its advice quotes the longest of its logged runs: where those are the runs the cause counts, the same.
                for rec in map(advice_text, incident.recommendations):
                    for runs, longest in re.findall(rf"longest of (\d+) logged run\(s\) took ({DURATION})", rec):
                        assert runs != m.group(3) or longest == m.group(4), (name, incident.id, rec)
                culprit = re.search(rf"in {fid}'s window: (.*)", cause.evidence["culprit"]).group(1)
                again = DESCRIBED.search(culprit)
                assert (again.group(3), again.group(4), again.group(5)) == (m.group(3), m.group(5), m.group(4)), name


def test_a_root_cause_quotes_its_culprit_over_the_window_its_table_shows():
    # An incident longer than the finding a COLLSCAN held its resource in: the root cause divided the COLLSCAN's time by
    # the incident's window (half the concurrency its culprit table shows over the finding's).
    nodes, _ = _analyzed("scenario:write-queue-7.0")
    node = nodes[0]
    held = next(f for f in node.findings if f.causes)
    wider = dataclasses.replace(
        held, id="F99", causes=[], culprits=[], start=held.start - dt.timedelta(seconds=held.seconds), end=held.end
    )
    cause = rank_causes(node.context, [held, wider])[0]
    culprit = held.causes[0]
    m = NAMED.search(cause.summary)
    assert m is not None and m.group(6) == held.id, cause.summary
    assert m.group(5) == f"{concurrency(culprit, held.seconds):,.1f}", cause.summary
    assert cause.evidence["concurrency"] == round(concurrency(culprit, held.seconds), 2)


# --- baselines: what they rest on ----------------------------------------------------------------------------------

HOUR_BEFORE = re.compile(r"hour before(?: (\d\d:\d\d:\d\d) UTC)?")
SPAN_BEFORE = re.compile(rf"the ({DURATION}) before (\d\d:\d\d:\d\d) UTC, all the capture holds")
REACH_BEFORE = re.compile(rf"the ({DURATION}) before (\d\d:\d\d:\d\d) UTC(?!, all the capture holds)")


def _held_before(node, at: dt.datetime) -> dt.timedelta:
    """How much of the hour before `at` the capture holds: from its earliest sample in that hour."""
    times = node.series.filter(pl.col(TIME_COLUMN) >= at - dt.timedelta(hours=1), pl.col(TIME_COLUMN) < at)[TIME_COLUMN]
    return at - times[0] if times.len() else dt.timedelta(0)


def test_a_baseline_says_what_it_rests_on(analyzed):
    # "the median of the hour before 12:25:09" where the capture began at 12:00:00; "1.9 s usually in the hour before"
    # where it held 40 minutes: each baseline names the span it really rests on.
    name, nodes, _ = analyzed
    for node in nodes:
        first = node.series[TIME_COLUMN][0]
        for f in node.findings:
            if f.usual is None or f.usual.since is None:
                continue
            held = _held_before(node, f.usual.before)
            sentence = f.usual.sentence()
            if held >= dt.timedelta(minutes=59):
                assert f"the hour before {f.usual.before:%H:%M:%S} UTC" in sentence, (name, f.id, sentence)
            else:
                assert f.usual.since == first and f"the {duration(held.total_seconds())} before" in sentence, (name, sentence)
        for incident in node.incidents:
            for text in _card(incident):
                for m in HOUR_BEFORE.finditer(text):
                    assert m.group(1) is not None, (name, incident.id, text)  # which hour
                    at = dt.datetime.combine(incident.start.date(), dt.time.fromisoformat(m.group(1)), UTC)
                    assert _held_before(node, at) >= dt.timedelta(minutes=59), (name, incident.id, m.group(0))
                for m in SPAN_BEFORE.finditer(text):
                    at = dt.datetime.combine(incident.start.date(), dt.time.fromisoformat(m.group(2)), UTC)
                    assert m.group(1) == duration(_held_before(node, at).total_seconds()), (name, incident.id, m.group(0))
                for m in REACH_BEFORE.finditer(text):  # "the 10 min before": the capture holds them
                    at = dt.datetime.combine(incident.start.date(), dt.time.fromisoformat(m.group(2)), UTC)
                    reach = seconds_of(m.group(1)) * 59 / 60
                    assert _held_before(node, at).total_seconds() >= reach, (name, incident.id, m.group(0))


def test_below_a_minute_of_capture_there_is_no_baseline():
    # "the median of the hour before" on 30 s of data: a median of a handful of samples quoted as what is usual.
    nodes, _ = _analyzed("scenario:checkpoint-stall")
    ctx = nodes[0].context
    assert ctx.usual_latency("writes", ctx.first + dt.timedelta(seconds=30)) is None
    assert ctx.baseline("writes_latency_ms", ctx.first + dt.timedelta(seconds=30)) is None
    usual = ctx.usual_latency("writes", ctx.first + dt.timedelta(seconds=88))
    at = ctx.first + dt.timedelta(seconds=88)
    assert usual is not None and f"the 1 min 28 s before {at:%H:%M:%S} UTC, all the capture holds" in usual.sentence()
    # Too little before for its own baseline: the spike's median, said as such.
    fallback = ctx.usual_latency("writes", ctx.first + dt.timedelta(seconds=30), fallback_ms=0.3)
    assert fallback.since is None and "hour before" not in fallback.sentence() and "too little" in fallback.sentence()


def _node(directory: Path, seconds: int, status_at) -> Path:
    """A 7.0 node sampled every second for `seconds`, its serverStatus at second i being `status_at(i)` (with its
    `start`, `uptime` and `end` filled in)."""
    start = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
    metadata = {
        "start": start,
        "buildInfo": {"version": "7.0.12"},
        "getCmdLineOpts": {"parsed": {"net": {"port": 27017}}},
        "hostInfo": {"system": {"hostname": "db1.example.net", "numCores": 4, "memSizeMB": 16384}, "os": {"name": "Ubuntu"}},
        "end": start,
    }
    with FTDCWriter(directory, metadata=metadata, samples_per_chunk=60) as writer:
        for i in range(seconds):
            t = start + dt.timedelta(seconds=i)
            status = {"start": t, "uptime": 1000 + i, **status_at(i), "end": t}
            writer.add_sample({"start": t, "serverStatus": status, "end": t})
    return directory


def _storm_node(directory: Path, at: int) -> Path:
    """A node whose clients open 100 connections a second for 20 s, `at` seconds after its capture began."""
    counts = {"created": 1000, "current": 50}

    def status_at(i: int) -> dict:
        storm = at <= i < at + 20
        counts["created"] += 100 if storm else 1
        counts["current"] += 20 if storm else 0
        return {"connections": {"current": counts["current"], "available": 50000, "totalCreated": counts["created"]}}

    return _node(directory, at + 120, status_at)


@pytest.mark.parametrize("at", [30, 300])
def test_a_connection_storm_says_what_its_baseline_rests_on(tmp_path, at):
    # "against 1.0/s before": the median of the 30 s the capture held, quoted as the usual rate.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(_storm_node(tmp_path / "diagnostic.data", at))
    [storm] = [f for f in node.findings if _kind(f) == "connection_storm"]
    first = node.series[TIME_COLUMN][0]
    if at < 60:
        assert "with no baseline" in storm.explanation and storm.evidence["baseline"]["created_per_s"] is None
    else:
        held = duration((storm.start - first).total_seconds())
        assert f"/s in the {held} before {storm.start:%H:%M:%S} UTC, all the capture holds" in storm.explanation, (
            storm.explanation
        )


def _dip_node(directory: Path, at: int) -> Path:
    """A 7.0 node finishing 1,000 operations a second that falls to 50 for 30 s, `at` seconds after its capture
    began, with operations queued for the global lock meanwhile."""
    done = {"ops": 0}

    def status_at(i: int) -> dict:
        low = at <= i < at + 30
        done["ops"] += 25 if low else 500
        latencies = {op: {"latency": done["ops"] * 300, "ops": done["ops"]} for op in ("reads", "writes")}
        latencies["commands"] = {"latency": 0, "ops": 0}
        return {
            "connections": {"current": 50, "totalCreated": 100},
            "opLatencies": latencies,
            "globalLock": {"currentQueue": {"readers": 60 if low else 0, "writers": 60 if low else 0}},
        }

    return _node(directory, at + 180, status_at)


@pytest.mark.parametrize("at", [180, 900])
def test_a_throughput_dip_says_what_its_baseline_rests_on(tmp_path, at):
    # "against 1,000/s in the 10 minutes before" where the capture held 3 minutes before the dip. A dip is measured against
    # the 10 minutes before it, all of them this process's: with 3 minutes there is no baseline, and no dip is claimed.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(_dip_node(tmp_path / "diagnostic.data", at))
    dips = [f for f in node.findings if _kind(f) == "throughput_dip"]
    if at < 600:
        assert dips == [] and all("10 minutes before" not in f.explanation for f in node.findings)
        return
    [dip] = dips
    assert f"in the 10 min before {dip.start:%H:%M:%S} UTC" in dip.explanation, dip.explanation


def test_a_pinned_history_says_what_its_usual_range_rests_on():
    # "(usually 12)" with no word of what the median of the pinned range was taken over.
    from samples.families import Incident, Shape, analyzed, build

    _, result = analyzed(build, Shape(layout="7.0", seed=8), Incident("cache_pressure", 600, 5.0, "dirty", 0.5, pinned=True))
    [incident] = result.incidents
    cause = incident.root_cause
    assert cause.evidence["mechanism"] == "pinned_history"
    usual = re.search(
        r"\(usually ([\d,]+), the median of (the .*? before (\d\d:\d\d:\d\d) UTC(?:, all the capture holds)?)\)", cause.summary
    )
    assert usual is not None and int(usual.group(1).replace(",", "")) == cause.evidence["pinned_txn_ids_before"], cause.summary
    # Measured back from when the pinning began (transactions held one after another are not their own usual).
    began = cause.evidence["pinning_began"]
    assert began <= incident.start and usual.group(3) == f"{began:%H:%M:%S}", cause.summary


# --- thread time is not wall time ----------------------------------------------------------------------------------

THREAD_TIME = re.compile(rf"spent ({DURATION}) evicting and ({DURATION}) waiting for cache")


def test_thread_time_is_said_as_summed_over_threads(analyzed):
    # "1 h 55 min waiting for cache" inside a 6 min 43 s window read as wall time.
    name, nodes, _ = analyzed
    for node in nodes:
        for f in node.findings:
            for m in THREAD_TIME.finditer(f.explanation):
                said = f.explanation[m.start() : m.end() + 120]
                assert "thread time summed over all threads" in said, (name, f.id, said)
                assert f"in the window's {duration(f.seconds)}" in said, (name, f.id, said)


def test_thread_time_beyond_its_window_on_the_dirty_cache_scenario():
    # The case the issue names: more thread time than the window holds, said so.
    nodes, _ = _analyzed("scenario:dirty-cache-checkpoints-8.0")
    texts = [(m, f) for f in nodes[0].findings for m in THREAD_TIME.finditer(f.explanation) if seconds_of(m.group(2)) > f.seconds]
    assert texts and all("summed over all threads" in f.explanation for _, f in texts)


# --- the oplog window --------------------------------------------------------------------------------------------

WINDOW_H = 174.8


def _member(directory: Path, *, optimes: bool) -> Path:
    """A replica-set member whose oplog spans WINDOW_H hours (serverStatus.oplog's optimes, when `optimes`); its
    local.oplog.rs.stats carries, as every collector does, the collector's own start and end, 2 ms apart."""
    start = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
    metadata = {
        "start": start,
        "buildInfo": {"version": "7.0.12"},
        "getCmdLineOpts": {"parsed": {"net": {"port": 27017}, "replication": {"replSetName": "rs0"}}},
        "hostInfo": {"system": {"hostname": "db1.example.net", "numCores": 4, "memSizeMB": 16384}, "os": {"name": "Ubuntu"}},
        "end": start,
    }
    with FTDCWriter(directory, metadata=metadata, samples_per_chunk=60) as writer:
        for i in range(180):
            t = start + dt.timedelta(seconds=i)
            now = int(t.timestamp())
            status = {"start": t, "uptime": 1000 + i, "connections": {"current": 5, "totalCreated": 10}, "end": t}
            if optimes:
                status["oplog"] = {
                    "latestOptime": Timestamp(now, 1),
                    "earliestOptime": Timestamp(now - int(WINDOW_H * 3600), 1),
                }
            oplog_stats = {"start": t, "count": 1000 + i, "size": 10**6, "end": t + dt.timedelta(milliseconds=2)}
            writer.add_sample({"start": t, "serverStatus": status, "local.oplog.rs.stats": oplog_stats, "end": t})
    return directory


def test_the_oplog_window_is_read_from_the_oplog_optimes(tmp_path):
    # 0.00 h on every member: the window was local.oplog.rs.stats' end minus its start, the collector's own times.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(_member(tmp_path / "diagnostic.data", optimes=True))
    window = node.series["oplog_window_h"].drop_nulls()
    assert window.len() == node.series.height and (window - WINDOW_H).abs().max() < 1e-6
    assert "oplog window, hours" not in system.view(node, {}).missing


def test_the_oplog_window_is_not_recorded_without_the_optimes(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(_member(tmp_path / "diagnostic.data", optimes=False))
    assert "oplog_window_h" not in node.series.columns
    assert "oplog window, hours" in system.view(node, {}).missing


# --- every format tells the model's numbers ----------------------------------------------------------------------


def _terminal(text: str) -> str:
    return " ".join(text.split())


def test_every_format_quotes_the_incidents_numbers(analyzed, rendered):
    # The titles, chain steps and root causes are rendered from the model's values: each format quotes them as they are,
    # and quotes no other value for a quantity the model has one value for.
    name, nodes, _ = analyzed
    model: set[str] = set()
    for node in nodes:
        for incident in node.incidents:
            said = [incident.title, *(s.text for s in incident.chain), incident.root_cause.summary]
            for text in said:
                assert text in rendered[".json"] and text in rendered[".md"], (name, incident.id, text)
                assert _terminal(text) in rendered[".html"], (name, incident.id, text)
            assert _terminal(incident.title) in rendered["terminal"], (name, incident.id)
        model |= {m.group(0) for f in node.findings for m in EXHAUSTED.finditer(f.title)}
        model |= {m.group(0) for i in node.incidents for text in _card(i) for m in NAMED.finditer(text)}
        model |= {m.group(0) for f in node.findings for m in SPIKED.finditer(f.title)}
    for fmt, text in rendered.items():
        for pattern in (EXHAUSTED, NAMED, SPIKED):
            for m in pattern.finditer(text):
                assert m.group(0) in model, (name, fmt, m.group(0))


# --- a share of the cache, one value with one precision -----------------------------------------------------------------


def test_the_dirty_peak_is_quoted_with_one_precision_everywhere(analyzed, rendered):
    # dirty-cache-checkpoints-8.0: "dirty data at its peak (% of the cache): 22.67" in the evidence, "22.7 %" in the root
    # cause's sentence and its chain.
    from analysis.outputs import words

    name, nodes, _ = analyzed
    for node in nodes:
        for incident in node.incidents:
            for cause in (incident.root_cause, *incident.candidates):
                if "dirty_pct_peak" not in cause.evidence:
                    continue
                raw = float(
                    node.series.filter(pl.col(TIME_COLUMN).is_between(incident.start, incident.end))["cache_dirty_pct"].max()
                )
                said = dict(words.cause_rows(cause))[words.label("dirty_pct_peak")]
                assert said == f"{raw:.1f}", (name, incident.id, said, raw)
                quoted = re.findall(r"dirty data (?:up to|built up[^,]*, up to) ([\d.]+) %", cause.summary)
                assert all(q == said for q in quoted), (name, incident.id, quoted, said)
                finer = f"{raw:.2f}"
                if finer.rstrip("0").rstrip(".") != said.rstrip("0").rstrip("."):
                    for fmt in (".md", ".html", "terminal"):
                        assert finer not in rendered[fmt], (name, fmt, finer)


def test_no_oplog_window_is_negative_on_the_real_80_capture(ftdc_samples):
    """The 8.0 sample's latestOptime reads 0 throughout while its earliest does not: no window, never a negative one
    (it was -482,000 h)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(ftdc_samples / "mongod-8.0-chunk" / "metric-2025-03-12_15-58-06.0_+00-00-00.bson")
    assert node.series["oplog_window_h"].drop_nulls().len() == 0
