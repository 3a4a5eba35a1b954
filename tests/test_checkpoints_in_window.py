"""The checkpoints a window counts: run one after another, those that ran some of it, the longest measured whole."""

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from analysis.series.checkpoints import Checkpoint, by_window, in_window, merged, serial

T0 = dt.datetime(2024, 11, 18, 3, 40, 30, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_a_checkpoint_due_while_a_long_one_ran_begins_at_its_end_and_is_not_counted_in_its_window():
    # dirty-cache-checkpoints-8.0: a 900 s checkpoint (FTDC and the log state it) and the one due while it ran, which FTDC
    # counted at the next sample, 1 s later, with a 1.7 s duration: its estimated start fell 0.7 s inside the long one,
    # and the long one's window of exactly 900 s was said to hold "2 checkpoints back to back ... up to 15 min".
    ftdc = [Checkpoint(at(0), at(900), "ftdc"), Checkpoint(at(901) - dt.timedelta(seconds=1.7), at(901), "ftdc")]
    found = serial(merged(ftdc, [Checkpoint(at(0), at(900), "log")], at(-60), at(960)))
    assert [(c.start, c.end) for c in found] == [(at(0), at(900)), (at(900), at(901))]
    counted = in_window(by_window(found), at(0), at(900), None)
    assert counted is not None
    assert (counted.count, counted.longest_s, counted.time_share) == (1, 900.0, 1.0)
    assert counted.against_usual() == "15 min"


def test_the_longest_is_its_whole_run_where_it_ran_past_the_window():
    counted = in_window(by_window([Checkpoint(at(0), at(1200), "ftdc+log")]), at(300), at(900), None)
    assert counted is not None
    assert (counted.count, counted.longest_s, counted.time_share) == (1, 1200.0, 1.0)
    assert counted.against_usual() == "20 min"


# FTDC's checkpoints: each counted at a later sample than the one before (whole seconds apart), with the duration it
# reports.
ends = st.lists(st.integers(1, 300), min_size=1, max_size=12).map(lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))])
spans = ends.flatmap(lambda e: st.tuples(st.just(e), st.lists(st.floats(0.1, 1200), min_size=len(e), max_size=len(e))))


@given(spans, st.floats(0, 3000), st.floats(0, 1500))
def test_checkpoints_estimated_from_ftdc_never_overlap_and_a_window_counts_those_that_ran_in_it(raw, lo, length):
    # Each FTDC checkpoint's start is its end less the duration it reports, up to a sampling period off: one running
    # while the previous one ran is the estimate's error, since mongod's checkpoint thread runs one at a time.
    ftdc = sorted((Checkpoint(at(e - d), at(e), "ftdc") for e, d in zip(*raw)), key=lambda c: c.start)
    found = serial(ftdc)
    assert sorted(c.end for c in found) == sorted(c.end for c in ftdc)
    assert all(b.start >= a.end for a, b in zip(found, found[1:]))
    estimated = {c.end: c.start for c in ftdc}
    assert all(estimated[c.end] <= c.start <= c.end for c in found)
    start, end = at(lo), at(lo + length)
    counted = in_window(by_window(found), start, end, None)
    ran = [c for c in found if c.end > start and c.start < end] if length else [c for c in found if c.start <= start <= c.end]
    if not ran:
        assert counted is None
        return
    assert counted is not None and counted.count == len(ran)
    assert counted.longest_s == round(max(c.seconds for c in ran), 1)
    busy = sum((min(c.end, end) - max(c.start, start)).total_seconds() for c in ran)
    assert 0 <= counted.time_share <= 1 and abs(counted.time_share - min(busy / max(length, 1.0), 1.0)) < 1e-3
