"""Legacy text logs (2.2-4.2): no slow operation lost, fields, years and offsets."""

import datetime as dt
import time

import polars as pl
import pytest

from ftdc.logs import read_logs

UTC = dt.timezone.utc
VERBS = {"command", "query", "update", "remove", "insert", "getmore"}
STAMP = "2019-06-18T11:59:16.516+0100 I COMMAND  [conn1] "


def is_slow_line(line: str) -> bool:
    """Independent count, by words rather than the decoder's patterns: the text
    after the [context] starts with an operation verb and a namespace, and its
    last word is a number of milliseconds."""
    words = line.partition("] ")[2].split()
    return len(words) >= 3 and words[0] in VERBS and words[-1].endswith("ms") and words[-1][:-2].isdigit()


def lines_of(path) -> list[str]:
    """Lines as the decoder counts them: cut at "\n" only (not at form feeds,
    say, which str.splitlines() also cuts at); no line after a final "\n"."""
    return path.read_text(errors="replace").removesuffix("\n").split("\n")


@pytest.fixture(scope="module")
def legacy(log_samples):
    return log_samples / "legacy-text"


@pytest.fixture(scope="module")
def frames(legacy):
    return read_logs(legacy)


def test_no_slow_operation_lost(legacy, frames):
    counted = {}
    for path in sorted(legacy.glob("*.log")):
        counted[str(path)] = sum(1 for line in lines_of(path) if is_slow_line(line))
    got = dict(frames.slow_ops.group_by("file").len().iter_rows())
    assert {f: n for f, n in counted.items() if n} == got
    assert sum(counted.values()) > 3000


def test_every_line_accounted_for(legacy, frames):
    lines = sum(len(lines_of(p)) for p in legacy.glob("*.log"))
    assert frames.slow_ops.height + frames.events.height + frames.problems.height == lines


def test_42_offset_converted_to_utc(frames):
    # 4.0.10: "2019-06-18T11:59:16.516+0100 I COMMAND  [conn1] command admin.$cmd ... profile ... 0ms"
    row = frames.slow_ops.filter(pl.col("file").str.ends_with("mongod_4.0.10_storagestats.log")).row(0, named=True)
    assert row["ts"] == dt.datetime(2019, 6, 18, 10, 59, 16, 516000, tzinfo=UTC)
    assert (row["component"], row["command"], row["ns"], row["app_name"]) == ("COMMAND", "profile", "admin.$cmd", "MongoDB Shell")
    assert (row["num_yields"], row["reslen"], row["duration_ms"]) == (0, 79, 0)


def test_collscan_query_24(frames):
    # "Wed Mar  5 17:14:57.407 [conn4] query test.docs query: { query: { foo: 33.0 }, orderby: { foo: -1.0 } }
    #  ... nscanned:100000 ... nreturned:1 reslen:68 29ms"
    rows = frames.slow_ops.filter(pl.col("file").str.ends_with("collscans.log"), pl.col("op_type") == "query")
    row = rows.row(0, named=True)
    assert (row["command"], row["ns"], row["duration_ms"], row["keys_examined"], row["nreturned"]) == (
        "find",
        "test.docs",
        29,
        100000,
        1,
    )
    assert row["shape"] == '{"filter":{"foo":1},"sort":{"foo":-1}}'  # orderby { foo: -1.0 }: the direction kept
    assert row["started"] == row["ts"] - dt.timedelta(milliseconds=29)
    assert (row["ts"].month, row["ts"].day, row["ts"].hour) == (3, 5, 17)
    assert dt.date(row["ts"].year, 3, 5).weekday() == 2  # printed "Wed"


def test_write_lines_and_plans_40(frames):
    slow = frames.slow_ops.filter(pl.col("file").str.ends_with("mongod_4.0.10_slowoplogs.log"))
    writes = slow.filter(pl.col("component") == "WRITE")
    # Every statement here is followed by its batch's command line on the same connection.
    assert writes.height > 0 and writes["write_statement"].all()
    assert set(writes["op_type"]) <= {"update", "remove", "insert"}
    update = writes.filter(pl.col("op_type") == "update").row(0, named=True)
    # q: { _id: { id: UUID("..."), uid: BinData(0, ...) } }
    assert update["plan_kind"] == "IDHACK" and update["shape"] == '{"q":{"_id":{"id":1,"uid":1}}}'


def test_year_rollover(frames):
    events = frames.events.filter(pl.col("file").str.ends_with("year_rollover.log"))
    years = events["ts"].dt.year()
    assert years.n_unique() == 2
    first, last = events["ts"][0], events["ts"][-1]
    assert (first.month, first.day) == (12, 30) and last.year == first.year + 1
    assert dt.date(first.year, 12, 30).weekday() == 0  # printed "Mon Dec 30"
    assert events["ts"].is_sorted()


def test_ctime_306_severity(frames):
    row = frames.slow_ops.filter(pl.col("file").str.ends_with("mongod_306_ctime.log")).row(0, named=True)
    assert (row["component"], row["op_type"], row["command"], row["duration_ms"]) == ("QUERY", "getmore", "getMore", 220)
    assert (row["num_yields"], row["nreturned"]) == (202, 10024)


def test_events_typed(frames):
    events = frames.events
    accepted = events.filter(pl.col("kind") == "connection_accepted")
    assert accepted.height > 0 and accepted["connection_count"].null_count() == 0
    checkpoints = events.filter(pl.col("kind") == "checkpoint", pl.col("duration_ms").is_not_null())
    assert sorted(checkpoints["duration_ms"].to_list())[:2] == [7000, 8000]
    assert events.filter(pl.col("kind") == "startup")["node"].drop_nulls().len() > 0


