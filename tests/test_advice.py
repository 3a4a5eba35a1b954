"""Advice is data, checked against the node (issue 18 §1): the rules over every scenario and sample,
and one regression test per defect the issue names."""

from __future__ import annotations

import datetime as dt
import json
import re
import warnings
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from conftest import require_samples, slow_ops
from hypothesis import given
from hypothesis import strategies as st
from scenario_nodes import analyzed_nodes

import analysis
from analysis.advice.recommendation import Current, Recommendation
from analysis.advice.wording import text
from analysis.incidents.vetting import Answering, NodeFacts, Vetting, broken_rule
from analysis.series.thresholds import Setting, Thresholds
from analysis.settings import SETTINGS
from samples.advice_rules import advice_problems
from samples.simulate import Config, Tick, write_ftdc

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = ROOT / "samples" / "scenarios"
T0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=dt.timezone.utc)


def quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


SINGLE = sorted(p.name for p in SCENARIOS.iterdir() if (p / "diagnostic.data").is_dir())


@pytest.mark.parametrize("name", SINGLE)
def test_every_scenarios_advice_keeps_the_rules(name):
    [result], _ = analyzed_nodes(name)
    assert advice_problems(result) == []


def test_the_replica_sets_and_the_demos_advice_keeps_the_rules():
    for result in [*analyzed_nodes("replica-set")[0], *analyzed_nodes("demo")[0]]:
        assert advice_problems(result) == []


@pytest.mark.parametrize(
    "sample",
    [
        ("mongod-4.2.1", "diagnostic.data"),
        ("mongod-7.0", "diagnostic.data"),
        ("mongod-8.0-chunk", "metric-2025-03-12_15-58-06.0_+00-00-00.bson"),
        ("go-writer-synthetic", "perf_metrics_small.ftdc"),
    ],
)
def test_every_real_samples_advice_keeps_the_rules(sample):
    result = quietly(analysis.analyze, require_samples("ftdc", *sample))
    assert advice_problems(result) == []


@pytest.mark.parametrize("node", ["restart_loop", "restart_dip", "clients_leave", "windows_node"])
def test_every_node_from_the_wild_keeps_the_rules(node, tmp_path):
    # samples/wild.py's nodes (issue 18 §5); the randomised families check the rules on every draw (samples/families.failures).
    from samples import wild
    from samples.families import Shape

    made = getattr(wild, node)(Shape(seed=11), tmp_path)
    scenario = made[0] if isinstance(made, tuple) else made
    result = quietly(analysis.analyze, scenario.ftdc, scenario.log)
    assert advice_problems(result) == []


# --- the defects, one test each ----------------------------------------------------------------------


def test_a_configstring_checkpoint_wait_is_the_nodes_interval(tmp_path):
    # configString checkpoint=(wait=25): WiredTiger checkpoints every 25 s; the advice must not say "now 60 s".
    config = Config(config_string="checkpoint=(wait=25)", checkpoint_interval=25)
    write_ftdc(
        tmp_path / "diagnostic.data", config, T0, 900, lambda s: Tick(writes_stalled=s % 25 in (12, 13), checkpoint_seconds=4)
    )
    result = quietly(analysis.analyze, tmp_path / "diagnostic.data")
    setting = result.thresholds.current("checkpoint_interval")
    assert setting.value == 25 and "configString" in setting.source
    quoted = [r for f in result.findings for r in f.recommendations if r.setting == "checkpoint_interval"]
    assert all(r.current.value == 25 and r.current.origin == "configured" for r in quoted)
    assert advice_problems(result) == []


def _probing_node(tmp_path, parameters):
    # 8.0, the ticket parameters reported as 0 (not set: throughput probing), readers queued for minutes.
    def plan(s):
        busy = 300 <= s < 480
        return Tick(read_out=20 if busy else 2, read_total=20 if busy else 128, read_queue=40 if busy else 0)

    config = Config(version="8.0.4", layout="8.0", parameters=parameters)
    write_ftdc(tmp_path / "diagnostic.data", config, T0, 900, plan)
    return quietly(analysis.analyze, tmp_path / "diagnostic.data")


def test_a_ticket_parameter_of_0_on_8_0_is_throughput_probing_never_a_pool_to_raise_from_0(tmp_path):
    result = _probing_node(
        tmp_path, {"storageEngineConcurrentReadTransactions": 0, "storageEngineConcurrentWriteTransactions": 0}
    )
    assert any(f.kind == "ticket_exhaustion" and f.severity != "info" for f in result.findings)
    assert result.thresholds.value("read_tickets") is None  # not set: probing sizes it
    advice = [r for i in result.incidents for c in [i.root_cause, *i.candidates] for r in c.recommendations] + [
        r for f in result.findings for r in f.recommendations
    ]
    assert not any(r.setting == "read_tickets" and r.current.value == 0 for r in advice)
    assert not any(
        "from 0" in text(r) or "tickets fixed at 0" in i.root_cause.summary for i in result.incidents for r in i.recommendations
    )
    assert advice_problems(result) == []


