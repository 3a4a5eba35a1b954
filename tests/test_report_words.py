"""Words for people, numbers that agree (issue 18 §4): every report of the demo node, every scenario and the
replica set, in every format and on the console, names none of the project's internals, and says each
quantity once."""

import ast
import datetime as dt
import re
import warnings
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console
from scenario_nodes import SCENARIO_NAMES, analyzed_result
from scenario_nodes import analyzed_nodes as _analyzed

import analysis
from analysis.outputs.console import render_findings, render_incidents, render_overview
from analysis.outputs.report import build_report, write_report
from analysis.text import duration, ms, pct

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
NODES = ["demo", *SCENARIO_NAMES]
FORMATS = (".html", ".md", ".json")


def _constants() -> set[str]:
    """The module-level UPPER_CASE names of the project's code (those of one word, `KIND` or `MB`, are words too)."""
    names = set()
    for path in [*ROOT.glob("analysis/**/*.py"), *ROOT.glob("ftdc/**/*.py"), ROOT / "cli.py"]:
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names.update(
                t.id.lstrip("_")
                for t in targets
                if isinstance(t, ast.Name) and re.fullmatch(r"_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", t.id)
            )
    return names


CONSTANTS = _constants()
# The project's own files (code, scripts, documentation pages) by name.
OWN_FILES = {
    p.name
    for p in ROOT.rglob("*")
    if p.suffix in (".py", ".js", ".rs", ".md") and ".git" not in p.parts and p.name != "README.md"
}
# Server and WiredTiger sources, document sections.
SOURCES = re.compile(r"\b[\w-]+\.(?:py|c|cc|cpp|h|rst|md)\b|§")


@pytest.fixture(scope="module", params=NODES)
def analyzed(request):
    return request.param, *_analyzed(request.param)


def internals(text: str) -> list[str]:
    return sorted(
        {
            *(n for n in CONSTANTS if re.search(rf"\b{n}\b", text)),
            *(f for f in OWN_FILES if f in text),
            *(m.group(0) for m in SOURCES.finditer(text)),
        }
    )


def test_the_check_sees_what_it_looks_for():
    assert {"MIN_S", "EPISODE_GAP", "DIP_SHARE", "LOW_SHARE"} <= CONSTANTS and {
        "throughput_dip.py",
        "metrics.md",
        "explorer.js",
    } <= OWN_FILES
    said = "below DIP_SHARE of it (throughput_dip.py, conn_cache.c, SERVER-STATUS.md §5, docs/config-audit.md)"
    assert internals(said) == ["DIP_SHARE", "SERVER-STATUS.md", "config-audit.md", "conn_cache.c", "throughput_dip.py", "§"]


def test_no_internal_name_in_any_report_or_on_the_console(analyzed, tmp_path):
    name, nodes, _ = analyzed
    report = build_report(analyzed_result(name))
    for fmt in FORMATS:
        path = tmp_path / f"{name}{fmt}"
        write_report(report, path)
        assert internals(path.read_text()) == [], (name, fmt)
    console = Console(record=True, width=120, file=open("/dev/null", "w"))
    for node in nodes:
        console.print(render_overview(node.overview, 120), render_incidents(node.result, 120), render_findings(node.result, 120))
    text = console.export_text()
    assert internals(text) == [] and "culprits below" not in text, name


# --- one computed value per quantity -------------------------------------------------------------


