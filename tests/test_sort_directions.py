"""Query shapes keep their sort direction (issue 39 §5): `{ts: -1}` and `{ts: 1}` need different index orders on a
compound index, so a shape that wrote both as 1 told the reader the wrong query."""

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ftdc.logs.reader import read_logs
from ftdc.logs.shapes import shape_of_command

FIELDS = st.sampled_from(["ts", "_id", "user", "a.b", "score"])
SORTS = st.dictionaries(FIELDS, st.sampled_from([1, -1, 1.0, -1.0]), min_size=1, max_size=4)


def _line(command: dict, n: int) -> str:
    return json.dumps(
        {
            "t": {"$date": f"2024-06-03T00:00:{n:02d}.005-03:00"},
            "s": "I",
            "c": "COMMAND",
            "id": 51803,
            "ctx": "conn1",
            "msg": "Slow query",
            "attr": {"type": "command", "ns": "shop.events", "command": command, "durationMillis": 150},
        }
    )


def _directions(sort: dict) -> dict:
    return {k: -1 if v < 0 else 1 for k, v in sort.items()}


@given(SORTS)
def test_a_parsed_command_keeps_each_keys_direction(sort):
    shape = orjson.loads(shape_of_command({"find": "events", "filter": {"user": "x"}, "sort": sort}))
    assert shape["sort"] == _directions(sort)


def test_json_log_lines_keep_find_and_pipeline_sort_directions(tmp_path):
    find = {"find": "events", "filter": {"user": "a"}, "sort": {"ts": -1, "_id": 1}, "limit": 10, "$db": "shop"}
    pipeline = {"aggregate": "events", "pipeline": [{"$match": {"user": "b"}}, {"$sort": {"ts": -1}}], "$db": "shop"}
    ascending = {"find": "events", "filter": {"user": "a"}, "sort": {"ts": 1, "_id": 1}, "$db": "shop"}
    log = tmp_path / "mongod.log"
    log.write_text("\n".join(_line(c, n) for n, c in enumerate([find, pipeline, ascending])) + "\n")
    shapes = read_logs(log).slow_ops["shape"].to_list()
    assert shapes == [
        '{"filter":{"user":1},"sort":{"ts":-1,"_id":1}}',
        '{"pipeline":[{"$match":{"user":1}},{"$sort":{"ts":-1}}]}',
        '{"filter":{"user":1},"sort":{"ts":1,"_id":1}}',
    ]