def test_the_validator_refuses_a_pool_of_0_on_7_0_and_syncdelay_0_anywhere():
    t = Thresholds(
        {s.name: [Setting(s.default, s.default_source)] for s in SETTINGS.values()}
        | {"read_tickets": [Setting(0.0, "getParameter")]}
    )
    facts = NodeFacts(t, "8.0.4", 32000, {})
    zero = Recommendation(
        "set_setting",
        "Raise the read ticket pool",
        setting="read_tickets",
        current=Current(0.0, "count", "getParameter", "configured"),
        proposed=128,
    )
    assert "throughput probing" in broken_rule(zero, facts, Answering(T0, T0))
    off = Recommendation(
        "set_setting",
        "Checkpoint less",
        setting="checkpoint_interval",
        current=Current(60.0, "s", SETTINGS["checkpoint_interval"].default_source, "default"),
        proposed=0,
    )
    assert "turns periodic checkpoints off" in broken_rule(off, facts, Answering(T0, T0))


def test_the_validator_only_lowers_the_transaction_lifetime_and_says_what_that_aborts():
    # A longer lifetime only lets an open transaction pin history longer; a shorter one aborts the transactions that run longer.
    # (At its default: a lifetime the node raised on purpose is never lowered, below.)
    facts = NodeFacts(
        Thresholds({s.name: [Setting(s.default, s.default_source)] for s in SETTINGS.values()}), "7.0.12", 32000, {}
    )
    now = Current(60.0, "s", SETTINGS["transaction_lifetime_limit"].default_source, "default")
    raised = Recommendation(
        "set_setting",
        "Let transactions live longer",
        setting="transaction_lifetime_limit",
        current=now,
        proposed=3600,
        caveat="aborts nothing",
    )
    assert "only lets an open transaction pin history longer" in broken_rule(raised, facts, Answering(T0, T0))
    silent = Recommendation("set_setting", "Lower it", setting="transaction_lifetime_limit", current=now, proposed=30)
    assert "must say that transactions running longer are aborted" in broken_rule(silent, facts, Answering(T0, T0))
    said = replace(silent, caveat="longer ones are aborted")
    assert broken_rule(said, facts, Answering(T0, T0)) is None
    assert "below the least sensible value" in broken_rule(replace(said, proposed=0), facts, Answering(T0, T0))


def test_one_setting_gets_one_value_across_the_whole_report():
    t = Thresholds({s.name: [Setting(s.default, s.default_source)] for s in SETTINGS.values()})
    vetting = Vetting(NodeFacts(t, "7.0.12", 32000, {}))
    now = Current(5.0, "%", "WiredTiger default", "default")
    first, second = (
        Recommendation("set_setting", "Lower it", setting="eviction_dirty_target", current=now, proposed=p) for p in (2, 1)
    )
    assert vetting.vet([first], Answering(T0, T0)) == ([first], [])
    kept, withheld = vetting.vet([second, first], Answering(T0, T0))  # another incident, later in the report
    assert kept == [first] and withheld[0].recommendation == second and "proposed for this node already" in withheld[0].reason


def test_a_node_living_at_its_raised_triggers_is_not_told_to_return_to_the_defaults(tmp_path):
    # eviction_trigger=97, eviction_dirty_trigger=25, and the node runs at 96 % full, 23 % dirty all day: 95/20 would
    # have application threads evicting all day. Two minutes past the fill trigger make an incident.
    def plan(s):
        over = 600 <= s < 720
        return Tick(
            cache_fill=0.985 if over else 0.96,
            dirty=0.23,
            app_evicted_pages=400 if over else 0,
            app_wait_us=300_000 if over else 0,
        )

    config = Config(config_string="eviction_trigger=97,eviction_dirty_trigger=25")
    write_ftdc(tmp_path / "diagnostic.data", config, T0, 1800, plan)
    result = quietly(analysis.analyze, tmp_path / "diagnostic.data")
    assert result.thresholds.value("eviction_trigger") == 97 and result.incidents
    proposals = {(r.setting, r.proposed) for i in result.incidents for r in i.recommendations if r.setting}
    assert ("eviction_trigger", 95) not in proposals and ("eviction_dirty_trigger", 20) not in proposals
    withheld = [
        w
        for i in result.incidents
        for w in i.withheld
        if w.recommendation.setting in ("eviction_trigger", "eviction_dirty_trigger")
    ]
    assert withheld and all("runs at most of the time" in w.reason for w in withheld)
    assert advice_problems(result) == []


def test_dirty_data_past_its_trigger_is_first_answered_by_writing_it_out_not_by_more_cache(tmp_path):
    # Fill and dirty data both past their triggers for five minutes under a write load: the mechanism is dirty data.
    def plan(s):
        over = 600 <= s < 900
        return Tick(
            cache_fill=0.97 if over else 0.8,
            dirty=0.26 if over else 0.03,
            app_evicted_pages=300 if over else 0,
            app_wait_us=200_000 if over else 0,
        )

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 1500, plan)
    result = quietly(analysis.analyze, tmp_path / "diagnostic.data")
    [cache] = [f for f in result.findings if f.kind == "cache_pressure" and f.severity != "info"]
    assert {"fill", "dirty"} <= set(cache.evidence["breaches"])
    assert cache.recommendations[0].action != "resize" and any(r.action == "resize" for r in cache.recommendations)
    assert advice_problems(result) == []