def _read_lines(tmp_path, *lines: str):
    path = tmp_path / "mongod.log"
    path.write_text("\n".join(lines) + "\n")
    return read_logs(path, workers=1)


@pytest.mark.parametrize("depth", [300, 2000])
def test_deep_filter_has_no_shape_and_is_reported(tmp_path, depth):
    deep = "{ a: " * depth + "1" + " }" * depth
    frames = _read_lines(
        tmp_path,
        STAMP + 'command db.c command: find { find: "c", filter: { a: 1 } } 3ms',
        STAMP + f'command db.c command: find {{ find: "c", filter: {deep} }} planSummary: COLLSCAN 5ms',
    )
    assert frames.slow_ops["shape"].to_list() == ['{"filter":{"a":1}}', None]
    assert frames.slow_ops["duration_ms"].to_list() == [3, 5]
    assert frames.problems.select("line", "reason").rows() == [(2, "no shape: document nested deeper than 100 levels")]


@pytest.mark.parametrize(
    "text",
    [
        "query db.c " + "1" * 1_000_000,
        "query db.c " + "1" * 1_000_000 + "ms",
        "query db.c x" + " " * 1_000_000,
        "query db.c x" + " " * 1_000_000 + "x 5ms",
    ],
)
def test_pathological_lines_decode_in_linear_time(tmp_path, text):
    # Backtracking regexes took 30 s on 80 KB of these. Measured against an ordinary line of the
    # same length read in the same way, so that a loaded machine slows both sides alike.
    (tmp_path / "plain").mkdir()
    started = time.perf_counter()
    _read_lines(tmp_path / "plain", STAMP + "query db.c query: { a: " + "x" * len(text) + " } 5ms")
    plain = time.perf_counter() - started
    started = time.perf_counter()
    frames = _read_lines(tmp_path, STAMP + text)
    assert time.perf_counter() - started < max(0.5, 20 * plain)
    assert frames.slow_ops.height + frames.events.height == 1


def test_numbers_beyond_int64_are_dropped_and_reported(tmp_path):
    frames = _read_lines(tmp_path, STAMP + f"query db.c keysExamined:{'9' * 5000} nreturned:1 {'9' * 20}ms")
    row = frames.slow_ops.row(0, named=True)
    assert (row["keys_examined"], row["nreturned"], row["duration_ms"]) == (None, 1, None)
    assert frames.problems["reason"].to_list() == ["beyond int64, dropped: duration_ms, keys_examined"]


def test_lines_end_at_newline_only(tmp_path):
    # A form feed or U+2028 inside a string is not a line break.
    frames = _read_lines(
        tmp_path, STAMP + 'query db.c query: { a: "x\x0cy\u2028z" } 7ms', STAMP + "query db.c query: { b: 1 } 8ms"
    )
    assert frames.slow_ops.select("line", "duration_ms").rows() == [(1, 7), (2, 8)]
    assert frames.problems.is_empty()


def test_unreadable_stamp_is_no_timestamp(tmp_path):
    frames = _read_lines(
        tmp_path,
        STAMP + "query db.c query: { a: 1 } 7ms",
        "2019-13-18T11:59:16.516+0100 I COMMAND  [conn1] query db.c query: { a: 1 } 8ms",
        "2019-02-30T11:59:16.516+0100 I NETWORK  [conn1] end connection 1.2.3.4:5 (1 connection now open)",
    )
    assert frames.slow_ops["line"].to_list() == [1] and frames.events.is_empty()
    assert frames.problems.select("line", "reason").rows() == [(2, "no timestamp"), (3, "no timestamp")]


def test_write_commands_against_cmd_name_their_collection(tmp_path):
    """A 4.2 text log writes an update command as `command shop.$cmd command: update { update: "orders", ... }`."""
    path = tmp_path / "mongod.log"
    path.write_text(
        '2023-03-21T09:40:00.000+0000 I  COMMAND  [conn7] command shop.$cmd command: update { update: "orders", updates: [ { q: { sku: "A-1" }, '
        'u: { $inc: { stock: -1 } } } ], ordered: true, $db: "shop" } numYields:0 reslen:45 protocol:op_msg 25000ms\n'
        '2023-03-21T09:40:01.000+0000 I  COMMAND  [conn8] command admin.$cmd command: getLog { getLog: "startupWarnings", $db: "admin" } '
        "numYields:0 reslen:45 protocol:op_msg 150ms\n"
    )
    slow = read_logs(path).slow_ops
    assert slow.select("ns", "db", "coll", "command").rows() == [
        ("shop.orders", "shop", "orders", "update"),
        ("admin.$cmd", "admin", "$cmd", "getLog"),
    ]


def test_the_transaction_reapers_aborts_are_typed_in_both_formats(tmp_path):
    # mongod's reaper aborting a transaction past transactionLifetimeLimitSeconds: id 20707 (4.4+), the same words in 4.2's text.
    import datetime as dt

    from samples.simulate import Config, JsonLog, TextLog

    at = dt.datetime(2024, 5, 6, 9, 0, tzinfo=dt.timezone.utc)
    for name, log in (("json.log", JsonLog(Config())), ("text.log", TextLog(Config(version="4.2.24", layout="4.2")))):
        log.transaction_expired(at, "0b5ae9c6-0d1c-4d6f-8f4e-2a3b4c5d6e7f", 12)
        log.write(tmp_path / name)
        events = read_logs(tmp_path / name, workers=1).events
        assert events["kind"].to_list() == ["transaction_expired"] and events["ts"].to_list() == [at]
