"""Regression tests for the detector defects of issue 13 §1, each built from the real
samples where they show it, else from the project's simulator (samples/simulate.py)."""

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from analysis.advice.wording import text
from analysis.findings.culprits import causes, rank
from ftdc.logs import read_logs
from ftdc.timeutil import say_window
from samples.simulate import Config, JsonLog, TextLog, Tick, write_ftdc

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 3, 4, 10, 0, tzinfo=UTC)


# -- 1, 9: a write command and its statements are one operation


def _command_rows(slow: pl.DataFrame, command: str = "update") -> pl.DataFrame:
    return slow.filter(~pl.col("write_statement"), pl.col("command") == command)


def test_real_legacy_update_command_takes_its_statement_plan(log_samples):
    # mtools' 4.0.10 log: "WRITE [conn2] update local.myCollection ... planSummary: COLLSCAN ... docsExamined:1"
    # then "COMMAND [conn2] command local.$cmd command: update { update: "myCollection" ... }" without a plan.
    slow = read_logs(log_samples / "legacy-text" / "mongod_4.0.10_slowcheckpoints.log").slow_ops
    command = _command_rows(slow).filter(pl.col("ns") == "local.myCollection").row(0, named=True)
    assert (command["plan_summary"], command["plan_kind"]) == ("COLLSCAN", "COLLSCAN")
    assert command["shape"] == '{"q":{"name":1}}'
    assert command["docs_examined"] == 1 and command["keys_examined"] == 0


def _text_update_batch(log: TextLog, end: dt.datetime, ctx: str, ms: int, plans: list[tuple[str, int]]) -> None:
    """A 4.2 update batch: one WRITE line per statement (each with its plan), then the COMMAND line, without one."""
    for n, (plan, docs) in enumerate(plans):
        log.line(
            end - dt.timedelta(milliseconds=len(plans) - n),
            "WRITE",
            ctx,
            f'update shop.orders command: {{ q: {{ status: "open", n: {n} }}, u: {{ $set: {{ seen: true }} }}, multi: true, upsert: false }} '
            f"planSummary: {plan} keysExamined:0 docsExamined:{docs} nMatched:1 nModified:1 numYields:{docs // 1000} "
            f"locks:{{ Global: {{ acquireCount: {{ r: 1, w: 1 }} }} }} {ms - 5}ms",
        )
    log.line(
        end,
        "COMMAND",
        ctx,
        'command shop.$cmd command: update { update: "orders", ordered: true, $db: "shop" } numYields:0 reslen:60 '
        f"locks:{{ Global: {{ acquireCount: {{ r: 3, w: 1 }} }} }} protocol:op_msg {ms}ms",
    )


def test_legacy_42_update_is_one_collscan_operation(tmp_path):
    log = TextLog(Config(version="4.2.24", layout="4.2"))
    _text_update_batch(log, T0 + dt.timedelta(seconds=30), "conn41", 20_000, [("COLLSCAN", 2_000_000)])
    log.write(tmp_path / "mongod.log")
    slow = read_logs(tmp_path / "mongod.log").slow_ops
    culprits = rank(slow, T0, T0 + dt.timedelta(seconds=40))
    assert len(culprits) == 1
    top = culprits[0]
    assert (top.ns, top.command, top.plan_summary, top.collscan, top.count) == ("shop.orders", "update", "COLLSCAN", True, 1)
    assert top.shape is not None
    assert causes(culprits, 40) == [top]


def test_statements_with_different_plans_give_the_worst_and_list_the_others(tmp_path):
    log = TextLog(Config(version="4.2.24", layout="4.2"))
    _text_update_batch(
        log,
        T0 + dt.timedelta(seconds=30),
        "conn41",
        9_000,
        [("IXSCAN { status: 1 }", 10), ("COLLSCAN", 500_000), ("IXSCAN { status: 1 }", 12)],
    )
    log.write(tmp_path / "mongod.log")
    command = _command_rows(read_logs(tmp_path / "mongod.log").slow_ops).row(0, named=True)
    assert command["plan_kind"] == "COLLSCAN"
    assert command["plan_summary"] == "COLLSCAN; also IXSCAN { status: 1 }"
    assert command["docs_examined"] == 500_022


