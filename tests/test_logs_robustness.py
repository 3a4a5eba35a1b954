"""Shapes (hypothesis) and bad input: junk, cut lines, truncated gzip never raise."""

import gzip
import json

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from ftdc.logs import read_logs
from ftdc.logs.shapes import shape_of_command, shape_of_command_json

SLOW = (
    '{"t":{"$date":"2024-01-02T03:04:05.678+01:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn7",'
    '"msg":"Slow query","attr":{"type":"command","ns":"db.c","command":%s,"planSummary":"COLLSCAN",'
    '"docsExamined":10,"nreturned":1,"durationMillis":%d}}'
)
EVENT = '{"t":{"$date":"2024-01-02T02:00:00.000Z"},"s":"I","c":"NETWORK","id":22943,"ctx":"listener","msg":"Connection accepted","attr":{"remote":"1.2.3.4:5","connectionCount":3}}'

field_names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)
scalars = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.builds(lambda s: {"$oid": s}, st.text(max_size=4)),
)
filters = st.dictionaries(
    field_names, st.one_of(scalars, st.dictionaries(st.sampled_from(["$gt", "$lt", "$in"]), scalars, min_size=1)), max_size=5
)


def _with_new_values(doc, values):
    if isinstance(doc, dict):
        if len(doc) == 1 and next(iter(doc)).startswith("$") and not isinstance(next(iter(doc.values())), (dict, list)):
            key = next(iter(doc))
            return {key: _with_new_values(doc[key], values)} if key in ("$gt", "$lt", "$in") else doc
        return {k: _with_new_values(v, values) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_with_new_values(v, values) for v in doc]
    return values.draw(scalars)


@given(filters, st.data())
def test_shape_stable_under_value_changes(filter_doc, data):
    other = _with_new_values(filter_doc, data)
    a = shape_of_command_json(json.dumps({"find": "c", "filter": filter_doc}))
    b = shape_of_command_json(json.dumps({"find": "c", "filter": other}))
    assert a == b


@given(filters, filters)
def test_shape_tells_field_sets_apart(first, second):
    a = shape_of_command_json(json.dumps({"find": "c", "filter": first}))
    b = shape_of_command_json(json.dumps({"find": "c", "filter": second}))
    if set(first) != set(second):
        assert a != b


def test_in_lists_collapse_and_wrappers_are_values():
    assert (
        shape_of_command({"find": "c", "filter": {"a": {"$in": [1, 2, 3]}, "b": {"$oid": "x"}}})
        == '{"filter":{"a":{"$in":1},"b":1}}'
    )
    assert shape_of_command({"find": "c", "filter": {"$or": [{"a": 1}, {"b": 2}]}}) == '{"filter":{"$or":[{"a":1},{"b":1}]}}'


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("junk") / "mongod.log"
    path.write_bytes(EVENT.encode() + b"\n" + blob)
    frames = read_logs(path)
    assert frames.events.height >= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=300))
def test_cut_lines_never_raise(tmp_path_factory, cut):
    line = (SLOW % ('{"find":"c","filter":{"a":1}}', 5)).encode()
    path = tmp_path_factory.mktemp("cut") / "mongod.log"
    path.write_bytes(line + b"\n" + line[:cut] + b"\n" + line + b"\n")
    frames = read_logs(path)
    whole = cut >= len(line)
    assert frames.slow_ops["line"].to_list() == ([1, 2, 3] if whole else [1, 3])
    assert frames.problems["line"].to_list() == ([] if whole else [2])


def test_bad_lines_reported_with_line_numbers(tmp_path):
    lines = [
        SLOW % ('{"find":"c","filter":{"a":1}}', 40),
        "",
        "container prefix: not json",
        '{"t":{"$date":"2024-01-02T03:04:06.000Z"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn1","attr":{"durationMillis":"soon","ns":"db.c"}}',
        "\x00\xff\xfe junk",
        (SLOW % ('{"find":"c","filter":{"a":1}}', 7))[:50],
    ]
    path = tmp_path / "mongod.log"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape"))
    frames = read_logs(path)
    problems = frames.problems
    assert problems["line"].to_list() == [2, 3, 4, 5, 6]
    assert problems["reason"][0] == "blank line"
    assert problems["reason"][2].startswith("unexpected types") and "durationMillis" in problems["reason"][2]
    # The line with one odd attribute keeps the others.
    kept = frames.slow_ops.filter(pl.col("line") == 4).row(0, named=True)
    assert kept["duration_ms"] is None and kept["ns"] == "db.c"
    first = frames.slow_ops.filter(pl.col("line") == 1).row(0, named=True)
    assert first["duration_ms"] == 40 and str(first["started"]) == "2024-01-02 02:04:05.638000+00:00"