def test_max_time_ms_on_a_multi_document_write_says_it_stays_partly_applied():
    from analysis.findings.culprits import recommendations
    from analysis.findings.finding import Culprit

    run = {
        "ts": T0,
        "started": T0 - dt.timedelta(seconds=90),
        "duration_ms": 90_000,
        "ns": "shop.orders",
        "command": "update",
        "op_type": "command",
        "write_statement": False,
        "plan_summary": "COLLSCAN",
        "plan_kind": "COLLSCAN",
        "shape": "s",
    }
    # The shape usually runs 10 s; the 90 s run is the one a limit stops.
    ops = slow_ops([run, *({**run, "ts": T0 + dt.timedelta(minutes=n), "duration_ms": 10_000} for n in range(1, 5))])
    culprit = Culprit(
        "shop.orders",
        "COLLSCAN",
        "s",
        None,
        1,
        90.0,
        1.0,
        90_000,
        '{"update": "orders", "updates": [{"q": {"a": 1}}]}',
        collscan=True,
        command="update",
    )
    [limit] = [r for r in recommendations(culprit, ops, replica_set=False) if r.action == "add_max_time_ms"]
    assert limit.caveat and "stay changed" in limit.caveat and "Caveat:" in text(limit)
    # The option is named once, by the command the customer pastes ("Bound it with maxTimeMS: maxTimeMS: 9000" before).
    head = text(limit).split(". ")[0]
    assert head == f"Bound its run time: maxTimeMS: {int(limit.proposed)}" and head.count("maxTimeMS") == 1


def test_recommendations_are_objects_in_the_json_with_their_structure():
    demo = _demo()
    document = json.loads(json.dumps(demo.to_dict()))
    recs = [r for i in document["incidents"] for r in i["recommendations"]] + [
        r for f in document["findings"] for r in f["recommendations"]
    ]
    assert recs and all({"text", "action"} <= set(r) for r in recs)
    settings = [r for r in recs if r["setting"]]
    assert all({"value", "unit", "source", "origin"} <= set(r["current"]) and r["proposed"] is not None for r in settings)


# --- issue 39 §2: advice that fits this node, one regression test per defect -------------------------------


def _facts(version: str = "7.0.12", member: bool = True, **values) -> NodeFacts:
    """A node at the published defaults but for `values` ({name: (value, source)}); a member records itself the primary
    through the hour from T0."""
    timeline = {s.name: [Setting(s.default, s.default_source)] for s in SETTINGS.values()}
    timeline |= {name: [Setting(value, source)] for name, (value, source) in values.items()}
    states = _states([1.0, 1.0], [0, 3600]) if member else None
    return NodeFacts(Thresholds(timeline), version, 32000, {}, member, states)


def _states(states: list[float], seconds: list[int]) -> pl.DataFrame:
    """A member's recorded states (1 primary, 2 secondary) at T0 + each of `seconds`."""
    return pl.DataFrame({"start": [T0 + dt.timedelta(seconds=s) for s in seconds], "repl_state": states}).with_columns(
        pl.col("start").cast(pl.Datetime("ms", "UTC"))
    )


def _demo():
    [demo], _ = analyzed_nodes("demo")
    return demo


def _all_advice(result):
    from samples.advice_rules import made

    return [rec for rec, *_ in made(result)]


def test_a_standalone_is_never_told_to_read_from_a_secondary_build_one_member_at_a_time_or_step_down():
    reads = Recommendation("read_from_secondaries", "Run this find on a secondary", topology="primary")
    rolling = Recommendation("change_workload", "Build indexes one member at a time", topology="member")
    for rec in (reads, rolling):
        assert "standalone" in broken_rule(rec, _facts(member=False), Answering(T0, T0))
        assert broken_rule(rec, _facts(member=True), Answering(T0, T0)) is None


def test_a_member_that_was_a_secondary_is_not_told_to_move_its_reads_to_a_secondary():
    states = pl.DataFrame({"start": [T0, T0 + dt.timedelta(seconds=60)], "repl_state": [2.0, 2.0]}).with_columns(
        pl.col("start").cast(pl.Datetime("ms", "UTC"))
    )
    facts = replace(_facts(), states=states)
    reads = Recommendation("read_from_secondaries", "Run this find on a secondary", topology="primary")
    assert "was a secondary" in broken_rule(reads, facts, Answering(T0, T0 + dt.timedelta(seconds=60)))
    primary = replace(facts, states=states.with_columns(repl_state=pl.lit(1.0)))
    assert broken_rule(reads, primary, Answering(T0, T0 + dt.timedelta(seconds=60))) is None


def test_an_index_build_on_a_standalone_gets_no_rolling_build(tmp_path):
    # The index-build root cause told every node to build "one member at a time ... after stepping it down".
    from samples.families import Incident, Shape, analyzed, build

    scenario, result = analyzed(
        build, replace(Shape(seed=3), standalone=True), Incident("cache_pressure", 300, 10.0, "fill", 0.5, index_build=True)
    )
    builds = [i for i in result.incidents if i.root_cause.evidence.get("mechanism") == "index_build"]
    assert builds and result.node.replica_set is None
    told = [text(r) for r in _all_advice(result)]
    assert told and not any("one member at a time" in t or "stepping it down" in t or "secondar" in t for t in told)
    assert any("standalone" in w.reason for i in builds for w in i.withheld)
    assert advice_problems(result) == []