@pytest.mark.parametrize(
    "first, second", [("IXSCAN { status: 1 }", "IXSCAN { seen: 1 }"), ("IXSCAN { seen: 1 }", "IXSCAN { status: 1 }")]
)
def test_of_statements_as_bad_as_each_other_the_first_logged_is_named_first(tmp_path, first, second):
    log = TextLog(Config(version="4.2.24", layout="4.2"))
    _text_update_batch(log, T0 + dt.timedelta(seconds=30), "conn41", 9_000, [(first, 40), (second, 40)])
    log.write(tmp_path / "mongod.log")
    command = _command_rows(read_logs(tmp_path / "mongod.log").slow_ops).row(0, named=True)
    assert command["plan_summary"] == f"{first}; also {second}"
    assert command["docs_examined"] == 80


@pytest.mark.parametrize("version", ["6.0.14", "7.0.12", "8.0.4"])
@pytest.mark.parametrize("command_ns", ["shop.$cmd", "shop.orders"])
def test_json_update_command_and_write_lines_are_one_collscan_operation(tmp_path, version, command_ns):
    log = JsonLog(Config(version=version, layout=version[:3]))
    end = T0 + dt.timedelta(seconds=30)
    statement = {"q": {"status": "open"}, "u": {"$set": {"seen": True}}, "multi": True, "upsert": False}
    log.slow(
        end - dt.timedelta(milliseconds=3),
        "conn77",
        "shop.orders",
        statement,
        "COLLSCAN",
        14_990,
        component="WRITE",
        op_type="update",
        keys=0,
        docs=3_000_000,
        nMatched=10,
        nModified=10,
    )
    log.line(
        end,
        "COMMAND",
        51803,
        "conn77",
        "Slow query",
        {
            "type": "command",
            "ns": command_ns,
            "appName": "orders-service",
            "command": {"update": "orders", "ordered": True, "$db": "shop"},
            "numYields": 0,
            "reslen": 60,
            "protocol": "op_msg",
            "durationMillis": 15_000,
        },
    )
    log.write(tmp_path / "mongod.log")
    slow = read_logs(tmp_path / "mongod.log").slow_ops
    culprits = rank(slow, T0, end + dt.timedelta(seconds=5))
    assert [(c.ns, c.command, c.plan_summary, c.collscan, c.count) for c in culprits] == [
        ("shop.orders", "update", "COLLSCAN", True, 1)
    ]
    assert causes(culprits, 35) == culprits


# -- 4, 5: one definition of a gap and a restart; times people read right


@pytest.fixture(scope="module")
def restarted_over_midnight(tmp_path_factory):
    """An 8.0 multi-service node (`shard.serverStatus.pid`) restarted across midnight, down about 6 minutes,
    with FTDC gaps of 3 s (under three periods: not a gap), 11 s and 6 s."""
    import analysis

    folder = tmp_path_factory.mktemp("midnight") / "diagnostic.data"
    t0 = dt.datetime(2024, 3, 4, 23, 55, tzinfo=UTC)
    missing = set(range(100, 102)) | set(range(150, 160)) | set(range(240, 600)) | set(range(700, 705))
    write_ftdc(
        folder,
        Config(layout="8.0-services", version="8.0.4"),
        t0,
        900,
        lambda s: Tick(missing=s in missing),
        restarts={600: 5555},
    )
    return folder, analysis.analyze(folder)


def test_overview_and_analysis_agree_on_gaps_and_restarts(restarted_over_midnight):
    from analysis.workbench.overview import overview

    folder, result = restarted_over_midnight
    view = overview(folder)
    gaps = [(f.start, f.end) for f in result.findings if f.kind == "ftdc_gap"]
    restarts = [f.end for f in result.findings if f.kind == "restart"]
    assert (
        [(g.start, g.end) for g in view.gaps]
        == gaps
        == [
            (T0.replace(day=4, hour=23, minute=57, second=29), T0.replace(day=4, hour=23, minute=57, second=40)),
            (T0.replace(day=5, hour=0, minute=6, second=39), T0.replace(day=5, hour=0, minute=6, second=45)),
        ]
    )
    assert view.restarts == restarts == [dt.datetime(2024, 3, 5, 0, 5, tzinfo=UTC)]
    assert result.overview.gaps == view.gaps and result.overview.restarts == view.restarts


def test_restart_across_midnight_is_dated_and_says_how_long_the_node_was_down(restarted_over_midnight):
    _, result = restarted_over_midnight
    (restart,) = [f for f in result.findings if f.kind == "restart"]
    # The window is said once, beside the title, dated at both ends (issue 39 §5: not "between … and …: …" twice).
    assert restart.title == "mongod restarted, down for at most 6 min 1 s"
    assert say_window(restart.start, restart.end) == "2024-03-04 23:58:59 – 2024-03-05 00:05:00 UTC"