def test_truncated_attribute_kept_as_json(tmp_path):
    line = json.loads(SLOW % ('{"find":"c","filter":{"a":"xx"}}', 3))
    line["truncated"] = {"command": {"truncated": {"filter": {"type": "string", "size": 11}}, "omitted": 5}}
    line["size"] = {"command": 8615}
    path = tmp_path / "mongod.log"
    path.write_text(json.dumps(line) + "\n")
    row = read_logs(path).slow_ops.row(0, named=True)
    assert json.loads(row["truncated"])["command"]["omitted"] == 5
    assert json.loads(row["truncated_size"]) == {"command": 8615}


def test_truncated_gzip(tmp_path):
    body = "\n".join(SLOW % ('{"find":"c","filter":{"a":1}}', i) for i in range(2000)).encode() + b"\n"
    data = gzip.compress(body)
    path = tmp_path / "mongod.log.gz"
    path.write_bytes(data[: len(data) // 2])
    frames = read_logs(path)
    assert 0 < frames.slow_ops.height < 2000
    assert frames.problems["reason"].str.contains("gzip").any()


def _read_lines(tmp_path, *lines: str):
    path = tmp_path / "mongod.log"
    path.write_text("\n".join(lines) + "\n")
    return read_logs(path, workers=1)


def _problems(frames) -> list[tuple]:
    return frames.problems.select("line", "reason").rows()


def test_deep_event_attributes_are_dropped_and_reported(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    checkpoint = (
        '{"t":{"$date":"2024-01-02T02:00:00.000Z"},"s":"I","c":"STORAGE","id":22430,"ctx":"x",'
        '"msg":"WiredTiger message","attr":{"message":' + deep + "}}"
    )
    frames = _read_lines(tmp_path, EVENT, EVENT.replace('"1.2.3.4:5"', deep), checkpoint)
    assert frames.events["kind"].to_list() == ["connection_accepted", "connection_accepted", "wiredtiger"]
    assert frames.events["connection_count"].to_list() == [3, None, None]
    assert [line for line, _ in _problems(frames)] == [2, 3]


def test_integers_beyond_int64_in_events_are_dropped_and_reported(tmp_path):
    frames = _read_lines(tmp_path, EVENT.replace('"connectionCount":3', '"connectionCount":18446744073709551615'))
    assert frames.events.select("remote", "connection_count").rows() == [("1.2.3.4:5", None)]
    assert _problems(frames) == [(1, "unexpected types, dropped: attr.connectionCount")]


def test_unreadable_event_attributes_are_reported(tmp_path):
    frames = _read_lines(tmp_path, EVENT.replace('"connectionCount":3', '"connectionCount":1e400'))
    assert frames.events["kind"].to_list() == ["connection_accepted"]
    assert _problems(frames) == [(1, "attributes not read: Number out of range - at `$[...]`")]


def test_unreadable_timestamps_are_no_timestamp(tmp_path):
    garbage = '{"$date":"garbage"}'
    frames = _read_lines(
        tmp_path,
        SLOW % ("{}", 5),
        (SLOW % ("{}", 5)).replace('{"$date":"2024-01-02T03:04:05.678+01:00"}', garbage),
        EVENT.replace('{"$date":"2024-01-02T02:00:00.000Z"}', garbage),
        EVENT,
    )
    assert frames.slow_ops["line"].to_list() == [1] and frames.events["line"].to_list() == [4]
    assert _problems(frames) == [(2, "no timestamp"), (3, "no timestamp")]
    assert frames.slow_ops["ts"].null_count() == frames.events["ts"].null_count() == 0


def test_start_never_after_end(tmp_path):
    frames = _read_lines(tmp_path, SLOW % ("{}", 2**63 - 1), SLOW % ("{}", -5))
    ts, started = frames.slow_ops["ts"], frames.slow_ops["started"]
    # Neither duration is believable (issue 15): dropped and reported, so each starts when it ended.
    assert started.to_list() == ts.to_list() and frames.slow_ops["duration_ms"].to_list() == [None, None]
    assert [r.split(" is ")[1] for r in frames.problems["reason"]] == ["over a year: dropped", "negative: dropped"]