def _dicts(value):
    """Every dict inside a finding's or root cause's evidence, itself included."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _dicts(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _dicts(v)


def test_one_count_of_checkpoints_per_window_in_a_report(analyzed):
    # One card said "38 checkpoints up to 7.4 s" (its finding's) and "90 checkpoints up to 8.1 s" (its root cause's, counted
    # again over the incident): the root cause now quotes the count its checkpoint finding carries (issue 18 §4).
    name, nodes, _ = analyzed
    for node in nodes:
        causes = [c for i in node.incidents for c in (i.root_cause, *i.candidates)]
        counted: dict[tuple, set] = {}
        for evidence in [*(f.evidence for f in node.findings), *(c.evidence for c in causes)]:
            for d in _dicts(evidence):
                if "checkpoints_in_window" in d and d["checkpoints_in_window"] is not None:
                    w = d["checkpoints_in_window"]
                    counted.setdefault((w.start, w.end), set()).add((w.count, w.longest_s, w.time_share))
                if isinstance(d.get("checkpoints"), int):  # a root cause's figures are the value it quotes
                    w = d["checkpoints_in_window"]
                    assert (d["checkpoints"], d["checkpoint_longest_s"], d["checkpoint_time_share"]) == (
                        w.count,
                        w.longest_s,
                        w.time_share,
                    )
        assert all(len(values) == 1 for values in counted.values()), (name, counted)
        for incident in node.incidents:
            stalls = [f for f in incident.findings if f.kind == "checkpoint_stall"]
            quoted = [
                d
                for c in (incident.root_cause, *incident.candidates)
                for d in _dicts(c.evidence)
                if isinstance(d.get("checkpoints"), int)
            ]
            if len(stalls) == 1 and quoted:
                assert all(d["checkpoints_in_window"] is stalls[0].evidence["checkpoints_in_window"] for d in quoted), name


def _hour_before(node, start: dt.datetime, op: str):
    """The median latency of `op` over the hour before `start`; None when the data has no hour before."""
    column = f"{op}_latency_ms"
    before = node.series.filter(pl.col("start") >= start - dt.timedelta(hours=1), pl.col("start") < start)
    return (
        round(float(before[column].drop_nulls().median()), 3)
        if column in before.columns and before[column].drop_nulls().len()
        else None
    )


def test_a_latency_baseline_is_the_hour_before_its_incident_in_every_finding(analyzed):
    # The TTL burst quoted its spike's own 10-minute median (0.3 ms here, 236 ms beside 97 ms on a busier node) where every
    # other finding quotes the hour before its window: one definition, carried as evidence (issue 18 §4). A finding of an
    # incident quotes the hour before the incident's start (one value per card, below); one of none, its own window's.
    name, nodes, _ = analyzed
    for node in nodes:
        began = {f.id: i.start for i in node.incidents for f in i.findings}
        for f in node.findings:
            usual = (f.evidence.get("baseline") or {}).get("latency_ms")
            if usual is None:
                assert f.kind != "ttl_burst" or "write latency up to" not in f.title, (name, f.title)
                assert f.usual is None, (name, f.id)
                continue
            assert f.usual is not None and round(f.usual.latency_ms, 3) == usual and f.usual.sentence() in f.explanation, (
                name,
                f.id,
            )
            assert f.usual.before == began.get(f.id, f.start), (name, f.id, f.usual.before)
            hour = _hour_before(node, f.usual.before, f.usual.op)
            assert hour is None or round(usual, 3) == hour, (name, f.id, f.kind, usual, hour)  # no hour before: the spike's own


def test_one_latency_baseline_per_operation_class_in_an_incident_card(analyzed):
    # The demo's card quoted 0.319 ms (its checkpoint stall's hour before) and 0.3193 and 0.3189 ms (each ticket window's own)
    # as the usual write latency; a busier node's one card 97 ms and 236 ms (issue 18 §4): an incident's findings are judged
    # against the hour before the incident's start, so its text, chain steps and evidence quote one value per class.
    name, nodes, _ = analyzed
    for node in nodes:
        for incident in node.incidents:
            quoted: dict[str, set] = {}
            for f in incident.findings:
                if f.usual is not None:
                    quoted.setdefault(f.usual.op, set()).add(
                        (f.usual.latency_ms, f.usual.before, f.evidence["baseline"]["latency_ms"])
                    )
            assert all(len(values) == 1 for values in quoted.values()), (name, incident.id, quoted)
            card = " ".join(
                [incident.title, *(s.text for s in incident.chain), *(f.title + f.explanation for f in incident.findings)]
            )
            for ((value, before, _),) in quoted.values():
                assert ms(value) in card and before == incident.start, (name, incident.id)


# --- issue 39's review of the scenario reports -----------------------------------------------------------------------


def _findings(name: str, kind: str):
    nodes, _ = _analyzed(name)
    return [f for node in nodes for f in node.findings if f.kind == kind]


@pytest.mark.parametrize(
    ("value", "said"),
    [(0.0, "0 ms"), (0.33, "0.33 ms"), (0.3, "0.3 ms"), (0.027, "0.027 ms"), (2.15, "2.1 ms"), (9.96, "10 ms"), (26.4, "26 ms")],
)
def test_a_latency_under_10_ms_keeps_two_significant_figures(value, said):
    assert ms(value) == said


def test_a_mean_latency_under_a_millisecond_is_not_said_as_0_ms():
    # throughput-dip: "Mean write latency reached 0 ms. Usual write latency: 0.3 ms".
    exhausted = _findings("throughput-dip", "ticket_exhaustion")
    assert exhausted
    for f in exhausted:
        peak = f.evidence["latency_ms_peak"]
        assert peak < 1 and f"latency reached {ms(peak)}." in f.explanation and " 0 ms" not in f.explanation, f.id


def test_a_queue_is_said_with_one_number():
    # throughput-dip F6: "117 writers queued at peak (the longest queue sampled; counted by the time spent queued, 121
    # waiting on average over the worst sampling interval ...)": two numbers for one queue. The sampled gauge, which the
    # figure plots, is the one said; the mean from time queued stays in the evidence.
    exhausted = _findings("throughput-dip", "ticket_exhaustion")
    assert any(f.evidence["queued_peak"].get(f"{f.resource}_ticket_waiters", 0) > 0 for f in exhausted)
    for f in exhausted:
        sampled = max(v for k, v in f.evidence["queued_peak"].items() if not k.endswith("_waiters"))
        said = re.findall(r"([\d,]+) (?:readers|writers|waiting)", f.explanation)
        assert said == [f"{sampled:,.0f}"], f.explanation
        assert "on average" not in f.explanation


def test_a_dips_queue_is_the_readers_and_writers_together_at_one_sample():
    # throughput-dip I1: "Throughput fell to 11 % of normal for 9 s: 119 operations queued" beside "146 writers queued at
    # peak" and "119 readers queued at peak": the dip's queue read as either kind's peak, and below the writers' own.
    nodes, _ = _analyzed("throughput-dip")
    for incident in (i for node in nodes for i in node.incidents):
        [dip] = [f for f in incident.findings if f.kind == "throughput_dip"]
        peaks = {
            f.resource: max(v for k, v in f.evidence["queued_peak"].items() if not k.endswith("_waiters"))
            for f in incident.findings
            if f.kind == "ticket_exhaustion"
        }
        at_once = dip.evidence["queued_at_peak"]
        total = at_once["readers"] + at_once["writers"]
        assert dip.statement == f"{total:,.0f} readers and writers queued", dip.statement
        # Each kind at that sample is within its own peak, and the total is at least each peak (a sum at one sample).
        assert at_once["readers"] <= peaks["read"] and at_once["writers"] <= peaks["write"]
        assert total >= max(peaks.values()) and total not in peaks.values()
        assert f"while {dip.statement};" in dip.explanation


def test_the_checkpoint_stall_method_states_every_rule_its_severity_follows():
    # dirty-cache-checkpoints-8.0's F1 was critical for a 15 min checkpoint (at least twice the 60 s interval) with
    # write latency up to 26 ms, while the Methods said only "Critical: a spike of 1 s or more".
    from analysis.findings.detectors import checkpoint_stall

    critical = [f for f in _findings("dirty-cache-checkpoints-8.0", "checkpoint_stall") if f.severity == "critical"]
    peaks = [re.search(r"latency up to ([\d,.]+) ms", f.title) for f in critical]
    assert critical and all(p and float(p[1].replace(",", "")) < checkpoint_stall.CRITICAL_MS for p in peaks)
    method = checkpoint_stall.DETECTOR.method
    assert f"a spike of {checkpoint_stall.CRITICAL_MS / 1000:g} s or more" in method
    assert f"at least {checkpoint_stall.CRITICAL_OVERRUN:g} times the checkpoint interval" in method


def test_a_checkpoints_source_is_said_in_words():
    # "(the longest from 03:40:30 UTC, ftdc+log)".
    overrun = [f for f in _findings("dirty-cache-checkpoints-8.0", "checkpoint_stall") if "the longest from" in f.explanation]
    assert overrun
    for f in overrun:
        assert "ftdc+log" not in f.explanation and re.search(
            r"the longest from [\d:]+ UTC, seen in (?:both FTDC and the log|FTDC|the log)\)", f.explanation
        )


def test_the_two_shares_of_checkpoint_time_say_what_each_measures():
    # checkpoint-stall: the root cause's "30 checkpoints in F1's 29 min 25 s (42 % of the time)" and F1's "which together
    # took 43 % of the time": the checkpoints alone, and the checkpoints with the sampling period after each.
    nodes, _ = _analyzed("checkpoint-stall")
    incident = nodes[0].incidents[0]
    counted = incident.root_cause.evidence["checkpoints_in_window"]
    assert f"(checkpointing {pct(counted.time_share)} of the time)" in incident.root_cause.summary
    stall = next(f for f in incident.findings if f.kind == "checkpoint_stall")
    chance = stall.evidence["expected_by_chance"] / stall.evidence["spikes"]
    assert pct(chance) != pct(counted.time_share)
    assert f"a spike as long as each would have met one {pct(chance)} of the time on average" in stall.explanation


def test_a_ttl_burst_says_what_its_usual_minute_rests_on():
    # ttl-burst-6.0: "2,096× its usual 184 per minute", the usual's basis unsaid.
    bursts = _findings("ttl-burst-6.0", "ttl_burst")
    assert bursts
    for f in bursts:
        usual = f.evidence["baseline"]["deleted_per_minute"]
        assert re.search(
            rf"its usual {usual:,.0f} per minute \(the median minute of the (?:hour|[\w ]+) before [\d:]+ UTC", f.explanation
        ) or ("its usual is never taken below" in f.explanation), f.explanation


def test_evidence_numbers_have_the_prose_rounding_and_labels_claim_no_baseline():
    # write-queue-7.0's evidence: "concurrency: 2.15" beside the culprit's "2.1 running at once on average";
    # "writes per second in the hour before: 800" beside a baseline of 40 min 30 s.
    from analysis.outputs import words

    assert words.evidence_rows({"concurrency": 2.15}) == [("running at once on average", f"{2.15:,.1f}")]
    assert words.evidence_rows({"checkpoint_time_share": 0.425}) == [("share of the window spent checkpointing", pct(0.425))]
    assert "hour" not in words.label("writes_per_s_before")
    nodes, _ = _analyzed("write-queue-7.0")
    cause = nodes[0].incidents[0].root_cause
    rows = dict(words.evidence_rows(cause.evidence))
    quoted = re.search(r"([\d.]+) running at once on average", cause.summary)
    assert quoted and rows["running at once on average"] == quoted[1]


def test_a_gap_in_the_markdown_gives_its_window_with_its_zone(tmp_path):
    # restart-and-gap: the Markdown said "No FTDC samples for 5 min 1 s" with no time; the terminal gave 23:06:39 – 23:11:40 UTC.
    nodes, _ = _analyzed("restart-and-gap")
    gap = next(f for f in nodes[0].findings if f.kind == "ftdc_gap")
    write_report(build_report(analyzed_result("restart-and-gap")), tmp_path / "r.md")
    line = next(ln for ln in (tmp_path / "r.md").read_text().splitlines() if ln.startswith(f"- {gap.title}"))
    assert gap.start.strftime("%H:%M:%S") in line and gap.end.strftime("%H:%M:%S") in line and "UTC" in line, line


def test_latency_said_to_spike_inside_checkpoints_fits_in_them():
    # "Read/write latency spiked for 3 min 38 s inside them" inside a 2 min 20 s checkpoint: the spikes of reads and of
    # writes overlap, and their times were added up.
    [demo], _ = _analyzed("demo")
    stalls = [f for f in demo.findings if f.kind == "checkpoint_stall"]
    assert stalls
    for f in stalls:
        said = re.search(r"latency spiked for (.+?) inside them", f.explanation)
        if said:
            window = (f.end - f.start).total_seconds()
            assert said.group(1) in {duration(s) for s in range(int(window) + 2)}, (said.group(1), duration(window))


def test_a_longer_capture_is_not_what_would_tell_where_the_hour_before_is_held():
    [result], _ = _analyzed("throughput-dip")
    for incident in result.incidents:
        held = incident.start - result.series["start"][0] if "start" in result.series.columns else None
        tells = " ".join(incident.root_cause.evidence.get("would_tell", []))
        # Nor where the whole server stalled below its operations: the hour before shows what changed in the load, not
        # what paused the host (tests/test_incidents.py: a capture shorter than the hour says it otherwise).
        stalled = "server_stall" in incident.root_cause.evidence
        if stalled or (held is not None and held.total_seconds() >= 3600):
            assert "a longer capture" not in tells, (incident.id, tells)
        else:
            assert "a longer capture" in tells, (incident.id, tells)
    assert any("server_stall" in i.root_cause.evidence for i in result.incidents)


def test_a_primary_change_claims_nothing_its_data_does_not_show():
    # "Writes failed over; drivers retried.": nothing a node records says whether drivers retried.
    base = ROOT / "samples" / "scenarios" / "replica-set"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze_nodes(sorted(base.glob("*/diagnostic.data")), sorted(base.glob("*/mongod.log")))
    [change] = [f for f in result.cross_node if f.kind == "primary_change"]
    assert "retried" not in change.explanation and "No primary took writes in between" in change.explanation


def test_refused_connections_are_the_nodes_count_and_the_logs_lines_are_said_as_a_part_of_it():
    # dirty-cache-checkpoints-8.0: "540 were rejected. The log has 41 refusal line(s) (id 22942)": two counts of one
    # thing, side by side. mongod counts every refusal and logs each one unless it runs quiet
    # (transport/session_manager_common.cpp): the count is the figure, the log holding fewer lines lacks the rest.
    [storm] = _findings("dirty-cache-checkpoints-8.0", "connection_storm")
    rejected, lines = storm.evidence["rejected"], storm.evidence["refused_log_lines"]
    assert 0 < lines < rejected
    assert (
        f"The node refused {rejected:,.0f} connections; the log read holds the lines of only {lines:,} of them in the "
        "storm's window" in storm.explanation
    )
    assert "unless systemLog.quiet is set, so the log read lacks the rest" in storm.explanation
    assert "were rejected" not in storm.explanation and "refusal line(s)" not in storm.explanation


def test_the_refusal_lines_counted_are_those_of_the_storms_window_and_the_rest_are_said_apart():
    # dirty-cache-checkpoints-8.0: "the log read holds the lines of only 41 of them (id 22942)" while the log holds 45
    # such lines: the 4 more came after the storm's last sample (counted by the samples after it), unsaid, so the
    # sentence read as a miscount of the log.
    [storm] = _findings("dirty-cache-checkpoints-8.0", "connection_storm")
    log = (ROOT / "samples" / "scenarios" / "dirty-cache-checkpoints-8.0" / "mongod.log").read_text()
    in_log = sum('"id":22942' in line for line in log.splitlines())
    lines, elsewhere = storm.evidence["refused_log_lines"], storm.evidence["refused_log_lines_elsewhere"]
    assert lines + elsewhere == in_log and elsewhere > 0
    assert f"only {lines:,} of them in the storm's window (id 22942), and {elsewhere:,} more outside it: " in storm.explanation


def test_a_storm_that_followed_a_stall_says_so_and_its_advice_is_the_clients_timeouts():
    # dirty-cache-checkpoints-8.0: the storm began 10 min into a 15 min checkpoint with the cache past its trigger, yet
    # its advice was "Look for what made clients reconnect at once: an application restart or deploy, a failover, or
    # timeouts upstream", ignoring the chain it is the last step of.
    [storm] = _findings("dirty-cache-checkpoints-8.0", "connection_storm")
    stalls = [
        f
        for kind in ("checkpoint_stall", "cache_pressure")
        for f in _findings("dirty-cache-checkpoints-8.0", kind)
        if f.start <= storm.start <= f.end
    ]
    assert stalls
    assert "The storm followed a stall of the server: " in storm.explanation
    for stall in stalls:
        assert stall.title[0].lower() + stall.title[1:] in storm.explanation
    assert "time out in the clients" in storm.explanation
    said = [r.what for r in storm.recommendations]
    assert not any("deploy" in w for w in said), said
    assert any("socketTimeoutMS" in w and "backoff" in w for w in said), said
    nodes, _ = _analyzed("dirty-cache-checkpoints-8.0")
    [incident] = [i for i in nodes[0].incidents if storm.id in i.finding_ids]
    assert not any("deploy" in r.what for r in incident.recommendations)


def test_an_insert_has_no_plan_and_no_filter_in_words_in_every_format(tmp_path):
    # dirty-cache-checkpoints-8.0: ledger.entries insert's rows read "|  |" and "`  `" in the Markdown, empty cells and
    # an empty <code> on the page: an insert is not planned and has no filter, which each format now says.
    nodes, _ = _analyzed("dirty-cache-checkpoints-8.0")
    inserts = [c for node in nodes for f in node.findings for c in f.culprits if c.command == "insert"]
    assert inserts and not any(c.plan_summary or c.shape or c.query_hash for c in inserts)
    report = build_report(analyzed_result("dirty-cache-checkpoints-8.0"))
    for fmt in (".md", ".html"):
        write_report(report, tmp_path / f"r{fmt}")
    md, page = (tmp_path / "r.md").read_text(), (tmp_path / "r.html").read_text()
    # The culprit tables: a plan and a shape cell each. The whole span's table says them beneath its figures, where an
    # insert's shape is what its command asked for.
    culprits, whole = md.split("## Slow operations of the whole span")
    rows = [line for line in culprits.splitlines() if line.startswith("| ledger.entries | insert |")]
    assert rows and all("| none: an insert has no plan |" in r and r.endswith("| none: an insert has no filter |") for r in rows)
    assert page.count("<td>none: an insert has no plan</td>") == len(rows)
    assert page.count("none: an insert has no filter</td>") == len(rows)
    assert "ledger.entries insert: plan none: an insert has no plan; command ` {" in whole
    assert "<span class=label>plan:</span>none: an insert has no plan" in page
    assert "<code></code>" not in page and not re.search(r"\| *`+ +`+ *\|", md)


# --- the root-cause block (issue 39 §2, §3, §5) ------------------------------------------------------------------------


def test_a_root_cause_says_the_cause_not_its_headline_again(analyzed):
    # "Root cause (a resource): Disk sda saturated for 4 min …" under a headline saying the same; "Data handles blocking
    # for 1 h 9 min with 61,996 handles open" as the cause of data handles blocking. Only "cause not determined" has
    # nothing more to say than its headline.
    name, nodes, _ = analyzed
    for node in nodes:
        for incident in node.incidents:
            cause = incident.root_cause
            if cause.kind == "undetermined":
                continue
            phrase = cause.headline or cause.summary
            assert cause.summary.rstrip(".") != phrase.rstrip("."), (name, incident.id, cause.summary)
            assert not incident.title.lower().startswith(cause.summary.lower()), (name, incident.id, cause.summary)


def test_the_root_cause_of_handles_blocking_is_the_handles_the_node_came_to_hold():
    # dhandle-pressure: the growth 40,000 → 61,996 was only a line of context below.
    nodes, _ = _analyzed("dhandle-pressure")
    [incident] = nodes[0].incidents
    cause = incident.root_cause
    assert re.search(r"grew from 40,000 at 2024-02-06 10:00:00 UTC to 61,996", cause.summary), cause.summary
    assert cause.evidence["dhandles_first"] == 40_000 and cause.evidence["dhandles_peak"] == 61_996


def test_the_root_cause_of_a_ttl_burst_is_the_pass_on_its_collection_and_index():
    # ttl-burst-6.0: the log's pass line (id 5479200) names app.sessions and its index expireAt_1; the root cause
    # repeated the headline instead.
    nodes, _ = _analyzed("ttl-burst-6.0")
    [incident] = nodes[0].incidents
    summary = incident.root_cause.summary
    assert "TTL monitor's pass" in summary and "app.sessions" in summary and "expireAt_1" in summary, summary
    assert "450,000 documents by the log" in summary


def test_a_root_cause_lists_its_facts_once_and_nothing_internal(analyzed):
    # checkpoint-stall listed "finding: F1"-like ids and thresholds, "checkpoints: 30" beside "count 30", "a checkpoint
    # every (s): 60" beside "checkpoint interval: 60 s", and the garbled "checkpoints the usual is the median of 59".
    from analysis.outputs import words
    from analysis.series.checkpoints import InWindow

    name, nodes, _ = analyzed
    for node in nodes:
        for incident in node.incidents:
            for cause in (incident.root_cause, *incident.candidates):
                rows = words.cause_rows(cause)
                labels = [label for label, _ in rows]
                assert len(labels) == len(set(labels)), (name, incident.id, labels)
                assert not {"finding", "thresholds", "metrics", "mechanism"} & set(labels), (name, incident.id, labels)
                counted = cause.evidence.get("checkpoints_in_window")
                if isinstance(counted, InWindow):
                    flat = {words.label(k) for k in words.SAID_BY["checkpoints_in_window"]}
                    assert not flat & set(labels), (name, incident.id, labels)
                    told = dict(rows)[words.label("checkpoints_in_window")]
                    assert told.startswith(f"{counted.count:,} in ") and counted.against_usual() in told
                if "checkpoint_every_s" in cause.evidence and "checkpoint_interval" in cause.evidence:
                    assert not cause.evidence["checkpoint_interval"].startswith(f"{cause.evidence['checkpoint_every_s']:g} s")


def test_an_unchanged_write_load_is_not_called_the_workload_that_caused_it():
    # "Root cause (the workload): write load … the writes did not change …: the load is not what changed".
    from analysis.outputs import words

    # What the numbers show: checkpoint-stall's checkpoints each started from ~14 % dirty (dirty data built up between
    # them); dirty-cache-checkpoints-8.0's 15 min one started from 3 % and dirty data built up while it ran.
    told = {
        "checkpoint-stall": "dirty data built up past the eviction dirty target between checkpoints under a steady write load",
        "dirty-cache-checkpoints-8.0": "one checkpoint ran far longer than usual under a steady write load",
    }
    for name, opening in told.items():
        nodes, _ = _analyzed(name)
        cause = nodes[0].incidents[0].root_cause
        assert cause.kind == "workload" and cause.evidence["load_change"] == "unchanged"  # the category stays
        assert words.cause_kind(cause) != words.root_kind("workload")
        assert "the load is not what changed" not in cause.summary
        assert cause.summary.startswith(opening), cause.summary
    stall = _analyzed("checkpoint-stall")[0][0].incidents[0].root_cause
    assert "14.0 % of the cache when the longest started against the 5 % target" in stall.summary
    assert "so the checkpoints had far more to write than usual" in stall.summary
    dirty = _analyzed("dirty-cache-checkpoints-8.0")[0][0].incidents[0].root_cause
    assert dirty.evidence["dirty_pct_at_longest_checkpoint"] <= 5
    assert "dirty data rose while it ran, from 3.0 % of the cache when the longest started to 22.7 %" in dirty.summary


def test_a_checkpoint_that_ran_long_from_little_dirty_data_is_said_so_and_once_around_the_arrow():
    # dirty-cache-checkpoints-8.0: "A 15 min checkpoint (usually 1.9 s) … → a 15 min checkpoint longer than the 60 s
    # interval", under the heading "dirty data written out too slowly", while the longest started from 3.0 % dirty data.
    from analysis.outputs import words

    [incident] = _analyzed("dirty-cache-checkpoints-8.0")[0][0].incidents
    cause = incident.root_cause
    head, _, effects = incident.title.partition(" → ")
    assert "15 min checkpoint" in head and "15 min checkpoint" not in effects, incident.title
    assert "dirty data rising from 3.0 % to 22.7 % of the cache while it ran" in head
    assert words.cause_kind(cause) == words.SLOWER_CHECKPOINTS
    assert "with no more dirty data to write than usual" in cause.summary
    assert "past the 20 % eviction dirty trigger, where application threads evict" in cause.summary
    assert not {"told_in_headline", "checkpoints_slower"} & {k for k, _ in words.cause_rows(cause)}


def test_a_fill_only_breach_is_not_offered_eviction_behind_a_steady_write_load():
    # cache-fill-collscan: "Also considered: dirty data written out too slowly under a steady load: eviction fell behind
    # a steady write load" for a cache full of clean pages (fill 96.8 % > 95 %, dirty data under its target).
    [incident] = _analyzed("cache-fill-collscan")[0][0].incidents
    loads = [c for c in (incident.root_cause, *incident.candidates) if c.evidence.get("mechanism") == "write_load"]
    assert not loads, [c.summary for c in loads]


def test_a_set_wide_finding_keeps_no_advice_its_members_incident_withheld():
    # rs1-c's lag is one incident with its own saturated disk: "Check the network between the members" was withheld
    # from that incident, yet the replica set's section printed it under the same lag.
    nodes, cross = _analyzed("replica-set")
    [lag] = [f for f in cross if f.kind == "replication_lag"]
    [member] = [n for n in nodes if n.node.address == lag.evidence["address"]]
    [incident] = [i for i in member.incidents if lag.id in i.finding_ids]
    assert any(f.kind == "disk_saturation" for f in incident.findings)
    said = [r.what for r in lag.recommendations] + [r.what for r in incident.recommendations]
    assert not any("network" in s for s in said), said
    assert any("network" in w.recommendation.what for w in lag.withheld)
    # Told once: the copy the member's incident holds is the replica set's.
    assert [f for f in incident.findings if f.id == lag.id] == [lag]


def test_every_member_section_carries_its_node_table_and_audit_in_every_document(tmp_path):
    # A reading of the replica set's report found one member's audit a bare header and its Node table without version or
    # cache, while the terminal printed them: each member's section must carry what the terminal says of it.
    import json

    nodes, _ = _analyzed("replica-set")
    report = build_report(analyzed_result("replica-set"))
    for fmt in (".md", ".html", ".json"):
        write_report(report, tmp_path / f"report{fmt}")
    markdown = (tmp_path / "report.md").read_text()
    page = re.sub(r"(?is)<(script|style|svg)\b.*?</\1>", " ", (tmp_path / "report.html").read_text())
    document = json.loads((tmp_path / "report.json").read_text())
    for node, section, json_node in zip(
        nodes, re.split(r"^## (?!Incidents|Replica set|Methods)", markdown, flags=re.M)[1:], document["nodes"]
    ):
        assert node.audit and node.node.version and section.startswith(node.node.address)
        table = section.split("### Configuration audit", 1)[1].split("\n### ", 1)[0]
        assert len(re.findall(r"^\| (?!item |---)", table, flags=re.M)) == len(node.audit), node.node.address
        assert f"| version | {node.node.version} |" in section and re.search(r"^\| WiredTiger cache \| \d", section, re.M)
        key = node.node.address.replace(".", "-").replace(":", "-")
        audit = page.split(f"id='{key}-audit'", 1)[1].split("</table>", 1)[0]
        assert audit.count("<tr>") == len(node.audit) + 1, node.node.address  # the header's row and one per item
        facts = page.split(f"id='{key}-node'", 1)[1].split("</table>", 1)[0]
        assert f"<th>version</th><td>{node.node.version}</td>" in facts
        assert len(json_node["audit"]) == len(node.audit) and json_node["node"]["version"] == node.node.version


def test_a_root_causes_nested_evidence_is_said_in_words_and_its_load_change_once():
    # checkpoint-stall: "carried by (the log's slow operations): (namespace shop.orders, command update, runs 90, share of
    # the slow operations' time 100 %, application orders-service)", "load change: unchanged" under a heading that says
    # the load was steady, and "documents per second: returned 3,999, …, documents deleted 120".
    from analysis.outputs import words

    cause = _analyzed("checkpoint-stall")[0][0].incidents[0].root_cause
    rows = dict(words.cause_rows(cause))
    assert (
        rows[words.label("carried_by")] == "shop.orders update, 90 runs, 100 % of the slow operations' time, from orders-service"
    )
    assert words.cause_kind(cause) == words.STEADY_LOAD
    assert not {words.label("load_change"), words.label("writes_changed")} & set(rows), rows
    documents = rows[words.label("documents_per_s")]
    assert "deleted 120" in documents and "documents deleted" not in documents, documents
    assert "getmore" not in rows[words.label("operations_per_s")]
    # A key keeps its own words where its record's label does not already say them.
    assert words._value("shares", {"deleted": 3}, None) == "documents deleted 3"


@pytest.mark.parametrize("name", ["checkpoint-stall", "demo"])
def test_a_change_of_setting_says_its_current_value_and_source_once(name):
    # checkpoint-stall, demo: "eviction_dirty_target 5 % → 2 % (wiredTigerEngineRuntimeConfig: …; now 5 % (WiredTiger
    # default)). Dirty data built up to 14.0 % of the cache before 30 of 30 checkpoint(s) (dirty target 5 % (WiredTiger
    # default))": the current value three times, its source twice.
    from analysis.advice import wording

    said = [
        (r, wording.text(r))
        for node in _analyzed(name)[0]
        for i in node.incidents
        for r in [*i.recommendations, *(r for f in i.findings for r in f.recommendations)]
        if r.setting is not None
    ]
    assert any(r.setting == "eviction_dirty_target" for r, _ in said)
    for rec, text in said:
        current = wording.amount(rec.current.value, rec.current.unit)
        assert text.count(f"{current} (") == 1 and text.count(rec.current.source) == 1, text
        assert " now " not in text, text


def test_a_checkpoint_that_ran_long_is_judged_against_the_disk_in_its_other_checkpoints():
    # dirty-cache-checkpoints-8.0: "one checkpoint ran far longer than usual … with no more dirty data to write than usual"
    # was the symptom again. Then "the disk sda slowed while the longest ran: 97 % busy at 5 ms per request against 25 %
    # and 0.81 ms usually" compared a checkpoint with the quiet time between checkpoints: in the capture's other
    # checkpoints sda was 96 % busy at 3.1 ms, a disk busy while checkpoints write being their usual. Judged against them,
    # the disk did not slow; a disk far slower than in the other checkpoints is named, with the volume to check first.
    import dataclasses

    import polars as pl

    from analysis.incidents import root_causes

    node = _analyzed("dirty-cache-checkpoints-8.0")[0][0]
    [incident] = node.incidents
    cause = incident.root_cause
    assert cause.kind == "workload" and "device" not in cause.evidence
    assert "not in what the node records (its disks were no slower than in its other checkpoints)" in cause.summary
    assert not incident.recommendations[0].what.startswith("Check the volume itself")
    ctx = node.context
    assert root_causes._disk_at_longest(ctx, incident.start, incident.end) is None
    # The same node with sda at 20 ms per request through the long checkpoint: far slower than in its other checkpoints.
    [longest] = [c for c in ctx.checkpoints if c.seconds > 600]
    inside = (pl.col("start") >= longest.start) & (pl.col("start") <= longest.end)
    slowed = dataclasses.replace(
        ctx,
        series=ctx.series.with_columns(
            pl.when(inside).then(20.0).otherwise(pl.col("disk_await_ms.sda")).alias("disk_await_ms.sda")
        ),
    )
    disk = root_causes._disk_at_longest(slowed, incident.start, incident.end)
    assert disk is not None and "in its other checkpoints" in disk.said and disk.fix.what.startswith("Check the volume itself")
