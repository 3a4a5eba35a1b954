"""Items with time spans (checkpoints, spikes), found by bisection: a week holds ten thousand checkpoints and
hundreds of spikes, and testing every item for each window took most of several stages' time."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Spans(Generic[T]):
    """`items` in order of their spans' starts, with the spans."""

    items: list[T]
    starts: list[dt.datetime]
    ends: list[dt.datetime]
    reach: list[dt.datetime]  # the latest end among the items up to each (ends need not be in order)

    @classmethod
    def of(cls, items: list[T], span: Callable[[T], tuple[dt.datetime, dt.datetime]]) -> Spans[T]:
        """`items` (in order of start) with `span(item)` = (start, end)."""
        spans = [span(item) for item in items]
        ends = [b for _, b in spans]
        return cls(items, [a for a, _ in spans], ends, list(itertools.accumulate(ends, max)))

    def overlapping(self, lo: dt.datetime, hi: dt.datetime) -> list[T]:
        """The items whose span meets [lo, hi] (end >= lo, start <= hi), in order."""
        first, last = bisect.bisect_left(self.reach, lo), bisect.bisect_right(self.starts, hi)
        return [self.items[i] for i in range(first, last) if self.ends[i] >= lo]

    def starting(self, lo: dt.datetime, hi: dt.datetime) -> list[T]:
        """The items whose span starts in [lo, hi), in order."""
        return self.items[bisect.bisect_left(self.starts, lo) : bisect.bisect_left(self.starts, hi)]

    def last_ended_before(self, when: dt.datetime) -> T | None:
        """The last item, in order, whose span ended before `when`."""
        for i in range(bisect.bisect_left(self.starts, when) - 1, -1, -1):  # only those that started before it
            if self.ends[i] < when:
                return self.items[i]
        return None
