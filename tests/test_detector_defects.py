"""Regression tests for the detector defects of issue 13 §1, each built from the real
samples where they show it, else from the project's simulator (samples/simulate.py)."""

import datetime as dt
import sys
from pathlib import Path

import polars as pl
import pytest

from ftdc.logs import read_logs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.culprits import causes, rank  # noqa: E402
from samples.simulate import Config, JsonLog, TextLog, Tick, write_ftdc  # noqa: E402

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
        log.line(end - dt.timedelta(milliseconds=len(plans) - n), "WRITE", ctx,
                 f"update shop.orders command: {{ q: {{ status: \"open\", n: {n} }}, u: {{ $set: {{ seen: true }} }}, multi: true, upsert: false }} "
                 f"planSummary: {plan} keysExamined:0 docsExamined:{docs} nMatched:1 nModified:1 numYields:{docs // 1000} "
                 f"locks:{{ Global: {{ acquireCount: {{ r: 1, w: 1 }} }} }} {ms - 5}ms")
    log.line(end, "COMMAND", ctx, "command shop.$cmd command: update { update: \"orders\", ordered: true, $db: \"shop\" } numYields:0 reslen:60 "
             f"locks:{{ Global: {{ acquireCount: {{ r: 3, w: 1 }} }} }} protocol:op_msg {ms}ms")


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
    _text_update_batch(log, T0 + dt.timedelta(seconds=30), "conn41", 9_000,
                       [("IXSCAN { status: 1 }", 10), ("COLLSCAN", 500_000), ("IXSCAN { status: 1 }", 12)])
    log.write(tmp_path / "mongod.log")
    command = _command_rows(read_logs(tmp_path / "mongod.log").slow_ops).row(0, named=True)
    assert command["plan_kind"] == "COLLSCAN"
    assert command["plan_summary"] == "COLLSCAN; also IXSCAN { status: 1 }"
    assert command["docs_examined"] == 500_022


@pytest.mark.parametrize("version", ["6.0.14", "8.0.4"])
@pytest.mark.parametrize("command_ns", ["shop.$cmd", "shop.orders"])
def test_json_update_command_and_write_lines_are_one_collscan_operation(tmp_path, version, command_ns):
    log = JsonLog(Config(version=version, layout=version[:3]))
    end = T0 + dt.timedelta(seconds=30)
    statement = {"q": {"status": "open"}, "u": {"$set": {"seen": True}}, "multi": True, "upsert": False}
    log.slow(end - dt.timedelta(milliseconds=3), "conn77", "shop.orders", statement, "COLLSCAN", 14_990, component="WRITE", op_type="update",
             keys=0, docs=3_000_000, nMatched=10, nModified=10)
    log.line(end, "COMMAND", 51803, "conn77", "Slow query", {
        "type": "command", "ns": command_ns, "appName": "orders-service", "command": {"update": "orders", "ordered": True, "$db": "shop"},
        "numYields": 0, "reslen": 60, "protocol": "op_msg", "durationMillis": 15_000})
    log.write(tmp_path / "mongod.log")
    slow = read_logs(tmp_path / "mongod.log").slow_ops
    culprits = rank(slow, T0, end + dt.timedelta(seconds=5))
    assert [(c.ns, c.command, c.plan_summary, c.collscan, c.count) for c in culprits] == [("shop.orders", "update", "COLLSCAN", True, 1)]
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
    write_ftdc(folder, Config(layout="8.0-services", version="8.0.4"), t0, 900, lambda s: Tick(missing=s in missing), restarts={600: 5555})
    return folder, analysis.analyze(folder)


def test_overview_and_analysis_agree_on_gaps_and_restarts(restarted_over_midnight):
    from analysis.overview import overview

    folder, result = restarted_over_midnight
    view = overview(folder)
    gaps = [(f.start, f.end) for f in result.findings if f.kind == "ftdc_gap"]
    restarts = [f.end for f in result.findings if f.kind == "restart"]
    assert [(g.start, g.end) for g in view.gaps] == gaps == [(T0.replace(day=4, hour=23, minute=57, second=29), T0.replace(day=4, hour=23, minute=57, second=40)),
                                                             (T0.replace(day=5, hour=0, minute=6, second=39), T0.replace(day=5, hour=0, minute=6, second=45))]
    assert view.restarts == restarts == [dt.datetime(2024, 3, 5, 0, 5, tzinfo=UTC)]
    assert result.overview.gaps == view.gaps and result.overview.restarts == view.restarts


def test_restart_across_midnight_is_dated_and_says_how_long_the_node_was_down(restarted_over_midnight):
    _, result = restarted_over_midnight
    (restart,) = [f for f in result.findings if f.kind == "restart"]
    assert restart.title == "mongod restarted between 2024-03-04 23:58:59 and 2024-03-05 00:05:00, down for at most 6 min 1 s"


def test_context_findings_are_in_time_order(restarted_over_midnight):
    _, result = restarted_over_midnight
    context = [f.start for f in result.findings if f.kind in ("ftdc_gap", "restart")]
    assert len(context) == 3 and context == sorted(context)