def test_on_7_0_a_fixed_pool_is_no_fix_for_a_scan_or_a_storage_engine_bottleneck():
    # The demo (7.0.12, pools unset: probing) was told "write ticket pool not set → 128" in an incident whose root
    # cause is a COLLSCAN, with the cache past its trigger and a 140 s checkpoint.
    demo = _demo()
    assert not [r for r in _all_advice(demo) if r.setting in ("read_tickets", "write_tickets")]
    held = [w for i in demo.incidents for w in i.withheld if w.recommendation.setting == "write_tickets"]
    assert held and all("storage engine kept up" in w.reason for w in held)
    fixed = Recommendation(
        "set_setting",
        "Fix the write pool",
        setting="write_tickets",
        current=Current(None, "count", "not set", "default"),
        proposed=128,
        caveat="probing is turned off",
        assumes="engine_not_bottleneck",
    )
    facts = _facts("8.0.4")
    assert "storage engine kept up" in broken_rule(
        fixed, facts, Answering(T0, T0, frozenset({"ticket_exhaustion", "checkpoint_stall"}))
    )
    assert "root cause is a collection scan" in broken_rule(
        fixed, facts, Answering(T0, T0, frozenset({"ticket_exhaustion"}), "collscan")
    )
    # With the evidence (probing shrank the pool, nothing in the incident shows the engine behind it): made, with its cost.
    assert broken_rule(fixed, facts, Answering(T0, T0, frozenset({"ticket_exhaustion"}))) is None
    assert "must say" in broken_rule(replace(fixed, caveat=None), facts, Answering(T0, T0, frozenset({"ticket_exhaustion"})))
    assert "evidence that probing itself held the node back" in broken_rule(
        replace(fixed, assumes=None), facts, Answering(T0, T0)
    )
    # Before 7.0 the pool is 128 unless set: no probing to speak of.
    assert broken_rule(replace(fixed, assumes=None), _facts("6.0.14"), Answering(T0, T0)) is None


def _pressured_node(tmp_path, config_string: str):
    """Two minutes of cache pressure (fill past 95 %, dirty past 20 %) on a node that usually runs at 85 % and 4 %."""

    def plan(s):
        over = 600 <= s < 720
        return Tick(
            cache_fill=0.97 if over else 0.85,
            dirty=0.23 if over else 0.04,
            app_evicted_pages=400 if over else 0,
            app_wait_us=300_000 if over else 0,
        )

    write_ftdc(tmp_path / "diagnostic.data", Config(config_string=config_string), T0, 1800, plan)
    return quietly(analysis.analyze, tmp_path / "diagnostic.data")


def test_lowered_eviction_targets_are_never_raised_back_during_cache_pressure(tmp_path):
    # eviction_target=75 and eviction_dirty_target=3 so background eviction starts early: told "return them to 80 % and 5 %".
    result = _pressured_node(tmp_path, "eviction_target=75,eviction_dirty_target=3")
    assert result.thresholds.value("eviction_target") == 75 and result.incidents
    advice = _all_advice(result)
    raised = [
        (r.setting, r.proposed)
        for r in advice
        if r.setting in ("eviction_target", "eviction_dirty_target") and r.proposed > r.current.value
    ]
    assert not raised
    held = [
        w
        for i in result.incidents
        for w in i.withheld
        if w.recommendation.setting in ("eviction_target", "eviction_dirty_target")
    ]
    assert held and all("on purpose" in w.reason for w in held)
    # What the configured value trades is said where it is named a cause.
    named = [
        c.summary
        for i in result.incidents
        for c in (i.root_cause, *i.candidates)
        if c.evidence.get("setting") == "eviction_target"
    ]
    assert named and all("background eviction starts earlier" in s for s in named)
    assert advice_problems(result) == []


def test_a_raised_transaction_lifetime_is_never_lowered_and_the_fix_is_in_the_client():
    # A node that raised transactionLifetimeLimitSeconds for long batch transactions was told to return it to 60 s.
    facts = _facts(transaction_lifetime_limit=(3600.0, "getCmdLineOpts.parsed.setParameter.transactionLifetimeLimitSeconds=3600"))
    lower = Recommendation(
        "set_setting",
        "Lower the transaction lifetime back to mongod's default",
        setting="transaction_lifetime_limit",
        current=Current(3600.0, "s", "getCmdLineOpts.parsed.setParameter.transactionLifetimeLimitSeconds=3600", "configured"),
        proposed=60,
        caveat="longer transactions are aborted",
    )
    reason = broken_rule(lower, facts, Answering(T0, T0))
    assert "on purpose" in reason and "aborted" in reason