def test_real_7_0_restart_over_a_year_is_dated_and_sub_second_gaps_show_milliseconds(ftdc_samples):
    import warnings

    import analysis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(ftdc_samples / "mongod-7.0" / "diagnostic.data")
    (restart,) = [f for f in result.findings if f.kind == "restart"]
    assert restart.title == "mongod restarted, down for at most 449 d 23 h"
    assert say_window(restart.start, restart.end) == "2024-04-16 16:51:29 – 2025-07-10 15:58:49 UTC"
    gaps = [f for f in result.findings if f.kind == "ftdc_gap"]
    assert gaps and [f.start for f in gaps] == sorted(f.start for f in gaps)
    # 100 ms sampling: a 0.6 s gap inside one second reads with its milliseconds, not "19:20:56 to 19:20:56".
    assert "No sample from 2025-07-10 19:20:56.000 to 19:20:56.600 UTC" in gaps[0].explanation


def test_context_findings_are_in_time_order(restarted_over_midnight):
    _, result = restarted_over_midnight
    context = [f.start for f in result.findings if f.kind in ("ftdc_gap", "restart")]
    assert len(context) == 3 and context == sorted(context)


# -- 3, 6, 7: long checkpoints, the interval, advice checked against the current value

EIGHT_ZERO_CHUNK = ("ftdc", "mongod-8.0-chunk", "metric-2025-03-12_15-58-06.0_+00-00-00.bson")


@pytest.fixture(scope="module")
def real_8_0(ftdc_samples):
    import warnings

    import analysis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(ftdc_samples.joinpath(*EIGHT_ZERO_CHUNK[1:]))


def test_real_8_0_node_interval_is_inferred_from_its_cadence(real_8_0):
    # One chunk, no configuration document: the node ran with syncdelay=1 (issue 12), and its
    # checkpoints follow each other about a second apart.
    setting = real_8_0.thresholds.current("checkpoint_interval")
    assert setting.value == 1 and setting.source.startswith("inferred from the checkpoint cadence")


def test_real_8_0_long_checkpoints_are_one_finding_and_never_advise_syncdelay_0(real_8_0):
    stalls = [f for f in real_8_0.findings if f.kind == "checkpoint_stall"]
    assert len(stalls) == 1
    (stall,) = stalls
    assert len(stall.evidence["checkpoints"]) >= 10
    assert stall.start == min(c["start"] for c in stall.evidence["checkpoints"])
    advice = [r for f in real_8_0.findings for r in f.recommendations if r.setting == "checkpoint_interval"]
    assert advice and all(r.proposed == 60 and r.current.value == 1 and "back to the default" in r.what for r in advice)


def test_long_checkpoints_for_minutes_are_one_finding(tmp_path):
    import analysis

    # Checkpoints of 90 s back to back for ten minutes (interval 60 s), writes stalled 3 s in every 20.
    def plan(s):
        inside = 300 <= s < 900
        return Tick(checkpoint_seconds=90 if inside else 2, writes_stalled=inside and s % 20 < 3)

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 1500, plan)
    result = analysis.analyze(tmp_path / "diagnostic.data")
    stalls = [f for f in result.findings if f.kind == "checkpoint_stall"]
    assert len(stalls) == 1, [f.title for f in stalls]
    assert stalls[0].start <= T0 + dt.timedelta(seconds=330) and stalls[0].end >= T0 + dt.timedelta(seconds=880)


def test_interval_without_configuration_is_said_to_be_assumed(tmp_path):
    import analysis

    # A lone chunk with no configuration, checkpointing every 60 s: the default fits, and is said to be assumed.
    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 900, lambda s: Tick(writes_stalled=s % 60 in (31, 32)), metadata=False)
    result = analysis.analyze(tmp_path / "diagnostic.data")
    assert (
        result.thresholds.assumed("checkpoint_interval")
        and result.to_dict()["thresholds"]["checkpoint_interval"]["assumed"] is True
    )
    stalls = [f for f in result.findings if f.kind == "checkpoint_stall"]
    assert stalls and all("assumed" in f.evidence["thresholds"]["checkpoint_interval"] for f in stalls)
    # Advice quoting a setting these files do not record says it is assumed (the evidence above says it of the interval);
    # syncdelay is not proposed at all (never below mongod's default: issue 39 §2; it was "60 s → 30 s", assumed).
    advice = [r for f in stalls for r in f.recommendations if r.setting]
    assert not [r for r in advice if r.setting == "checkpoint_interval"]
    assert all("assumed" in text(r) for r in advice if r.current.origin == "assumed")


