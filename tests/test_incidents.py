"""Incidents: grouping by mechanism (not overlap), repeated findings folded, root-cause ranking,
victims never blamed, one recommendation list; and on every scenario and real sample, the
warning/critical incidents are the ones injected, each with the injected cause as its root cause."""

from __future__ import annotations

import ast
import datetime as dt
import json
import subprocess
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl
import pytest
from conftest import slow_ops

import analysis
from analysis.advice.recommendation import Current, Recommendation, advise
from analysis.advice.wording import text
from analysis.findings.context import Context
from analysis.findings.culprits import attribute
from analysis.findings.detectors import LINKS, MODULES, RECORDS
from analysis.findings.finding import Finding
from analysis.incidents import grouping as episodes
from analysis.series.checkpoints import by_window
from analysis.series.thresholds import Setting, Thresholds
from analysis.settings import SETTINGS
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import NodeInfo
from samples.advice_rules import INTERNAL

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
SCENARIOS = Path(__file__).resolve().parents[1] / "samples" / "scenarios"


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def finding(kind: str, start_s: float, end_s: float, severity: str = "warning", recs: tuple = (), resource=None) -> Finding:
    """A finding whose advice is `recs`: `Recommendation`s, or words standing for advice to investigate."""
    advice = [advise("investigate", r) if isinstance(r, str) else r for r in recs]
    return Finding(
        kind, severity, at(start_s), at(end_s), f"{kind} from {start_s:g} s", "", recommendations=advice, resource=resource
    )


def texts(recs) -> list[str]:
    return [text(r) for r in recs]


def defaults(**configured: tuple[float, str]) -> Thresholds:
    """Every threshold at its default, but `configured` name=(value, source) from the start of the data."""
    timeline = {s.name: [Setting(s.default, s.default_source)] for s in SETTINGS.values()}
    for name, (value, source) in configured.items():
        timeline[name] = [Setting(value, source)]
    return Thresholds(timeline)


@dataclass
class Node:
    """What incidents read of a node's `Context`."""

    thresholds: Thresholds = field(default_factory=defaults)
    node: NodeInfo = field(default_factory=NodeInfo)
    series: pl.DataFrame = field(default_factory=lambda: pl.DataFrame({TIME_COLUMN: [T0]}))
    checkpoints: list = field(default_factory=list)
    logs: object | None = None

    @property
    def checkpoint_spans(self):
        return by_window(self.checkpoints)

    # The baselines before a window, read from `series` as the Context reads them.
    before = Context.before
    since = Context.since
    earliest_before = Context.earliest_before


def incidents(findings: list[Finding], node: Node | None = None):
    return episodes.build([replace(f, id=f"F{n}") for n, f in enumerate(findings, 1)], node or Node())


# --- the contract ----------------------------------------------------------------------------------


def test_every_causal_link_names_a_declared_kind_and_every_kind_has_one_record():
    assert set(RECORDS) >= {
        "checkpoint_stall",
        "cache_pressure",
        "ticket_exhaustion",
        "throughput_dip",
        "replication_lag",
        "primary_change",
    }
    assert all(effect in RECORDS for effects in LINKS.values() for effect in effects)
    # Each module declares one record; every kind belongs to one module.
    # The method is written for the report's readers (issue 18 §4): no constant, file or document-section names.
    assert all(m.__doc__.strip() and m.DETECTOR.method.strip() and not INTERNAL.search(m.DETECTOR.method) for m in MODULES)
    assert sum(len(m.DETECTOR.kinds) for m in MODULES) == len(RECORDS)


def test_the_model_does_not_import_its_renderer():
    code = (
        "import sys, analysis, analysis.findings.finding, analysis.incidents.incident, analysis.incidents.grouping, analysis.observe, analysis.nodes;"
        "print(sorted(m for m in sys.modules if m.startswith(('analysis.outputs.report', 'analysis.outputs.render', 'matplotlib'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1]
    )
    assert out.stdout.strip() == "[]"
    # Nor anywhere in its source, not even inside a function (how _repr_html_ used to reach it):
    # every module of every stage but the outputs, which hold the renderer.
    package = Path(analysis.__file__).parent
    modules = [path for path in package.rglob("*.py") if "outputs" not in path.relative_to(package).parts]
    assert {p.parent.name for p in modules} >= {"detectors", "findings", "incidents", "series", "advice", "workbench"}
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[-1] not in ("render", "report") and "report" not in (node.module or ""), (
                    path
                )


