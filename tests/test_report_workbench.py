"""Issue 20's workbench, on the real samples: the slow-operation table is summarize_queries' (counts and
percentiles), each system panel's series is the FTDC metric it names, and the configuration audit
reads each item from nodes that have it and nodes that do not."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import analysis
import ftdc
from analysis.observe import read_compact_logs
from analysis.outputs import shape, system
from analysis.outputs.report import build_report, write_report
from analysis.workbench import audit
from analysis.workbench.log_overview import NOT_LOGGED, workload

SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples"
LOGS = {"6.0.11": SHARED / "logs" / "mongod-6.0.11", "8.0.12": SHARED / "logs" / "atlas-8.0.12"}
FTDC_70 = SHARED / "ftdc" / "mongod-7.0" / "diagnostic.data"
FTDC_42 = SHARED / "ftdc" / "mongod-4.2.1" / "diagnostic.data"
KEY = ["ns", "command", "shape", "query_hash"]


@pytest.fixture(scope="module", autouse=True)
def samples():
    if not SHARED.is_dir():
        pytest.skip("../shared/samples is missing") if __import__("os").environ.get("CI") != "true" else pytest.fail(
            "samples missing"
        )


@pytest.mark.parametrize("log", sorted(LOGS))
def test_slow_operation_table_is_summarize_queries(log):
    table = workload(read_compact_logs(LOGS[log])).queries
    full = ftdc.read_logs(LOGS[log]).slow_ops
    expected = ftdc.summarize_queries(full, index_builds=True)  # the whole-period table holds the index builds too
    assert table.height == expected.height > 0
    stats = [
        "count",
        "total_ms",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "keys_examined",
        "docs_examined",
        "nreturned",
        "collscan_share",
    ]
    joined = table.join(expected, on=KEY, how="full", suffix="_expected", nulls_equal=True)
    assert joined.height == expected.height
    for column in stats:
        assert joined[column].equals(joined[f"{column}_expected"], check_names=False), column
    # The clients and 8.0's working time of each shape are its runs' (per-statement WRITE lines counted once).
    runs = ftdc.logs.summary.queries(full, index_builds=True)
    for row in table.iter_rows(named=True):
        mine = runs.filter(
            pl.col("ns").eq_missing(row["ns"]),
            pl.col("command").eq_missing(row["command"]),
            pl.col("shape").eq_missing(row["shape"]),
        )
        if mine.height != row["count"]:
            continue  # grouped by the server's hash (a truncated command): compared above
        assert row["working_ms"] == (mine["working_ms"].sum() or 0)
        assert row["apps"] == ", ".join(sorted(mine["app_name"].drop_nulls().unique()))
        # Minimum beside the percentiles; examined, returned and response size in all and per run; each plan by its
        # runs, as mongod wrote it (the index by its key pattern).
        assert row["min_ms"] == mine["duration_ms"].min()
        assert row["reslen_bytes"] == (mine["reslen"].sum() if mine["reslen"].is_not_null().any() else None)
        for total in ("keys_examined", "docs_examined", "nreturned"):
            assert row[f"{total}_per_run"] == pytest.approx((mine[total].sum() or 0) / mine.height)
        counted = mine["plan_summary"].drop_nulls().value_counts()
        assert {p["plan"]: p["runs"] for p in row["plans"]} == dict(counted.iter_rows())
        assert [p["runs"] for p in row["plans"]] == sorted((p["runs"] for p in row["plans"]), reverse=True)
    if log == "8.0.12":
        assert table["working_runs"].sum() > 0 and table["queued_ms"].sum() > 0  # workingMillis and ticket queueing on 8.0
    else:
        assert table["working_runs"].sum() == 0  # no workingMillis before 8.0: the columns are left out


def test_connections_and_messages_count_the_log_lines():
    logs = read_compact_logs(LOGS["6.0.11"])
    w = workload(logs)
    events = ftdc.read_logs(LOGS["6.0.11"]).events
    assert w.connections["connections"].sum() == events.filter(pl.col("kind") == "client_metadata").height
    assert w.messages["count"].sum() == events.filter(pl.col("severity").is_in(["W", "E", "F"])).height
    access = w.messages.filter(pl.col("id") == 22120).row(0, named=True)
    assert access["count"] == 2 and access["first"] <= access["last"]


@pytest.fixture(scope="module")
def node70():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(FTDC_70)


def _raw(path, names):
    return ftdc.read_ftdc(path, names).sort("start")


def test_system_series_are_the_ftdc_metrics_they_show(node70):
    series = node70.series
    raw = _raw(
        FTDC_70,
        [f"systemMetrics.cpu.{s}_ms" for s in audit_states()]
        + [
            "serverStatus.mem.resident",
            "serverStatus.network.bytesIn",
            "systemMetrics.disks.sda.reads",
            "systemMetrics.disks.sda.writes",
            "serverStatus.opcounters.insert",
            "serverStatus.connections.current",
        ],
    )
    assert raw["start"].to_list() == series["start"].to_list()
    valid = series["valid"].to_numpy()
    dt_s = series["interval_s"].to_numpy()

    def delta(name):
        return np.diff(raw[name].to_numpy().astype(float), prepend=np.nan)

    total = sum(delta(f"systemMetrics.cpu.{s}_ms") for s in audit_states())
    for state in ("user", "system", "iowait", "steal"):
        expected = 100 * delta(f"systemMetrics.cpu.{state}_ms") / total
        got = series[f"cpu_{state}_pct"].to_numpy()
        ok = valid & (total > 0)
        assert np.allclose(got[ok].astype(float), expected[ok], equal_nan=True), state
    assert series["resident_mb"].to_list() == raw["serverStatus.mem.resident"].to_list()
    assert series["connections"].to_list() == raw["serverStatus.connections.current"].to_list()
    ok = valid
    assert np.allclose(
        series["network_in_mb_per_s"].to_numpy()[ok].astype(float), (delta("serverStatus.network.bytesIn") / dt_s / 1e6)[ok]
    )
    iops = (delta("systemMetrics.disks.sda.reads") + delta("systemMetrics.disks.sda.writes")) / dt_s
    assert np.allclose(series["disk_iops.sda"].to_numpy()[ok].astype(float), iops[ok])
    assert np.allclose(
        series["insert_ops_per_s"].to_numpy()[ok].astype(float), (delta("serverStatus.opcounters.insert") / dt_s)[ok]
    )
    # Each panel's summary is its series' own.
    view = system.view(node70, {})
    by_column = {s.column: s for s in view.series}
    assert by_column["resident_mb"].max == float(series["resident_mb"].max())
    assert by_column["cpu_user_pct"].p95 == pytest.approx(float(series["cpu_user_pct"].quantile(0.95, "linear")), abs=1e-3)
    assert "oplog window, hours" in view.missing  # a standalone: no oplog


def audit_states():
    from analysis.series.metrics import CPU_STATES

    return CPU_STATES


def test_oplog_window_is_not_recorded_on_a_node_without_the_oplog_optimes():
    # local.oplog.rs.stats' start and end are when the collector ran, milliseconds apart: the panel drew 0.00 h on every
    # member (issue 39 §4). 4.2.1 records no serverStatus.oplog optimes, so its window is not recorded, and said so.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = analysis.analyze(FTDC_42)
    raw = _raw(FTDC_42, ["local.oplog.rs.stats.start", "local.oplog.rs.stats.end"])
    assert (raw["local.oplog.rs.stats.end"] - raw["local.oplog.rs.stats.start"]).max() < dt.timedelta(seconds=1)
    assert "oplog_window_h" not in node.series.columns
    missing = system.view(node, {}).missing
    assert "oplog window, hours" in missing and "CPU, % of all cores" in missing  # macOS


# -- the configuration audit


def facts(
    cmdline=None,
    host=None,
    build=None,
    ulimits=None,
    warnings_=None,
    cache_gb=None,
    last=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc),
):
    startup = None if warnings_ is None else pl.DataFrame({"msg": warnings_}, schema={"msg": pl.String})
    # Judged as of the data's last day, so these verdicts do not change with the day the suite runs.
    return audit.Facts(cmdline, host, build, ulimits, startup, cache_gb * 2**30 if cache_gb else None, last, last.date())


def items(f) -> dict[str, audit.AuditItem]:
    return {i.key: i for i in audit.audit(f)}


def test_audit_items_with_and_without_each_setting():
    bare = items(facts())
    assert all(not i.recorded and i.severity == "info" and i.has.startswith("not recorded") for i in bare.values())
    assert items(facts(cmdline={}))["access_control"].severity == "warning"
    assert items(facts(cmdline={"security": {"authorization": "enabled"}}))["access_control"].severity == "info"
    assert items(facts(cmdline={"security": {"keyFile": "/k"}}))["access_control"].severity == "info"
    assert items(facts(warnings_=["Access control is not enabled for the database."]))["access_control"].severity == "warning"
    assert items(facts(cmdline={"net": {"bindIp": "0.0.0.0"}}))["bind_address"].severity == "warning"
    assert items(facts(cmdline={"net": {"bindIpAll": True}}))["bind_address"].severity == "warning"
    assert items(facts(cmdline={"net": {"bindIp": "127.0.0.1,10.0.0.5"}}))["bind_address"].severity == "info"
    thp = "/sys/kernel/mm/transparent_hugepage/enabled is 'always'. We suggest setting it to 'never'"
    assert items(facts(warnings_=[thp]))["transparent_huge_pages"].severity == "warning"
    assert items(facts(warnings_=[]))["transparent_huge_pages"].has.startswith("no start-up warning")
    assert not items(facts(warnings_=[]))["swappiness"].recorded  # mongod does not always check it: no warning says nothing
    assert items(facts(host={"os": {"type": "Darwin"}}, warnings_=[]))["transparent_huge_pages"].has == "not applicable (Darwin)"
    mounts = [{"mountPoint": "/", "type": "ext4"}, {"mountPoint": "/data", "type": "xfs"}]
    assert (
        items(facts(cmdline={"storage": {"dbPath": "/data/db"}}, host={"extra": {"mountInfo": mounts}}))["file_system"].severity
        == "info"
    )
    assert (
        items(facts(cmdline={"storage": {"dbPath": "/var/lib/mongo"}}, host={"extra": {"mountInfo": mounts}}))[
            "file_system"
        ].severity
        == "warning"
    )
    assert items(facts(host={"system": {"numaEnabled": True, "numNumaNodes": 2}}))["numa"].severity == "warning"
    assert items(facts(host={"system": {"numaEnabled": False}}))["numa"].severity == "info"
    low = items(facts(ulimits={"fileDescriptors": {"soft": 1024, "hard": 4096}, "processes": {"soft": 64000, "hard": 64000}}))[
        "limits"
    ]
    assert low.severity == "warning" and "open files 1024" in low.has and low.change.startswith("raise open files to")
    assert items(facts(ulimits={"fileDescriptors": {"soft": 64000}, "processes": {"soft": -1}}))["limits"].severity == "info"
    host = {"system": {"memSizeMB": 16384}}
    assert (
        items(facts(host=host, cmdline={"storage": {"wiredTiger": {"engineConfig": {"cacheSizeGB": 12}}}}))["cache_size"].severity
        == "warning"
    )
    assert items(facts(host=host, cache_gb=7.5))["cache_size"].severity == "info"
    assert items(facts(build={"version": "4.4.29"}))["end_of_life"].severity == "warning"
    assert items(facts(build={"version": "7.0.12"}))["end_of_life"].severity == "info"
    assert (
        items(facts(build={"version": "6.0.11"}, last=dt.datetime(2025, 8, 1, tzinfo=dt.timezone.utc)))["end_of_life"].severity
        == "warning"
    )


def test_audit_on_the_real_nodes(node70):
    found = {i.key: i for i in node70.audit}
    assert found["file_system"].severity == "warning" and found["file_system"].has.startswith("ext4")  # / on ext4 holds /data/db
    assert found["limits"].severity == "warning" and "open files 1024" in found["limits"].has  # FTDC's ulimits
    assert found["access_control"].severity == "warning"  # getCmdLineOpts: mongod --port 27017
    assert found["numa"].has.startswith("NUMA not enabled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node42 = analysis.analyze(FTDC_42)
    found = {i.key: i for i in node42.audit}
    assert found["access_control"].severity == "info" and found["bind_address"].has == "bindIp 127.0.0.1"
    assert not found["file_system"].recorded  # macOS 4.2 records no mountInfo
    # Advice only: the audit never adds a finding or an incident.
    assert all(f.kind not in {i.key for i in node42.audit} for f in node42.findings)


def test_the_json_and_markdown_reports_carry_the_workbench(node70, tmp_path):
    report = build_report([node70])
    write_report(report, tmp_path / "r.json")
    node = json.loads((tmp_path / "r.json").read_text())["nodes"][0]
    assert [a["key"] for a in node["audit"]] == [i.key for i in node70.audit]
    assert node["system"]["series"] and node["slow_operations"] is None  # no log given
    write_report(report, tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    assert "## Configuration audit" in text and "## System panels" in text and "| CPU, % of all cores | user |" in text


def test_crafted_strings_reach_the_page_as_text():
    """Namespaces, shapes, application names, drivers and log messages are the customer's: escaped, never markup."""
    import datetime as dt_

    from analysis.outputs.report import workbench_html
    from ftdc.logs import LogFrames
    from ftdc.logs.schema import EVENTS, PROBLEMS, SLOW_OPS

    evil = "<img src=x onerror=alert(1)>'\""
    t = dt_.datetime(2024, 1, 1, tzinfo=dt_.timezone.utc)
    slow = pl.DataFrame(
        [
            {
                "ts": t,
                "started": t,
                "duration_ms": 5,
                "ns": f"db.{evil}",
                "command": evil,
                "shape": evil,
                "app_name": evil,
                "write_statement": False,
                "op_type": "command",
                "plan_kind": "COLLSCAN",
                "ok": False,
                "err_name": evil,
            }
        ],
        schema=SLOW_OPS,
    )
    events = pl.DataFrame(
        [
            {"ts": t, "kind": "client_metadata", "app_name": evil, "driver": evil},
            {"ts": t, "kind": "other", "severity": "W", "id": 1, "msg": evil},
        ],
        schema=EVENTS,
    )
    w = workload(LogFrames(slow, events, pl.DataFrame(schema=PROBLEMS)))
    page = workbench_html.slow_operations(w, "n") + workbench_html.connections(w, "n") + workbench_html.messages(w, "n")
    assert "<img" not in page and "onerror=alert(1)>'" not in page
    assert (
        page.count("&lt;img src=x onerror=alert(1)&gt;&#x27;&quot;") >= 6
    )  # ns, command, shape, app, failure, client, driver, message