def test_interval_with_configuration_is_not_assumed(tmp_path):
    import analysis

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 300, lambda s: Tick())
    assert not analysis.analyze(tmp_path / "diagnostic.data").thresholds.assumed("checkpoint_interval")


def _thresholds(**values):
    from analysis.series.thresholds import Setting, Thresholds
    from analysis.settings import SETTINGS

    return Thresholds({s.name: [Setting(values.get(s.name, s.default), "test")] for s in SETTINGS.values()})


@pytest.mark.parametrize("interval", [0, 1, 5, 9, 10, 15, 19, 20, 30, 60, 90, 120, 300, 86400])
def test_checkpoint_advice_never_disables_checkpoints_nor_repeats_the_value(interval):
    from analysis.advice.changes import DEFAULT_SYNCDELAY_S, LONG_SYNCDELAY_S, checkpoint_more_often

    advice = checkpoint_more_often(_thresholds(checkpoint_interval=interval), "Checkpoint more often")
    if advice is None:
        # Never below mongod's default (MongoDB keeps syncPeriodSecs at its default; SERVER-75162): nothing to propose
        # from 10 s to the default itself.
        assert 10 <= interval <= DEFAULT_SYNCDELAY_S
        return
    assert advice.current.value == interval and advice.proposed == DEFAULT_SYNCDELAY_S
    if interval < 10 or interval >= LONG_SYNCDELAY_S:  # the interval is itself the problem
        assert advice.what.startswith("Set syncdelay back to the default")
    else:  # raised above the default by the node: back to it
        assert DEFAULT_SYNCDELAY_S < interval < LONG_SYNCDELAY_S


@pytest.mark.parametrize(("threads", "target"), [(4, 5), (20, 5), (4, 1), (16, 3)])
def test_eviction_advice_moves_from_the_current_value_within_wiredtiger_bounds(threads, target):
    from analysis.advice.changes import earlier_dirty_eviction, more_eviction_threads

    t = _thresholds(eviction_threads_max=threads, eviction_threads_min=4, eviction_dirty_target=target)
    more = more_eviction_threads(t, "More threads")
    assert (more is None) == (threads >= 20)
    if more:
        assert 4 <= more.proposed <= 20 and more.proposed != threads and more.current.value == threads
    earlier = earlier_dirty_eviction(t, "Earlier")
    assert (earlier is None) == (target <= 1)
    if earlier:
        assert 1 <= earlier.proposed < target and earlier.current.value == target


@pytest.mark.parametrize("idle", [0, 20, 30, 45, 60, 600, 100000])
def test_idle_handle_advice_closes_sooner_or_gives_never_closed_handles_a_lifetime(idle):
    from analysis.advice.changes import sooner_sweep
    from analysis.settings import SETTINGS

    least = SETTINGS["close_idle_time"].minimum
    advice = sooner_sweep(_thresholds(close_idle_time=idle))
    if idle <= least and idle != 0:
        assert advice is None
    else:
        assert advice.proposed > 0 and (idle == 0 or least <= advice.proposed < idle)


@pytest.mark.parametrize(("memory_mb", "raise_it"), [(64_000, True), (14_000, False), (None, True)])
def test_cache_advice_stays_within_the_host_memory(memory_mb, raise_it):
    from analysis.advice.changes import larger_cache
    from analysis.advice.recommendation import Current

    advice = larger_cache(Current(10.0 * 2**30, "bytes", "test", "configured"), 97.0, 80.0, memory_mb)  # 12.1 GB wanted
    assert advice.action == "resize"
    assert (advice.setting == "cache_size") == raise_it
    if raise_it:
        assert advice.proposed == 12.1 * 2**30 and "cacheSizeGB 10.0 GB (test) → 12.1 GB" in text(advice)
    else:
        assert "outgrown" in advice.what and advice.proposed is None


def test_read_pool_already_at_128_is_not_advised_to_be_fixed_at_128(tmp_path):
    import analysis

    # 7.0, throughput probing (no pool size set), the read pool at 128 and readers queued for a minute.
    def plan(s):
        busy = 300 <= s < 360
        return Tick(read_out=128 if busy else 2, read_queue=40 if busy else 0)

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 600, plan)
    result = analysis.analyze(tmp_path / "diagnostic.data")
    (reads,) = [f for f in result.findings if f.kind == "ticket_exhaustion" and f.resource == "read" and f.severity != "info"]
    assert reads.evidence["tickets_total"] == 128
    assert not any(r.setting == "read_tickets" for r in reads.recommendations)


# -- 2: spikes against the node's own baseline and noise