# --- grouping --------------------------------------------------------------------------------------


def test_two_unrelated_findings_at_the_same_time_stay_two_incidents():
    # A saturated disk and a connection storm in one minute: no mechanism from one to the other.
    found = incidents([finding("disk_saturation", 0, 60), finding("connection_storm", 10, 50)])
    assert [[f.kind for f in i.findings] for i in found] == [["disk_saturation"], ["connection_storm"]]


def test_a_mechanism_joins_findings_that_do_not_overlap():
    # Long checkpoints, then (40 s later) write tickets exhausted: one story.
    found = incidents([finding("checkpoint_stall", 0, 60), finding("ticket_exhaustion", 100, 130, resource="write")])
    assert len(found) == 1 and [s.kind for s in found[0].chain] == ["checkpoint_stall", "ticket_exhaustion"]
    # The same two, ten minutes apart, are two incidents.
    assert len(incidents([finding("checkpoint_stall", 0, 60), finding("ticket_exhaustion", 660, 690, resource="write")])) == 2


def test_the_chain_puts_each_cause_before_its_effects_whatever_the_finding_order():
    found = incidents(
        [finding("throughput_dip", 5, 10), finding("ticket_exhaustion", 0, 30, resource="read"), finding("ttl_burst", 0, 60)]
    )
    [incident] = found
    assert [s.kind for s in incident.chain] == ["ttl_burst", "ticket_exhaustion", "throughput_dip"]
    assert incident.root_cause.kind == "workload" and incident.root_cause.evidence["finding"] == "F3"


def test_repeated_findings_of_one_kind_in_one_episode_are_one_step():
    dips = [finding("throughput_dip", s, s + 5) for s in range(0, 200, 20)]
    found = incidents([*dips, finding("ticket_exhaustion", 0, 200, severity="critical", resource="read")])
    [incident] = found
    assert incident.severity == "critical" and len(incident.finding_ids) == 11
    step = next(s for s in incident.chain if s.kind == "throughput_dip")
    assert len(step.findings) == 10 and "worst of 10" in step.text
    # Far apart, the same kind is separate episodes.
    assert len(incidents([finding("throughput_dip", 0, 5), finding("throughput_dip", 1000, 1005)])) == 2


def test_an_incident_names_its_findings_as_a_reader_counts_them():
    # F2 before F10 (not as text sorts them), the replica set's X ids after the node's F ids.
    found = [replace(finding("throughput_dip", 0, 5), id=i) for i in ("F10", "X1", "F2", "X12", "F1", "X3")]
    assert episodes.id_order(found) == ["F1", "F2", "F10", "X1", "X3", "X12"]


def test_a_finding_without_a_window_is_an_incident_of_its_own():
    untimed = Finding("disk_saturation", "warning", None, None, "no window", "")
    found = incidents([finding("checkpoint_stall", 0, 60), untimed])
    assert [i.finding_ids for i in found] == [["F1"], ["F2"]] and found[1].root_cause.kind == "undetermined"
    assert found[1].to_dict()["start"] is None and found[1].seconds == 0.0


@pytest.mark.parametrize("logged", [False, True])
def test_a_finding_without_a_window_has_no_operations_attributed_to_it(logged):
    # Without a log, FTDC's scan counters were read over [None, None + grace]: a TypeError; with one, the finding was
    # told "the log has no slow operation in this window" of a window it does not have.
    untimed = Finding("disk_saturation", "warning", None, None, "no window", "")
    series = pl.DataFrame({TIME_COLUMN: [at(0), at(1)], "collscans_per_s": [2.0, 3.0], "interval_s": [1.0, 1.0]})
    ops = slow_ops([scan(300, 290_000)]) if logged else None
    assert attribute(untimed, ops, series, replica_set=False, reading_holds=False) == untimed


def test_info_findings_make_no_incident():
    assert incidents([finding("restart", 0, 1, severity="info"), finding("cache_pressure", 0, 60, severity="info")]) == []


# --- root causes -----------------------------------------------------------------------------------