def _demo_reports_with(tmp_path, damage, suffixes=(".html", ".md", ".json")) -> dict:
    """The demo node's reports, its log with one more slow-query line: its first, as `damage` changes it."""
    demo = Path(__file__).resolve().parents[1] / "samples"
    lines = (demo / "mongod.log").read_text().splitlines()
    damaged = json.loads(next(line for line in lines if '"Slow query"' in line))
    damage(damaged)
    log = tmp_path / "mongod.log"
    log.write_text("\n".join([*lines, json.dumps(damaged)]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(demo / "diagnostic.data", log)
    return {suffix: write_report(build_report([result]), tmp_path / f"report{suffix}")[0] for suffix in suffixes}


def test_a_shape_whose_runs_logged_no_duration_renders_in_every_format(tmp_path):
    """Found by the fuzz campaign (bench/campaign.py, logs/report/346): a slow query whose `durationMillis` is no
    number has no percentile, and the HTML report ended in a TypeError formatting it; the JSON called it a number."""
    written = _demo_reports_with(tmp_path, lambda line: line["attr"].update(ns="shop.damaged", durationMillis="x"))
    document = json.loads(written[".json"].read_text())
    shape.check(document)
    [row] = [r for r in document["nodes"][0]["slow_operations"] if r["ns"] == "shop.damaged"]
    assert row["count"] == 1 and row["p50_ms"] is None and row["max_ms"] is None
    assert "shop.damaged" in written[".html"].read_text() and "shop.damaged" in written[".md"].read_text()


def test_a_slow_query_line_whose_attributes_are_no_document_renders_in_every_format(tmp_path):
    """Found by the fuzz campaign (logs/report/385): a "Slow query" line whose `attr` is an array gives a row with no
    command, and the Markdown report ended in a TypeError joining it; every format says the command was not logged."""
    written = _demo_reports_with(tmp_path, lambda line: line.update(attr=[1, "a", {}]))
    shape.check(json.loads(written[".json"].read_text()))
    assert NOT_LOGGED in written[".md"].read_text() and NOT_LOGGED in written[".html"].read_text()


# -- issue 36: slow operations at Hatchet's and mloginfo's standard


@pytest.fixture(scope="module")
def busy():
    """The 7.0 node with the 6.0.11 log (58 shapes), its report in the three formats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(FTDC_70, LOGS["6.0.11"])


@pytest.fixture(scope="module")
def busy_written(busy, tmp_path_factory):
    folder = tmp_path_factory.mktemp("busy")
    report = build_report([busy])
    return report, {suffix: write_report(report, folder / f"r{suffix}")[0] for suffix in (".html", ".md", ".json")}


def test_the_plan_names_its_index_by_key_pattern(busy):
    table = busy.logs and workload(busy.logs).queries
    [find] = table.filter(pl.col("command") == "find", pl.col("shape") == '{"filter":{"email":1}}').iter_rows(named=True)
    assert find["plans"] == [{"plan": "IXSCAN { email: 1 }", "runs": find["count"]}]
    from analysis.workbench.log_overview import plans_text

    assert plans_text(find) == "IXSCAN { email: 1 }"
    # Several plans, or one that not every run logged: each with its runs.
    mixed = {"plans": [{"plan": "COLLSCAN", "runs": 2}, {"plan": "IXSCAN { a: 1 }", "runs": 1}], "count": 3, "failed": 0}
    assert plans_text({**mixed, "command": "find"}) == "COLLSCAN (2 runs); IXSCAN { a: 1 } (1 run)"
    some = {"plans": [{"plan": "IXSCAN { a: 1 }", "runs": 2}], "count": 3, "failed": 0, "command": "find"}
    assert plans_text(some) == "IXSCAN { a: 1 } (2 runs)"
    assert plans_text({"plans": [], "count": 3, "failed": 0, "command": "insert"}) == "none: an insert has no plan"


def test_index_builds_and_other_commands_have_a_shape():
    table = workload(read_compact_logs(LOGS["8.0.12"])).queries
    builds = table.filter(pl.col("command") == "createIndexes")
    assert builds["count"].sum() == 16  # every index build of the log, none of them a query
    shapes = builds["shape"].to_list()
    assert all(shapes) and any('"key":{"_fts":"text","_ftsx":1}' in s for s in shapes)
    # Each index its own row: the log builds 16 indexes, two of them on each of four collections.
    assert builds.height == 16 and builds.select("ns", "shape").n_unique() == 16
    assert builds.filter(pl.col("ns") == "sample_training.grades")["shape"].sort().to_list() == [
        '{"indexes":[{"key":{"class_id":1}}]}',
        '{"indexes":[{"key":{"student_id":1}}]}',
    ]
    commands = table.filter(pl.col("shape").is_null(), pl.col("query_hash").is_null())
    assert commands.height and commands["command_shape"].null_count() == 0


def test_each_index_build_of_a_collection_is_its_own_row_and_a_build_again_joins_it(tmp_path):
    def build(key: dict, name: str, ms: int) -> str:
        command = {"createIndexes": "c", "indexes": [{"v": 2, "key": key, "name": name}], "$db": "db"}
        attr = {"type": "none", "ns": "db.c", "command": command, "durationMillis": ms}
        line = {"t": {"$date": "2025-01-01T00:00:00.000+00:00"}, "s": "I", "c": "STORAGE", "id": 51803}
        return json.dumps({**line, "ctx": "IndexBuildsCoordinatorMongod-0", "msg": "Slow query", "attr": attr})

    log = tmp_path / "mongod.log"
    log.write_text("\n".join([build({"a": 1}, "a_1", 300), build({"b": -1}, "b_-1", 200), build({"a": 1}, "a_1", 100)]) + "\n")
    builds = workload(ftdc.read_logs(log)).queries.filter(pl.col("command") == "createIndexes").sort("total_ms")
    assert builds["count"].to_list() == [1, 2]  # {b: -1} once; {a: 1} built, dropped and built again
    assert builds["shape"].to_list() == ['{"indexes":[{"key":{"b":-1}}]}', '{"indexes":[{"key":{"a":1}}]}']


def test_the_slowest_lines_are_the_logs_own(busy):
    import gzip

    raw = gzip.open(next(LOGS["6.0.11"].glob("*.gz"))).read().split(b"\n")
    table = workload(busy.logs).queries
    runs = ftdc.logs.summary.queries(ftdc.read_logs(LOGS["6.0.11"]).slow_ops, index_builds=True)
    for row in table.iter_rows(named=True):
        slowest = row["slowest"]
        assert 1 <= len(slowest) <= min(3, row["count"])
        assert [r["duration_ms"] for r in slowest] == sorted((r["duration_ms"] for r in slowest), reverse=True)
        assert slowest[0]["duration_ms"] == row["max_ms"]
        for run in slowest:
            assert run["log_line"] == raw[run["line"] - 1].decode()
            assert json.loads(run["log_line"])["attr"]["durationMillis"] == run["duration_ms"]
        mine = runs.filter(
            pl.col("ns").eq_missing(row["ns"]),
            pl.col("command").eq_missing(row["command"]),
            pl.col("shape").eq_missing(row["shape"]),
        )
        if mine.height == row["count"]:
            assert [r["duration_ms"] for r in slowest] == mine["duration_ms"].sort(descending=True).head(len(slowest)).to_list()


def test_over_time_counts_every_slow_operation(busy):
    w = workload(busy.logs)
    assert w.shapes == w.queries.height  # all of them in the table: its counts are the whole log's
    assert w.over_time["operations"].sum() == w.queries["count"].sum()
    assert w.over_time["total_ms"].sum() == w.queries["total_ms"].sum()
    scans = ftdc.logs.summary.queries(busy.logs.slow_ops, index_builds=True).filter(pl.col("plan_kind") == "COLLSCAN")
    assert w.over_time["collscans"].sum() == scans.height > 0
    starts = w.over_time["start"]
    assert starts.is_sorted() and all((b - a).total_seconds() % w.interval_s == 0 for a, b in zip(starts, starts[1:]))


def test_the_three_formats_tell_the_same_story(busy_written):
    """HTML, Markdown and JSON carry the same figures of a shape: min and mean, the plan by its index, examined and
    returned in all and per run, the response size, and the slowest line of the log whole."""
    import html as html_module

    from analysis.workbench.log_overview import size_text

    report, written = busy_written
    document = json.loads(written[".json"].read_text())
    shape.check(document)
    node = document["nodes"][0]
    row = next(r for r in node["slow_operations"] if r["command"] == "find" and r["shape"] == '{"filter":{"email":1}}')
    page, markdown = written[".html"].read_text(), written[".md"].read_text()
    assert row["plans"] == [{"plan": "IXSCAN { email: 1 }", "runs": row["count"]}]
    assert "IXSCAN { email: 1 }" in page and "IXSCAN { email: 1 }" in markdown
    first = row["slowest"][0]["log_line"]
    assert f"<pre class=logline>{html_module.escape(first)}</pre>" in page
    assert first in markdown
    cells = f"| {row['min_ms']:,} | {row['mean_ms']:,.0f} | {row['p50_ms']:,.0f} |"
    assert cells in markdown
    assert f"{row['nreturned']:,} ({row['nreturned_per_run']:,.1f})" in markdown
    assert f"{row['reslen_bytes']:,.0f}" not in markdown and size_text(row["reslen_bytes"]) in markdown
    assert f">{size_text(row['reslen_bytes'])}<span class=per>{size_text(row['reslen_bytes_per_run'])} a run" in page
    assert f"data-v='{float(row['min_ms'])!r}'>{row['min_ms']:,}<" in page
    assert node["slow_operations_over_time"]["intervals"] and "slow operations per 5 s" in page
    assert "-slow-ops.svg)" in markdown
    # Captions in words: no name of the code.
    assert "summarize_queries" not in page and "summarize_queries" not in markdown


def test_a_redacted_report_quotes_no_log_line(busy, tmp_path):
    from analysis.nodes import NodesAnalysis
    from analysis.outputs.redact import Redactor, redact_result
    from analysis.workbench.log_overview import NOT_QUOTED

    redacted = redact_result(NodesAnalysis([busy], []), Redactor())
    w = workload(redacted.nodes[0].logs)
    assert all(run["log_line"] is None for row in w.queries.iter_rows(named=True) for run in row["slowest"])
    path = write_report(build_report(redacted, redacted=True), tmp_path / "r.html")[0]
    page = path.read_text()
    assert NOT_QUOTED in page and '"msg":"Slow query"' not in page and "Slow query" not in page


def test_a_log_line_quoted_in_the_json_report_carries_no_markup(tmp_path):
    """Found by the fuzz campaign (logs/report/182): a slowest line quoted in the JSON report held `<script>` raw.
    The document escapes `<`, `>` and `&` as JSON escapes: the same values when parsed, no markup for a page that
    embeds it."""
    demo = Path(__file__).resolve().parents[1] / "samples"
    lines = (demo / "mongod.log").read_text().splitlines()
    slowest = max((json.loads(line) for line in lines if '"Slow query"' in line), key=lambda d: d["attr"]["durationMillis"])
    slowest["attr"]["comment"] = "<script>alert(1)</script> & more"
    log = tmp_path / "mongod.log"
    log.write_text("\n".join([*lines, json.dumps(slowest)]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(demo / "diagnostic.data", log)
    [path] = write_report(build_report([result]), tmp_path / "report.json")
    text = path.read_text()
    assert "<script>" not in text and "\\u003cscript\\u003e" in text
    quoted = [run["log_line"] for row in json.loads(text)["nodes"][0]["slow_operations"] for run in row.get("slowest") or []]
    assert any("<script>alert(1)</script> & more" in line for line in quoted)


def test_a_crafted_log_line_reaches_the_page_as_text():
    """A slowest line, its plan and its file are the customer's: escaped, their controls shown, never markup."""
    import datetime as dt_

    from analysis.outputs.report import workbench_html
    from ftdc.logs import LogFrames
    from ftdc.logs.schema import EVENTS, PROBLEMS, SLOW_OPS

    evil = "<script>alert(1)</script>\u202e\x1b]0;title\x07'\""
    t = dt_.datetime(2024, 1, 1, tzinfo=dt_.timezone.utc)
    row = {
        "ts": t,
        "started": t,
        "duration_ms": 5,
        "ns": "db.c",
        "command": "find",
        "write_statement": False,
        "op_type": "command",
        "plan_summary": evil,
        "plan_kind": "COLLSCAN",
        "file": f"/x/{evil}",
        "line": 7,
    }
    slow = pl.DataFrame([row], schema=SLOW_OPS).with_columns(line_text=pl.lit(evil))
    w = workload(LogFrames(slow, pl.DataFrame(schema=EVENTS), pl.DataFrame(schema=PROBLEMS)))
    page = workbench_html.slow_operations(w, "n")
    assert "<script>" not in page and "\u202e" not in page and "\x1b" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;\\u202e\\x1b]0;title\\x07&#x27;&quot;") >= 2  # the plan, the line


def test_the_json_of_an_8_0_log_is_the_declared_shape(tmp_path):
    """8.0's ticket queueing is summed to a tenth of a millisecond: a number, not always a whole one (the document
    of the 8.0.12 sample failed its own shape at `queued_ms`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(FTDC_70, LOGS["8.0.12"])
    document = json.loads(write_report(build_report([result]), tmp_path / "r.json")[0].read_text())
    shape.check(document)
    rows = document["nodes"][0]["slow_operations"]
    assert any(not float(r["queued_ms"]).is_integer() for r in rows)


def test_only_the_shapes_of_most_total_time_quote_their_lines(monkeypatch):
    """The lines are quoted for the QUOTED_SHAPES shapes of most total time only: a page of 500 shapes stays small."""
    from analysis.workbench import log_overview

    monkeypatch.setattr(log_overview, "QUOTED_SHAPES", 5)
    table = workload(read_compact_logs(LOGS["6.0.11"])).queries
    quoted = [any(run["log_line"] is not None for run in row["slowest"]) for row in table.iter_rows(named=True)]
    assert quoted == [True] * 5 + [False] * (table.height - 5)


@pytest.mark.parametrize("log", sorted(LOGS))
def test_the_analysis_holds_the_logs_text_columns_as_categories_and_its_tables_are_those_of_the_text(log):
    """An analysis holds the slow operations' text columns of a handful of values as categories (a 1 GB log's frames
    190 MB smaller); every table read from them is the one the text gives, with text columns."""
    from dataclasses import replace

    from analysis.observe import CATEGORY_COLUMNS

    frames = read_compact_logs(LOGS[log])
    held = {c: frames.slow_ops.schema[c] for c in CATEGORY_COLUMNS if c in frames.slow_ops.columns}
    assert held and all(dtype == pl.Categorical for dtype in held.values()), held
    text = replace(frames, slow_ops=frames.slow_ops.with_columns(pl.col(pl.Categorical).cast(pl.String)))
    mine, theirs = workload(frames), workload(text)
    assert mine is not None and theirs is not None and mine.queries.height > 0
    assert mine.queries.schema == theirs.queries.schema and pl.String in mine.queries.schema.values()
    assert mine.to_dict() == theirs.to_dict()
    assert frames.slow_ops.estimated_size() < text.slow_ops.estimated_size()