def test_fifteen_fold_mean_latency_at_every_checkpoint_is_a_checkpoint_stall(tmp_path):
    import analysis

    # Mean write latency ~1 ms rising to ~15 ms for 4 s in every checkpoint (every 60 s from second 30) for half an hour.
    def plan(s):
        stalled = 600 <= s < 2400 and s % 60 in range(30, 34)
        return Tick(write_latency_us=15_000 if stalled else 1_000, checkpoint_seconds=4)

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 3000, plan)
    result = analysis.analyze(tmp_path / "diagnostic.data")
    stalls = [f for f in result.findings if f.kind == "checkpoint_stall" and f.severity != "info"]
    assert len(stalls) == 1, [f.title for f in stalls]
    assert abs(stalls[0].start - (T0 + dt.timedelta(seconds=630))) <= dt.timedelta(seconds=5)
    assert abs(stalls[0].end - (T0 + dt.timedelta(seconds=2374))) <= dt.timedelta(seconds=5)
    assert [f.kind for f in result.problems] == ["checkpoint_stall"]


# -- 8: victims are not the cause


def _victim_scenario(folder: Path) -> None:
    """A 7.0 node whose checkpoints (every 60 s, 8 s long) slow writes from 1 ms to 12 ms for half an hour: write
    tickets run out for 7 s in each, and a short COLLSCAN in each spends nearly all its 4 s waiting (locks, disk reads, cache)."""

    def plan(s):
        stalled = 600 <= s < 2400 and s % 60 in range(31, 38)
        return Tick(
            checkpoint_seconds=8,
            write_latency_us=12_000 if stalled else 1_000,
            write_out=128 if stalled else 2,
            write_queue=30 if stalled else 0,
        )

    config = Config()
    run = write_ftdc(folder / "diagnostic.data", config, T0, 3000, plan)
    log = JsonLog(config)
    for minute in range(10, 40):
        end = run.at(minute * 60 + 36)
        log.slow(
            end,
            f"conn{300 + minute}",
            "shop.events",
            {"find": "events", "filter": {"kind": "click"}, "$db": "shop"},
            "COLLSCAN",
            4_000,
            keys=0,
            docs=20_000,
            nreturned=3,
            locks={"Global": {"acquireCount": {"r": 1}, "timeAcquiringMicros": {"r": 1_500_000}}},
            storage={"data": {"bytesRead": 90_000_000, "timeReadingMicros": 2_000_000}, "timeWaitingMicros": {"cache": 200_000}},
        )
    log.write(folder / "mongod.log")


def test_operations_that_mostly_waited_are_not_named_as_the_cause(tmp_path):
    import analysis

    _victim_scenario(tmp_path)
    result = analysis.analyze(tmp_path / "diagnostic.data", tmp_path / "mongod.log")
    stalls = [f for f in result.problems if f.kind == "checkpoint_stall"]
    assert (
        len(stalls) == 1
        and stalls[0].start <= T0 + dt.timedelta(seconds=640)
        and stalls[0].end >= T0 + dt.timedelta(seconds=2370)
    )
    tickets = [f for f in result.problems if f.kind == "ticket_exhaustion"]
    assert tickets  # the tickets did run out: that is real
    assert not [f.title for f in result.problems if "Cause: COLLSCAN" in f.explanation or causes(f.culprits, f.seconds)]
    # A find takes read tickets: it is no culprit of write tickets running out.
    assert not [f.title for f in tickets if f.resource == "write" and f.culprits]
    for culprit in (c for f in result.problems for c in f.culprits):
        assert culprit.held_s < 0.2 * culprit.overlap_s  # 3.7 of every 4 s were waits (locks, disk reads, cache)


def test_a_queue_seen_only_between_samples_is_said_as_its_mean_not_as_none_queued(tmp_path):
    import analysis

    # 7.0 sampled every 10 s: writers queued between samples (the time queued shows them) but never at a sample. Was:
    # "Write tickets exhausted for 1 min: 0 of 128 available; 0 writers queued at peak".
    def plan(s):
        busy = 300 <= s < 370
        return Tick(write_out=128 if busy else 2, write_queue=30 if busy and s % 10 else 0)

    write_ftdc(tmp_path / "diagnostic.data", Config(), T0, 900, plan, period=10)
    result = analysis.analyze(tmp_path / "diagnostic.data")
    [writes] = [f for f in result.findings if f.kind == "ticket_exhaustion" and f.resource == "write" and f.severity != "info"]
    assert "0 writers queued" not in writes.title
    assert "27 writers waiting on average over the worst sampling interval" in writes.title, writes.title