def scan(end_s: float, ms: int, ns: str = "shop.orders", waited_ms: int = 0) -> dict:
    return {
        "ts": at(end_s),
        "started": at(end_s) - dt.timedelta(milliseconds=ms),
        "duration_ms": ms,
        "ns": ns,
        "command": "find",
        "op_type": "command",
        "write_statement": False,
        "plan_summary": "COLLSCAN",
        "plan_kind": "COLLSCAN",
        "shape": f"{ns}-scan",
        "command_json": json.dumps({"find": ns.split(".")[1], "filter": {"status": "a"}}),
        "lock_wait_micros": waited_ms * 1000,
    }


def attributed(kind: str, start_s: float, end_s: float, ops: pl.DataFrame, advice: dict, resource=None) -> Finding:
    f = finding(kind, start_s, end_s, severity="critical", resource=resource, recs=(f"{kind} advice",))
    return attribute(f, ops, pl.DataFrame(), replica_set=False, advice=advice, reading_holds=RECORDS[kind].reading_holds)


def test_an_operation_that_held_the_window_is_the_root_cause_and_its_fix_comes_first():
    ops = slow_ops([scan(300, 290_000), scan(900, 250_000)])
    advice: dict = {}
    tickets = attributed("ticket_exhaustion", 20, 300, ops, advice, resource="read")
    checkpoint = finding("checkpoint_stall", 30, 200, recs=("checkpoint advice",))
    [incident] = incidents([tickets, checkpoint])
    assert incident.root_cause.kind == "operation" and incident.root_cause.evidence["ns"] == "shop.orders"
    assert incident.title.startswith("COLLSCAN find on shop.orders (1 run, up to 4 min 50 s)") and "→" in incident.title
    assert texts(incident.recommendations)[0].startswith("Give shop.orders an index")
    assert texts(incident.recommendations).index("checkpoint advice") > texts(incident.recommendations).index(
        "ticket_exhaustion advice"
    )


def test_a_culprits_advice_is_the_same_in_every_window_and_listed_once():
    # Two runaway runs and the shape's usual 20 s ones, outside both windows.
    ops = slow_ops([scan(300, 290_000), scan(900, 250_000), *(scan(2000 + 100 * n, 20_000) for n in range(3))])
    advice: dict = {}
    first = attributed("ticket_exhaustion", 20, 300, ops, advice, resource="read")
    second = attributed("ticket_exhaustion", 660, 900, ops, advice, resource="read")
    assert first.causes[0].recommendations == second.causes[0].recommendations  # maxTimeMS from all its runs, not the window
    assert "maxTimeMS: 40000" in " ".join(texts(first.causes[0].recommendations))  # twice the 20 s median
    dips = [attributed("throughput_dip", s, s + 5, ops, advice) for s in (40, 60, 80)]
    [incident] = incidents([first, *dips])
    assert len(incident.recommendations) == len(set(texts(incident.recommendations)))
    assert sum(r.action == "add_max_time_ms" for r in incident.recommendations) == 1


def test_a_victim_that_spent_its_time_waiting_is_never_the_root_cause():
    # The scan ran through the whole window but waited on locks for 95 % of it: a victim.
    ops = slow_ops([scan(300, 290_000, waited_ms=280_000)])
    tickets = attributed("ticket_exhaustion", 20, 300, ops, {}, resource="read")
    assert tickets.culprits and not tickets.causes
    [incident] = incidents([tickets])
    assert incident.root_cause.kind == "undetermined" and "operation" not in {c.kind for c in incident.candidates}


def writes_series() -> pl.DataFrame:
    times = [at(s) for s in range(-600, 300)]
    return pl.DataFrame({TIME_COLUMN: times, "writes_per_s": [800.0] * len(times), "cache_dirty_pct": [3.0] * 600 + [12.0] * 300})


