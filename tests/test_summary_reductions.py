"""The summary's aggregations taken beside its grouping (`Gathered`, `quantiles`), from counts or from the few rows
they need, are those a grouping that gathers each group's rows gives, to the bit."""

import datetime as dt

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ftdc.logs.summary import distinct, distinct_text, longest, quantiles, tally

NAMED = {"p0": 0.0, "p50": 0.5, "p95": 0.95, "p99": 0.99, "p100": 1.0, "p33": 1 / 3}
T0 = dt.datetime(2024, 5, 6, tzinfo=dt.timezone.utc)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", None]),
            st.booleans(),
            # A few values, often repeated; nulls (polars' quantile counts them: its rounding does); and values far
            # apart, where an interpolation's rounding shows.
            st.one_of(st.none(), st.integers(0, 5), st.integers(-(2**53), 2**53)),
        ),
        max_size=60,
    )
)
def test_each_groups_quantiles_are_polars_own(rows):
    frame = pl.DataFrame(rows, schema={"key": pl.String, "flag": pl.Boolean, "duration_ms": pl.Int64}, orient="row")
    by = ["key", "flag"]
    got = quantiles(frame.lazy(), by, "duration_ms", NAMED).collect()
    want = frame.group_by(by).agg(**{name: pl.col("duration_ms").quantile(q, "linear") for name, q in NAMED.items()})
    assert_frame_equal(got.sort(by, nulls_last=True), want.sort(by, nulls_last=True), check_exact=True)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", None]),
            st.one_of(st.none(), st.integers(0, 4)),  # durations: few, so runs tie
            st.sampled_from(["COLLSCAN", "IXSCAN { a: 1 }", None]),
            st.sampled_from(["app", "other", None]),
        ),
        max_size=50,
    ),
    st.integers(1, 4),
)
def test_gathered_aggregations_are_those_of_a_gathering_grouping(rows, runs):
    frame = pl.DataFrame(
        rows, schema={"key": pl.String, "duration_ms": pl.Int64, "plan": pl.String, "app": pl.String}, orient="row"
    ).with_row_index("row")
    frame = frame.with_columns(ts=pl.lit(T0) + pl.duration(seconds=pl.col("row")))
    by = ["key"]
    fields = {"at": pl.col("ts"), "duration_ms": pl.col("duration_ms"), "row": pl.col("row")}
    rows_ = frame.lazy()
    got = (
        rows_.group_by(by)
        .agg()
        .join(distinct("app", ", ").frame(rows_, by, "apps"), on=by, how="left", nulls_equal=True)
        .join(tally("plan", "runs").frame(rows_, by, "plans"), on=by, how="left", nulls_equal=True)
        .join(longest(runs, **fields).frame(rows_, by, "slowest"), on=by, how="left", nulls_equal=True)
        .collect()
    )
    d = pl.col("duration_ms")
    want = frame.group_by(by).agg(
        apps=distinct_text("app", ", "),
        plans=pl.col("plan").drop_nulls().value_counts(name="runs"),
        slowest=pl.struct(**fields)
        .filter(d.is_not_null())
        .sort_by(d.filter(d.is_not_null()), descending=True, maintain_order=True)
        .head(runs),
    )
    got, want = (f.sort(by, nulls_last=True) for f in (got, want))
    assert_frame_equal(got.select(by, "apps"), want.select(by, "apps"))

    # A list counted in no order: compared as sets of {value, runs}; a group of no plan has none (the summary gives it
    # an empty list).
    def plans(f):
        return [sorted((p["plan"], p["runs"]) for p in (row or [])) for row in f["plans"].to_list()]

    assert plans(got) == plans(want)
    # The longest runs, longest first and, of runs equally long, the first logged; a group of no duration has none.
    assert [row or [] for row in got["slowest"].to_list()] == want["slowest"].to_list()