def test_max_time_ms_is_never_below_the_median_run_and_says_which_runs_it_stops():
    from analysis.advice.recommendation import Runs
    from analysis.findings.culprits import recommendations
    from analysis.findings.finding import Culprit

    # The demo proposed maxTimeMS 7000 for an aggregate whose one run (its median) took 70.4 s.
    demo = _demo()
    limits = [r for r in _all_advice(demo) if r.action == "add_max_time_ms"]
    assert all(r.proposed >= r.runs.median_ms for r in limits)
    assert not any(r.command == "maxTimeMS: 7000" for r in limits)
    # An updateMany whose runs take a median 125 s was told 20 s (a tenth of its longest, 200 s): every run killed.
    run = {
        "started": T0,
        "ns": "shop.orders",
        "command": "update",
        "op_type": "command",
        "write_statement": False,
        "plan_summary": "COLLSCAN",
        "plan_kind": "COLLSCAN",
        "shape": "s",
    }
    times = [125_000] * 5 + [200_000]
    ops = slow_ops([{**run, "ts": T0 + dt.timedelta(minutes=n), "duration_ms": ms} for n, ms in enumerate(times)])
    culprit = Culprit(
        "shop.orders",
        "COLLSCAN",
        "s",
        None,
        6,
        900.0,
        1.0,
        200_000,
        '{"update": "orders", "updates": [{"q": {"a": 1}}]}',
        collscan=True,
        command="update",
    )
    assert not [r for r in recommendations(culprit, ops, replica_set=False) if r.action == "add_max_time_ms"]  # 250 s stops none
    twenty = Recommendation(
        "add_max_time_ms",
        "Bound its run time",
        proposed=20_000,
        operation="update",
        caveat="it stays changed",
        runs=Runs(6, 125_000, 200_000, 6),
    )
    assert "below the median run" in broken_rule(twenty, _facts(), Answering(T0, T0))
    # Runaway runs among short ones: the limit stops those, says how many, and what becomes of them.
    ops = slow_ops(
        [{**run, "ts": T0 + dt.timedelta(minutes=n), "duration_ms": ms} for n, ms in enumerate([10_000] * 8 + [300_000, 400_000])]
    )
    [limit] = [r for r in recommendations(culprit, ops, replica_set=False) if r.action == "add_max_time_ms"]
    assert limit.proposed == 20_000 and limit.runs.stopped == 2
    assert "stops the 2 that ran longer" in limit.why and "stay changed" in limit.caveat
    assert broken_rule(limit, _facts(), Answering(T0, T0)) is None


def test_no_cache_raise_that_assumes_no_scan_in_an_incident_whose_root_cause_is_a_scan():
    # The demo's incident (root cause a COLLSCAN) carried "raise the cache size ... only if no scan is behind the fill".
    demo = _demo()
    assert demo.incidents[0].root_cause.evidence["mechanism"] == "collscan"
    assert not [r for r in _all_advice(demo) if r.setting == "cache_size"]
    held = [w for w in demo.incidents[0].withheld if w.recommendation.setting == "cache_size"]
    assert held and "root cause is a collection scan" in held[0].reason


def test_only_actions_are_recommendations():
    # "Read this dip with the findings that overlap it" is a way to read the report, not something to do.
    from samples.families import Incident, Shape, analyzed, build

    _, result = analyzed(build, Shape(seed=5), Incident("throughput_dip", 300, 10.0, strength=0.8))
    dips = [f for f in result.findings if f.kind == "throughput_dip"]
    assert dips and not any(r.what.startswith("Read this") for f in dips for r in f.recommendations)
    assert advice_problems(result) == []


def test_the_terminal_shows_a_handful_of_fixes_and_says_how_many_more():
    from rich.console import Console

    from analysis.advice.wording import HANDFUL as SHOWN_RECOMMENDATIONS
    from analysis.outputs.console import incident_details

    demo = _demo()
    incident = demo.incidents[0]
    many = replace(
        incident,
        recommendations=[replace(incident.recommendations[0], what=f"Fix {n}") for n in range(SHOWN_RECOMMENDATIONS + 3)],
    )
    console = Console(width=100, record=True)
    for part in incident_details([many]):
        console.print(part)
    out = console.export_text()
    assert out.count("  → ") == SHOWN_RECOMMENDATIONS == 5 and "+3 more" in out
    assert len(json.loads(json.dumps(demo.to_dict()))["incidents"][0]["recommendations"]) == len(incident.recommendations)
    # The report's formats show the same handful and fold the rest under their count.
    from analysis.outputs.report import html, markdown

    page = html._what_to_do(many.recommendations)
    shown, folded = page.split("<details")
    assert shown.count("<li>") == 5 and "<summary>3 more</summary>" in folded and folded.count("<li>") == 3
    lines = markdown._what_to_do(many.recommendations)
    cut = lines.index("3 more, if those are not enough:")
    assert sum(line.startswith("- ") for line in lines[:cut]) == 5 and sum(line.startswith("- ") for line in lines[cut:]) == 3


@given(st.lists(st.integers(1, 3_600_000), min_size=1, max_size=40))
def test_max_time_ms_never_stops_the_median_run_of_its_shape(durations):
    from analysis.findings.culprits import max_time_ms, runs_stopped

    runs = pl.Series(durations)
    limit = max_time_ms(runs)
    stopped = runs_stopped(runs, limit)
    assert limit >= stopped.median_ms and limit % 1000 == 0
    assert stopped.stopped == sum(d > limit for d in durations) <= len(durations) // 2


# --- issue 39, second round: the support engineer's review of the scenario reports -------------------------------


def _scenario(name: str):
    [result], _ = analyzed_nodes(name)
    return result


def _withheld(result):
    return [w for i in result.incidents for w in i.withheld] + [w for f in result.findings for w in f.withheld]