def test_a_configuration_outlier_outranks_the_write_load_and_only_where_it_bears():
    node = Node(
        thresholds=defaults(checkpoint_interval=(1, "getParameter (8.0 periodic metadata).syncdelay=1")), series=writes_series()
    )
    [incident] = incidents([finding("checkpoint_stall", 0, 240), finding("cache_pressure", 30, 200)], node)
    assert incident.root_cause.kind == "configuration" and incident.root_cause.evidence["setting"] == "checkpoint_interval"
    assert "syncdelay=1" in incident.root_cause.summary and "write load" in incident.root_cause.summary
    first = incident.recommendations[0]
    assert (first.setting, first.current.value, first.proposed) == ("checkpoint_interval", 1, 60)
    # (the current value with its source, once, then the proposed one)
    assert text(first).startswith(f"Set syncdelay back to the default: syncdelay 1 s ({first.current.source}) → 60 s")
    assert [c.kind for c in incident.candidates] == ["workload"]  # the write load, second, with its evidence
    assert incident.candidates[0].evidence["writes_per_s"] == 800
    # The interval has nothing to do with a read-ticket window.
    [tickets] = incidents([finding("ticket_exhaustion", 0, 60, resource="read")], node)
    assert tickets.root_cause.kind == "undetermined"


def test_a_default_value_is_no_outlier_and_a_lowered_ticket_pool_is():
    node = Node(
        thresholds=defaults(
            checkpoint_interval=(60, "getCmdLineOpts.parsed.storage.syncPeriodSecs=60"),
            write_tickets=(16, "getCmdLineOpts.parsed.setParameter.wiredTigerConcurrentWriteTransactions=16"),
        ),
        series=writes_series(),
    )
    [incident] = incidents([finding("checkpoint_stall", 0, 240), finding("ticket_exhaustion", 10, 200, resource="write")], node)
    assert [c.evidence.get("setting") for c in [incident.root_cause, *incident.candidates] if c.kind == "configuration"] == [
        "write_tickets"
    ]


def test_nothing_to_go_on_says_cause_not_determined_and_what_would_tell():
    [incident] = incidents([finding("throughput_dip", 0, 10)])
    cause = incident.root_cause
    assert cause.kind == "undetermined" and cause.summary.startswith("cause not determined")
    assert any("log" in x for x in cause.evidence["would_tell"])
    # No log read: said in the words every format shows, with the causes it hides (issue 39 §3), not only in the JSON.
    assert "no mongod log was read" in cause.summary and "index builds and transactions" in cause.summary
    assert incident.title.startswith("Cause not determined (no mongod log was read)")


def test_a_longer_capture_would_tell_where_the_capture_holds_less_than_the_hour_before():
    series = pl.DataFrame({TIME_COLUMN: [at(s) for s in range(-600, 0)]})
    [short] = incidents([finding("throughput_dip", 0, 10)], Node(series=series))
    assert "a longer capture (the hour before shows what changed)" in short.root_cause.evidence["would_tell"]
    held = pl.DataFrame({TIME_COLUMN: [at(s) for s in range(-3700, 0)]})
    [long] = incidents([finding("throughput_dip", 0, 10)], Node(series=held))
    assert not any("longer capture" in x for x in long.root_cause.evidence["would_tell"])


def test_incident_json_names_findings_by_id():
    [incident] = incidents([finding("checkpoint_stall", 0, 60), finding("cache_pressure", 10, 50)])
    doc = incident.to_dict()
    assert doc["finding_ids"] == ["F1", "F2"] and doc["start"].endswith("Z") and "findings" not in doc
    assert doc["root_cause"]["kind"] in ("operation", "configuration", "resource", "workload", "undetermined")
    assert [s["findings"] for s in doc["chain"]] == [["F1"], ["F2"]]


# --- ground truth ----------------------------------------------------------------------------------


def _run(folder: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nodes = sorted(p for p in folder.iterdir() if (p / "diagnostic.data").is_dir())
        if nodes:
            return analysis.analyze_nodes([n / "diagnostic.data" for n in nodes], [n / "mongod.log" for n in nodes])
        return analysis.analyze(folder / "diagnostic.data", folder / "mongod.log")


def found_incidents(result) -> list[tuple[str | None, object]]:
    """(node name or None, incident) of the warning and critical incidents, in time order."""
    if isinstance(result, analysis.NodesAnalysis):
        pairs = [(n, i) for n, a in zip(result.names, result.nodes) for i in a.incidents] + [(None, i) for i in result.incidents]
    else:
        pairs = [(None, i) for i in result.incidents]
    return sorted(((n, i) for n, i in pairs if i.severity != "info"), key=lambda p: p[1].start)


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir() if (p / "truth.json").exists()))
def test_scenario_incidents_are_the_injected_ones_with_the_injected_root_cause(name):
    truth = json.loads((SCENARIOS / name / "truth.json").read_text())
    found = found_incidents(_run(SCENARIOS / name))
    described = [(n, i.root_cause.kind, i.title) for n, i in found]
    assert len(found) == len(truth["incidents"]), described
    for want, (node, incident) in zip(truth["incidents"], found):
        assert incident.root_cause.kind == want["root_cause"], described
        if "ns" in want:
            assert incident.root_cause.evidence["ns"] == want["ns"]
        if "mechanism" in want:
            assert incident.root_cause.evidence.get("mechanism") == want["mechanism"], described
        if "node" in want:
            assert node == want["node"]


