"""The log's UTC offset is read from the lines around each time quoted (issue 39 §5): a log that spans a daylight-saving
change gives each time in the offset its lines had then, and a damaged first line does not decide the offset. Before,
the offset of the first stamped line was taken for the whole log."""

import datetime as dt
import json
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ftdc.logs import read_logs
from ftdc.logs.sources import stamp_offsets
from ftdc.timeutil import LogOffsets, say_time, say_window

UTC = dt.timezone.utc
CHANGE = dt.datetime(2024, 3, 31, 1, 0, tzinfo=UTC)  # Europe/Berlin: 02:00 +01:00 became 03:00 +02:00
BEFORE, AFTER = dt.timezone(dt.timedelta(hours=1)), dt.timezone(dt.timedelta(hours=2))


def _line(t: dt.datetime, zone: dt.timezone, n: int) -> str:
    local = t.astimezone(zone)
    offset = local.strftime("%z")
    stamp = local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}{offset[:3]}:{offset[3:]}"
    doc = {"t": {"$date": stamp}, "s": "I", "c": "NETWORK", "id": 22943, "ctx": "listener", "msg": "Connection accepted"}
    doc["attr"] = {"remote": f"10.0.0.{n % 250}:5{n % 1000:03d}", "connectionId": n, "connectionCount": 3}
    return json.dumps(doc, separators=(",", ":"))


def _log(path, seconds_before: int, seconds_after: int, every: int = 30) -> None:
    """Lines every `every` s from `seconds_before` before the change to `seconds_after` after it, each in the host's
    local time of its moment."""
    lines = []
    for n, s in enumerate(range(-seconds_before, seconds_after, every)):
        t = CHANGE + dt.timedelta(seconds=s)
        lines.append(_line(t, BEFORE if t < CHANGE else AFTER, n))
    path.write_text("\n".join(lines) + "\n")


def test_a_log_spanning_a_daylight_saving_change_gives_each_time_in_its_own_offset(tmp_path):
    _log(tmp_path / "mongod.log", 3 * 3600, 2 * 3600)
    frames = read_logs(tmp_path / "mongod.log")
    early, late = CHANGE - dt.timedelta(hours=2), CHANGE + dt.timedelta(hours=1)
    assert say_time(early, frames.utc_offsets) == "2024-03-30 23:00:00 UTC, 2024-03-31 00:00:00 in the log's +01:00"
    assert say_time(late, frames.utc_offsets) == "2024-03-31 02:00:00 UTC, 04:00:00 in the log's +02:00"
    # A window across the change says each end in its own offset.
    assert say_window(early, late, frames.utc_offsets).endswith(
        "2024-03-31 00:00:00 in the log's +01:00 – 2024-03-31 04:00:00 in its +02:00"
    )
    assert frames.utc_offset == dt.timedelta(hours=1)  # the offset most of its time is written in


def test_a_damaged_first_line_does_not_decide_the_offset(tmp_path):
    """The cut tail of a line, left at the head of a file, starts with a stamp in another offset: one line, not the log's."""
    good = [
        _line(CHANGE - dt.timedelta(hours=3) + dt.timedelta(seconds=30 * n), dt.timezone(dt.timedelta(hours=-3)), n)
        for n in range(200)
    ]
    (tmp_path / "mongod.log").write_text('2024-03-30T22:00:00.000Z","s":"I","c":"-"}}\n' + "\n".join(good) + "\n")
    frames = read_logs(tmp_path / "mongod.log")
    assert frames.utc_offset == dt.timedelta(hours=-3)
    assert frames.utc_offsets.spans[0][2] == dt.timedelta(hours=-3) and not frames.utc_offsets.changed


@settings(max_examples=20, deadline=None)
@given(
    lines=st.integers(2, 1500),
    change=st.integers(1, 1499),
    offsets=st.tuples(st.integers(-12 * 4, 14 * 4), st.integers(-12 * 4, 14 * 4)).filter(lambda p: p[0] != p[1]),
)
def test_the_change_is_found_between_the_lines_either_side(lines, change, offsets):
    """Halving a block finds exactly the two lines either side of an offset change, however many lines it has."""
    change = min(change, lines - 1)
    zones = [dt.timezone(dt.timedelta(minutes=15 * o)) for o in offsets]
    t0 = dt.datetime(2024, 1, 1, tzinfo=UTC)
    times = [t0 + dt.timedelta(seconds=10 * n) for n in range(lines)]
    block = ("\n".join(_line(t, zones[n >= change], n) for n, t in enumerate(times)) + "\n").encode()
    points = stamp_offsets(block)
    assert (times[change - 1], zones[0].utcoffset(None)) in points
    assert (times[change], zones[1].utcoffset(None)) in points
    assert {o for _, o in points} == {z.utcoffset(None) for z in zones}


def test_a_time_between_spans_takes_the_nearest_lines_offset():
    h = dt.timedelta(hours=1)
    found = LogOffsets(((CHANGE - 3 * h, CHANGE - h, h), (CHANGE + h, CHANGE + 2 * h, 2 * h)))
    assert found.at(CHANGE - 0.9 * h) == h and found.at(CHANGE + 0.9 * h) == 2 * h and found.at(CHANGE - 9 * h) == h


def test_a_nodes_report_gives_its_span_in_the_offsets_its_log_had(tmp_path):
    """A node sampled across the change, its log written in the host's local time (Europe/Berlin): the report's span
    starts in +01:00 and ends in +02:00, where the first line's offset was said for both before."""
    import warnings
    from zoneinfo import ZoneInfo

    import analysis
    from analysis.outputs.document import checked
    from samples.families import Shape, node_log
    from samples.make_scenarios import Healthy
    from samples.simulate import write_ftdc

    shape = Shape(layout="7.0", seed=1)
    config = replace(shape.config(), log_tz=ZoneInfo("Europe/Berlin"))
    start = CHANGE - dt.timedelta(minutes=30)
    run = write_ftdc(tmp_path / "diagnostic.data", config, start, 3600, Healthy(1, 60))
    node_log(shape, config, run).write(tmp_path / "mongod.log")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(tmp_path / "diagnostic.data", tmp_path / "mongod.log")
    assert "00:30:00 – 01:29:59 UTC, 2024-03-31 01:30:00 in the log's +01:00 – 2024-03-31 03:29:59 in its +02:00" in checked(
        result, "node"
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60),
            st.from_regex(rb"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?(Z|[+-]\d\d:?\d\d) I x\Z"),
        ),
        max_size=30,
    )
)
def test_any_damaged_stamp_is_passed_over(lines):
    """Customer files hold anything: a 30th of February, an offset of 99 hours, bytes: never an error, and every offset
    found is one a clock can have."""
    for _, offset in stamp_offsets(b"\n".join(lines)):
        assert abs(offset) <= dt.timedelta(hours=18)