def test_tickets_held_by_no_logged_operation_get_no_advice_about_those_operations_nor_a_conditional_raise():
    # throughput-dip (7.0.12, pools left to probing at 128, cause undetermined, no slow operation in the log) was told
    # "Raise the 128-ticket write pool only when CPU and disk have headroom", "Find what holds read tickets for long"
    # and "Move analytics reads to a secondary": a condition, and advice about operations nothing shows held the tickets.
    result = _scenario("throughput-dip")
    assert result.incidents and all(i.root_cause.kind == "undetermined" for i in result.incidents)
    told = [text(r) for r in _all_advice(result)]
    assert not [t for t in told if "only when" in t or "read tickets" in t or "secondary" in t]
    # (Moving reads to a secondary is withheld first for the node's unrecorded replica set state.)
    held = [
        w
        for w in _withheld(result)
        if w.recommendation.assumes in ("operations_held", "operations_unnamed") and w.recommendation.topology is None
    ]
    assert held and all("shows none that did" in w.reason for w in held)
    assert advice_problems(result) == []


def test_advice_about_the_operations_that_held_a_resource_needs_them_in_the_log():
    find = Recommendation("change_workload", "Find what holds read tickets for long", assumes="operations_unnamed")
    move = Recommendation(
        "read_from_secondaries", "Move analytics reads to a secondary", topology="primary", assumes="operations_held"
    )
    for rec in (find, move):
        assert "shows none that did" in broken_rule(rec, _facts(), Answering(T0, T0, held=False))
        assert broken_rule(rec, _facts(), Answering(T0, T0, held=True)) is None
    # Where the log names the operations, the advice aimed at them replaces "find what holds them".
    assert "names the operations" in broken_rule(find, _facts(), Answering(T0, T0, held=True, named=True))
    assert broken_rule(move, _facts(), Answering(T0, T0, held=True, named=True)) is None


def test_one_recommendation_per_action_per_incident():
    # read-tickets-4.2 said "Run this find on a secondary ..." and again "Move analytics reads to a secondary ..."; its
    # node records no replica set state, so neither is made now (each withheld once, for one reason or the other).
    result = _scenario("read-tickets-4.2")
    for incident in result.incidents:
        assert not [r for r in incident.recommendations if r.action == "read_from_secondaries"]
        assert not [r for r in incident.recommendations if r.what.startswith("Find what holds")]
    copies = [w for w in _withheld(result) if w.recommendation.action == "read_from_secondaries"]
    reasons = ("one recommendation per action", "did not record its replica set state")
    assert copies and all(any(r in w.reason for r in reasons) for w in copies)
    # Alone, without the aimed one, the general advice stands.
    general = Recommendation("read_from_secondaries", "Move analytics reads to a secondary", topology="primary")
    aimed = replace(general, what="Run this find on a secondary", target="shop.events", operation="find")
    kept, withheld = Vetting(_facts()).vet([aimed, general], Answering(T0, T0))
    assert kept == [aimed] and "shop.events" in withheld[0].reason
    assert Vetting(_facts()).vet([general], Answering(T0, T0))[0] == [general]
    # A kind of action holds different changes: building an index off-hours leaves finding an open transaction standing.
    build = Recommendation("change_workload", "Build indexes on shop.orders outside the busy hours", target="shop.orders")
    end_it = Recommendation("change_workload", "Find the open transaction or cursor and end it")
    assert Vetting(_facts()).vet([build, end_it], Answering(T0, T0))[0] == [build, end_it]
    assert advice_problems(result) == []


def test_no_advice_to_check_the_disk_during_checkpoints():
    # "Check the disk during checkpoints (utilisation, wait per request)" is no action, and the disk panel showed ≤ 5 ms.
    for result in (_scenario("checkpoint-stall"), _scenario("dirty-cache-checkpoints-8.0"), _demo()):
        assert not [r for r in _all_advice(result) if r.what.startswith("Check the disk")]
        assert advice_problems(result) == []


def test_checkpoints_that_ran_back_to_back_are_not_told_to_run_more_often():
    # dirty-cache-checkpoints-8.0: checkpoints took 100 % of the window and the first fix was "syncdelay 60 s → 30 s".
    # (Neither is checkpoint-stall, whose checkpoints left room between them: at the default no shorter syncdelay is
    # proposed at all, below.)
    for name in ("dirty-cache-checkpoints-8.0", "checkpoint-stall"):
        result = _scenario(name)
        assert not [r for r in _all_advice(result) if r.setting == "checkpoint_interval"], name
        assert advice_problems(result) == []


def test_the_interval_is_withheld_from_the_share_the_checkpoints_ran():
    from analysis.series.checkpoints import Checkpoint, by_window

    # A node that raised syncdelay to 120 s, told to go back to the default (the only shorter value ever proposed).
    shorter = Recommendation(
        "set_setting",
        "Checkpoint more often so each one writes less",
        setting="checkpoint_interval",
        current=Current(120.0, "s", "getCmdLineOpts.storage.syncPeriodSecs=120", "configured"),
        proposed=60,
    )
    end = T0 + dt.timedelta(seconds=100)

    def ran(seconds: float) -> NodeFacts:
        return replace(
            _facts(checkpoint_interval=(120.0, "getCmdLineOpts.storage.syncPeriodSecs=120")),
            checkpoints=by_window([Checkpoint(T0, T0 + dt.timedelta(seconds=seconds), "ftdc")]),
        )

    assert "already ran 60 % of it" in broken_rule(shorter, ran(60), Answering(T0, end))
    assert broken_rule(shorter, ran(40), Answering(T0, end)) is None