CHUNK_80 = "mongod-8.0-chunk/metric-2025-03-12_15-58-06.0_+00-00-00.bson"


@pytest.mark.parametrize("path,count", [(CHUNK_80, 1), ("mongod-7.0/diagnostic.data", 1), ("mongod-4.2.1/diagnostic.data", 0)])
def test_real_nodes_have_their_incidents(ftdc_samples, path, count):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(ftdc_samples / path)
    assert len([i for i in result.incidents if i.severity != "info"]) == count


def test_the_80_write_stress_is_one_incident_rooted_in_the_checkpoint_interval_under_the_write_load(ftdc_samples):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(ftdc_samples / CHUNK_80)
    [incident] = result.incidents
    cause = incident.root_cause
    # The file records no configuration: the node's syncdelay=1 shows in the checkpoints' cadence, said to be inferred,
    # and the root cause tells what it did (the write load it met, the checkpoints back to back).
    assert cause.kind == "configuration" and cause.evidence["setting"] == "checkpoint_interval" and cause.evidence["value"] == 1
    assert "inferred" in cause.summary and "write load" in cause.summary and "checkpoints back to back" in cause.summary
    load = cause.evidence["write_load"]
    assert load["writes_per_s"] > 0 and load["checkpoints"] >= 10 and load["checkpoint_time_share"] >= 0.8
    assert sorted(incident.finding_ids) == sorted(f.id for f in result.problems)
    # One piece of advice for the interval, whichever finding also gives it.
    syncdelay = [r for r in incident.recommendations if r.setting == "checkpoint_interval"]
    assert (
        len(syncdelay) == 1
        and syncdelay[0].proposed == 60
        and syncdelay[0].current.origin == "inferred"
        and incident.recommendations[0] == syncdelay[0]
    )
    assert text(syncdelay[0]).startswith(
        f"Set syncdelay back to the default: syncdelay 1 s ({syncdelay[0].current.source}) → 60 s"
    )


def test_the_demo_is_one_incident_in_time_order():
    demo = Path(__file__).resolve().parents[1] / "samples"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(demo / "diagnostic.data", demo / "mongod.log")
    [incident] = result.incidents
    assert incident.root_cause.kind == "operation" and len(incident.finding_ids) == len(result.problems) == 4
    starts = [f.start for f in incident.findings]
    assert starts == sorted(starts)
    assert analysis.incidents_frame(result).height == 1 and analysis.findings_frame(result)["id"].to_list() == [
        f.id for f in result.findings
    ]
    card = incident._repr_html_()  # the report's incident card: severity badge, then id and title
    assert card.index("<h3>") < card.index("I1. ") < card.index("</h3>") and 'class="incident critical"' in card


def test_redacted_incidents_are_the_plain_ones_in_pseudonyms():
    from analysis.nodes import NodesAnalysis
    from analysis.outputs.report import Redactor, redact_result

    demo = Path(__file__).resolve().parents[1] / "samples"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(demo / "diagnostic.data", demo / "mongod.log")
    [redacted] = redact_result(NodesAnalysis([result]), Redactor()).nodes
    text = json.dumps([i.to_dict() for i in redacted.incidents])
    assert "shop" not in text and "db-1.coll-" in redacted.incidents[0].title
    assert (
        redacted.incidents[0].root_cause.kind == "operation"
        and redacted.incidents[0].finding_ids == result.incidents[0].finding_ids
    )


