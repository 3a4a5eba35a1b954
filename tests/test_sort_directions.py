"""Query shapes keep their sort direction (issue 39 §5): `{ts: -1}` and `{ts: 1}` need different index orders on a
compound index, so a shape that wrote both as 1 told the reader the wrong query."""

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.log_shapes import shapes_of

FIELDS = st.sampled_from(["ts", "_id", "user", "a.b", "score"])
SORTS = st.dictionaries(FIELDS, st.sampled_from([1, -1, 1.0, -1.0]), min_size=1, max_size=4)


def _directions(sort: dict) -> dict:
    return {k: -1 if v < 0 else 1 for k, v in sort.items()}


@settings(deadline=None)
@given(SORTS)
def test_a_commands_shape_keeps_each_keys_direction(sort):
    [shape] = map(orjson.loads, shapes_of({"find": "events", "filter": {"user": "x"}, "sort": sort}))
    assert shape["sort"] == _directions(sort)


def test_json_log_lines_keep_find_and_pipeline_sort_directions():
    find = {"find": "events", "filter": {"user": "a"}, "sort": {"ts": -1, "_id": 1}, "limit": 10, "$db": "shop"}
    pipeline = {"aggregate": "events", "pipeline": [{"$match": {"user": "b"}}, {"$sort": {"ts": -1}}], "$db": "shop"}
    ascending = {"find": "events", "filter": {"user": "a"}, "sort": {"ts": 1, "_id": 1}, "$db": "shop"}
    assert shapes_of(find, pipeline, ascending) == [
        '{"filter":{"user":1},"sort":{"ts":-1,"_id":1}}',
        '{"pipeline":[{"$match":{"user":1}},{"$sort":{"ts":-1}}]}',
        '{"filter":{"user":1},"sort":{"ts":1,"_id":1}}',
    ]
