"""`Spans` (checkpoints and spikes found by bisection) keeps exactly what testing every item keeps, in order, on random
spans: overlapping, nested, touching, of zero length, ends out of order."""

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.series.spans import Spans

T0 = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
second = st.integers(0, 40).map(lambda s: T0 + dt.timedelta(seconds=s))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(second, st.integers(0, 15)), max_size=30), second, st.integers(0, 20))
def test_spans_keep_what_testing_every_item_keeps(raw, lo, length):
    items = sorted(((a, a + dt.timedelta(seconds=d)) for a, d in raw), key=lambda span: span[0])
    spans = Spans.of(items, lambda span: span)
    hi = lo + dt.timedelta(seconds=length)
    assert spans.overlapping(lo, hi) == [(a, b) for a, b in items if b >= lo and a <= hi]
    assert spans.starting(lo, hi) == [(a, b) for a, b in items if lo <= a < hi]
    ended = [(a, b) for a, b in items if b < lo]
    assert spans.last_ended_before(lo) == (ended[-1] if ended else None)