def _change(name: str, now: float, proposed: float, what: str):
    return Recommendation(
        "set_setting", what, setting=name, current=Current(now, "s", "mongod default", "default"), proposed=proposed
    )


def test_one_change_worded_by_two_detectors_is_advised_once():
    checkpoint = finding(
        "checkpoint_stall",
        0,
        240,
        recs=(
            _change("checkpoint_interval", 60, 30, "Checkpoint more often so each one writes less"),
            _change("eviction_threads_max", 4, 8, "Let eviction write dirty data out between checkpoints"),
            _change("eviction_dirty_target", 5, 2, "Let eviction write dirty data out between checkpoints"),
            "Check the disk during checkpoints",
        ),
    )
    cache = finding(
        "cache_pressure",
        30,
        200,
        recs=(
            _change("checkpoint_interval", 60, 30, "Dirty data outran eviction: checkpoint more often"),
            _change("eviction_dirty_target", 5, 2, "Start dirty eviction earlier"),
            _change("eviction_threads_max", 4, 8, "Give eviction more worker threads"),
            "Check the disk during checkpoints",
        ),
    )
    [incident] = incidents([checkpoint, cache])
    recs = incident.recommendations
    assert [r.setting for r in recs if r.setting] == ["checkpoint_interval", "eviction_threads_max", "eviction_dirty_target"]
    assert texts(recs).count("Check the disk during checkpoints") == 1
    # Each one answers both findings, in the words of the first that gave it.
    assert all(r.findings == ("F1", "F2") for r in recs) and recs[0].what == "Checkpoint more often so each one writes less"
    # One setting, one proposed value: a second value for it is not a second piece of advice (issue 18: one incident
    # proposed eviction_dirty_target=5 and =1), the first made stands.
    other = finding("cache_pressure", 30, 200, recs=(_change("checkpoint_interval", 60, 20, "Dirty data outran eviction"),))
    [both] = incidents([finding("checkpoint_stall", 0, 240, recs=checkpoint.recommendations), other])
    assert [r.proposed for r in both.recommendations if r.setting == "checkpoint_interval"] == [30]


def test_an_incident_lists_its_findings_ids_in_order_and_its_findings_in_time_order():
    # F1 is the later finding (ids follow rank): the ids read F1, F2 wherever they are listed (issue 18 §4).
    [incident] = incidents([finding("checkpoint_stall", 100, 200), finding("cache_pressure", 30, 150)])
    assert incident.finding_ids == ["F1", "F2"] and [f.id for f in incident.findings] == ["F2", "F1"]
    assert all(step.findings == sorted(step.findings) for step in incident.chain)


def test_an_incident_names_each_step_by_its_findings_subject_never_a_cut_title():
    # A subject may hold ": " itself: the title is rendered from the finding's parts, never cut at the first one.
    tickets = replace(
        finding("ticket_exhaustion", 100, 130, resource="write"),
        subject='Write tickets exhausted on "shard: a"',
        statement="0 of 8 available",
    )
    [incident] = incidents([finding("checkpoint_stall", 0, 60), tickets])
    assert incident.chain[-1].text == 'Write tickets exhausted on "shard: a": 0 of 8 available' == tickets.title
    assert incident.title.endswith('; write tickets exhausted on "shard: a"')