def test_a_lagging_member_whose_files_are_in_the_report_is_not_told_to_be_read_and_a_primary_that_stepped_down_keeps_its_reads():
    # The replica set's report told "Look at the lagging member's own FTDC" with rs1-c's FTDC in it, and rs1-a (which
    # lost the primary in the window) "Run this aggregate on a secondary".
    members = sorted(m for m in (SCENARIOS / "replica-set").iterdir() if m.is_dir())
    nodes = quietly(analysis.analyze_nodes, [m / "diagnostic.data" for m in members], [m / "mongod.log" for m in members])
    everything = [r for a in nodes.nodes for r in _all_advice(a)]
    everything += [r for f in nodes.cross_node for r in f.recommendations]
    everything += [r for i in nodes.incidents for r in i.recommendations]
    assert any("X" in i for a in nodes.nodes for incident in a.incidents for i in incident.finding_ids)
    assert not [r for r in everything if r.what.startswith("Look at the lagging member's own FTDC")]
    [rs1a] = [a for a in nodes.nodes if a.node.address.startswith("rs1-a")]
    assert not [r for r in _all_advice(rs1a) if r.action == "read_from_secondaries"]
    held = [w for w in _withheld(rs1a) if w.recommendation.action == "read_from_secondaries"]
    assert held and all("became a secondary" in w.reason for w in held)
    for result in nodes.nodes:
        assert advice_problems(result) == []


def test_a_disk_busy_beyond_mongods_own_io_is_not_answered_by_reducing_mongods_load():
    # disk-saturation (a backup) and rs1-c (a secondary applying the oplog) were told "Reduce what the node writes or
    # reads at once": mongod's own reads and writes were a third of the device's throughput.
    from analysis.findings.detectors.disk_saturation import Load, _advice

    rs1c = quietly(
        analysis.analyze,
        SCENARIOS / "replica-set" / "node3" / "diagnostic.data",
        SCENARIOS / "replica-set" / "node3" / "mongod.log",
    )
    for result in (_scenario("disk-saturation"), rs1c):
        disks = [f for f in result.findings if f.kind == "disk_saturation"]
        assert disks and not [r for f in disks for r in f.recommendations if r.action == "batch_writes"]
        assert advice_problems(result) == []

    # mongod's own I/O most of the device's: doing less at once is advised, with the share; unknown: it is not (issue 39
    # §3: the journal's writes are mongod's, and more IOPS only for a volume near saturation in its usual hours).
    def io(read, written, journal):
        return {
            "device_read_mb_per_s": 40.0,
            "device_write_mb_per_s": 60.0,
            "mongod_read_mb_per_s": read,
            "mongod_write_mb_per_s": written,
            "checkpoint_write_mb_per_s": 0.0,
            "journal_write_mb_per_s": journal,
        }

    mostly = _advice(Load(io(20.0, 50.0, 10.0), 100.0, 20.0, 25.0), 50.0, "from 01:00:00 to 01:05:00 UTC")
    assert [r.action for r in mostly] == ["batch_writes"] and "80 MB/s of the device's 100 MB/s" in mostly[0].why
    assert [r.action for r in _advice(Load(io(20.0, 5.0, 5.0), 100.0, 20.0, 25.0), 50.0, "")] == ["investigate"]
    assert [r.action for r in _advice(Load(io(None, None, None), 100.0, 20.0, 85.0), 50.0, "")] == ["investigate", "resize"]


# --- syncdelay is never proposed below mongod's default (issue 39 §2) ---------------------------------------------------


def test_the_validator_refuses_a_syncdelay_below_the_default_and_says_why():
    # "Checkpoint more often so each one writes less: syncdelay 60 s → 30 s": MongoDB keeps syncPeriodSecs at its
    # default, and SERVER-75162 reports that a shorter syncdelay set at runtime does not change how often recent
    # versions checkpoint. Below the default is refused from any value; back to the default from a raised one is not.
    def proposal(now: float, proposed: float) -> Recommendation:
        return Recommendation(
            "set_setting",
            "Checkpoint more often so each one writes less",
            setting="checkpoint_interval",
            current=Current(now, "s", f"getCmdLineOpts.storage.syncPeriodSecs={now:g}", "configured"),
            proposed=proposed,
        )

    for now, proposed in ((60.0, 30), (120.0, 45), (300.0, 59), (30.0, 15)):
        facts = _facts(checkpoint_interval=(now, f"getCmdLineOpts.storage.syncPeriodSecs={now:g}"))
        reason = broken_rule(proposal(now, proposed), facts, Answering(T0, T0))
        assert reason is not None and "SERVER-75162" in reason and "default of 60 s" in reason, (now, proposed)
    raised = _facts(checkpoint_interval=(120.0, "getCmdLineOpts.storage.syncPeriodSecs=120"))
    assert broken_rule(proposal(120.0, 60), raised, Answering(T0, T0)) is None