def test_findings_and_incidents_are_frozen_and_later_stages_add_notes():
    import dataclasses

    [incident] = incidents([finding("checkpoint_stall", 0, 60)])
    for value, name in (
        (incident, "title"),
        (incident.chain[0], "text"),
        (incident.root_cause, "summary"),
        (incident.findings[0], "subject"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, "changed")
    told = Finding("checkpoint_stall", "warning", at(0), at(60), "Long checkpoints", "They ran long.", statement="2 over 1 min")
    noted = told.noted("Cause: a scan.")
    assert (noted.title, noted.explanation) == ("Long checkpoints: 2 over 1 min", "They ran long. Cause: a scan.")
    assert told.explanation == "They ran long." and noted.to_dict()["explanation"] == noted.explanation
    assert list(noted.to_dict())[:6] == ["kind", "severity", "start", "end", "title", "explanation"]


# --- like stalls rated alike, told where to look ------------------------------------------------------------------


def test_like_server_stalls_are_rated_alike():
    # throughput-dip: three identical 10-s stalls were rated critical, warning, critical: a ticket finding was critical
    # when its busiest sample's queue reached the pool's 128, and the sampled queues (80-150 a second) straddle it.
    incidents = found_incidents(_run(SCENARIOS / "throughput-dip"))
    assert len(incidents) == 3
    assert len({i.severity for _, i in incidents}) == 1, [(i.id, i.severity) for _, i in incidents]
    assert len({f.severity for _, i in incidents for f in i.findings if f.kind == "ticket_exhaustion"}) == 1


def _ticket_severity(tmp_path, queues: list[int]) -> str:
    """The severity of 7.0's write-ticket exhaustion over len(queues) seconds, the queue sampled as `queues`."""
    from samples.simulate import Config, Tick, write_ftdc

    start = 300

    def plan(s):
        inside = start <= s < start + len(queues)
        return Tick(write_out=128 if inside else 2, write_queue=queues[s - start] if inside else 0)

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 600, plan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(tmp_path / "diagnostic.data")
    [writes] = [f for f in result.findings if f.kind == "ticket_exhaustion" and f.resource == "write" and f.severity != "info"]
    return writes.severity


def test_a_queue_as_long_as_the_pool_makes_tickets_critical_only_when_it_lasts(tmp_path):
    # One sample's queue at the pool is a moment's burst: a warning, as the same queue a few short of it is.
    assert _ticket_severity(tmp_path / "burst", [100, 100, 150, 100, 100, 100, 100, 100, 100, 100]) == "warning"
    assert _ticket_severity(tmp_path / "short", [100] * 10) == "warning"
    # Twice what the pool serves at every sample while none was free: critical, and said why.
    assert _ticket_severity(tmp_path / "held", [140] * 10) == "critical"


def test_a_server_stall_says_what_stopped_and_where_to_look():
    # throughput-dip: "Cause not determined" with only "would tell: a longer capture (the hour before shows what
    # changed)", false for I3 (whose baseline is the hour before), and no action at all. serverStatus took 3 s to answer
    # with every ticket held and no operation in the log: a stall below the operations, in the host or what it runs on.
    from samples.advice_rules import advice_problems

    result = _run(SCENARIOS / "throughput-dip")
    assert advice_problems(result) == []
    for _, incident in found_incidents(result):
        cause = incident.root_cause
        assert cause.kind == "undetermined" and "a stall of the whole server" in cause.summary
        [dip] = [f for f in incident.findings if f.kind == "throughput_dip"]
        # The time serverStatus took, one value: the dip's.
        took = dip.evidence["serverstatus_ms"]
        assert took >= 1000 and f"serverStatus itself took {took:,.0f} ms to answer" in cause.summary
        assert f"serverStatus took {took:,.0f} ms to answer" in dip.explanation
        assert not any("longer capture" in x for x in cause.evidence.get("would_tell", []))
        # Actions the customer can take, the host's record of those seconds first; the schedule the stalls keep.
        first, *rest = incident.recommendations
        assert first.action == "investigate" and "kernel log" in first.what and "UTC" in first.what
        assert any("every 25 min" in r.what for r in rest)


def test_a_stall_with_an_operation_to_blame_is_not_told_as_the_hosts():
    # The same tickets and a slow serverStatus, but the log names an operation that held them: not the host's.
    from analysis.incidents import stalls

    dip = replace(finding("throughput_dip", 0, 10), evidence={"serverstatus_ms": 3000.0})
    reads, writes = (finding("ticket_exhaustion", 0, 10, resource=rw) for rw in ("read", "write"))
    series = pl.DataFrame(
        {TIME_COLUMN: [at(s) for s in range(12)], "collect_ms": [3000.0] * 12, "interval_s": [1.0] * 12, "period_s": [1.0] * 12}
    )

    class Ctx(Node):
        has = Context.has
        window = Context.window

    ctx = Ctx(series=series, logs=object())
    assert stalls.server_stall(ctx, [dip, reads, writes]) is not None
    blamed = replace(reads, causes=[object()])
    assert stalls.server_stall(ctx, [dip, blamed, writes]) is None
    assert stalls.server_stall(Ctx(series=series), [dip, reads, writes]) is None  # no log read: nothing to clear them