@pytest.mark.parametrize("interval", [60.0, 45.0, 90.0, 120.0])
def test_a_checkpoint_stall_is_told_no_syncdelay_below_the_default(tmp_path, interval):
    # Long checkpoints with write latency in them, at the default syncdelay, a shorter one set on purpose and a raised
    # one: no proposal goes below 60 s; a raised one is proposed back to 60 s.
    config = Config(checkpoint_interval=int(interval), sync_period_s=None if interval == 60 else int(interval))

    def plan(s):  # mean write latency 1 ms, 15 ms in every checkpoint (from second 30, one each interval) for half an hour
        stalled = 600 <= s < 2400 and (s - 30) % int(interval) in range(4)
        return Tick(write_latency_us=15_000 if stalled else 1_000, checkpoint_seconds=4)

    write_ftdc(tmp_path / "diagnostic.data", config, T0, 3000, plan)
    result = quietly(analysis.analyze, tmp_path / "diagnostic.data")
    assert any(f.kind == "checkpoint_stall" and f.severity != "info" for f in result.findings)
    syncdelay = [r for r in _all_advice(result) if r.setting == "checkpoint_interval"]
    assert all(r.proposed == 60 for r in syncdelay), [text(r) for r in syncdelay]
    assert bool(syncdelay) == (interval > 60)
    assert advice_problems(result) == []


@given(st.integers(-1200, 1200), st.integers(1, 600), st.sampled_from(["disk_saturation", "cache_pressure", "connection_storm"]))
def test_the_network_is_a_lags_suspect_only_where_the_members_storage_kept_up(offset_s, length_s, kind):
    """A replica set's lag finding keeps "check the network" unless the lagging member's own cache, checkpoints or disk
    were in trouble during the lag (then the network is not the suspect: its own incident says what was)."""
    from analysis.findings.detectors.replication import lag_finding
    from analysis.findings.finding import Finding
    from analysis.incidents.vetting import STORAGE_ENGINE_KINDS, vetted_against_member

    lag = lag_finding("rs1-c:27017", "2", T0, T0 + dt.timedelta(minutes=18), 92.0)
    start = T0 + dt.timedelta(seconds=offset_s)
    own = Finding(kind, "warning", start, start + dt.timedelta(seconds=length_s), "its own trouble", "")
    overlaps = start <= lag.end and lag.start <= own.end
    told = vetted_against_member(lag, [own])
    network = [r for r in told.recommendations if "network" in r.what]
    if overlaps and kind in STORAGE_ENGINE_KINDS:
        assert network == [] and any("network" in w.recommendation.what for w in told.withheld)
    else:
        assert network and told == lag
    # Context (info) is no trouble of the member's.
    assert vetted_against_member(lag, [replace(own, severity="info")]) == lag


def test_a_source_said_inside_a_values_parentheses_carries_none_of_its_own():
    # "ran past the 60 s (mongod default (storage.syncPeriodSecs / syncdelay)) checkpoint interval", "now not set (not
    # set (128 before 7.0; …))", "(setParameter storageEngineConcurrentWriteTransactions (wiredTiger… before 7.0))".
    from analysis.advice.wording import current_words
    from analysis.series.thresholds import Setting, described

    for record in SETTINGS.values():
        # (A configuration string's own parentheses, quoted, are the setting's syntax.)
        assert "(" not in record.default_source and "(" not in re.sub(r'"[^"]*"', "", record.how), record.name
        said = [described(record.name, Setting(record.default, record.default_source))]
        said.append(current_words(Current(record.default, record.unit, record.default_source, "assumed")))
        assert all(s.count("(") == 1 and s.endswith(")") for s in said), said


@pytest.mark.parametrize("name", ["demo", "cache-fill-collscan", "read-tickets-4.2"])
def test_a_member_whose_state_was_not_recorded_is_not_told_to_move_its_reads_to_a_secondary(name):
    # cache-fill-collscan, read-tickets-4.2, demo: "Run this aggregate/find on a secondary (readPreference
    # "secondaryPreferred", …) so it does not compete with the primary's workload" on a node of replica set rs0 that
    # recorded no replica set state: it may be the reporting or analytics member already.
    result = _scenario(name) if name != "demo" else _demo()
    assert result.node.replica_set is not None and "repl_state" not in result.context.series.columns
    assert not [r for r in _all_advice(result) if r.action == "read_from_secondaries"]
    held = [w for w in _withheld(result) if w.recommendation.action == "read_from_secondaries"]
    assert held and any("did not record its replica set state" in w.reason for w in held)
    assert advice_problems(result) == []
    # The rule itself: kept for a member that recorded itself the primary in the window, withheld where it recorded
    # nothing there.
    reads = Recommendation("read_from_secondaries", "Run this find on a secondary", topology="primary")
    unknown = replace(_facts(), states=None)
    assert "did not record its replica set state" in broken_rule(reads, unknown, Answering(T0, T0))
    assert broken_rule(reads, _facts(), Answering(T0, T0 + dt.timedelta(seconds=60))) is None
    later = Answering(T0 + dt.timedelta(hours=2), T0 + dt.timedelta(hours=3))
    assert "did not record its replica set state" in broken_rule(reads, _facts(), later)
