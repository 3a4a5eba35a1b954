"""The analysis building blocks: aliases, derived series, windows, statistics, indexes, culprits, checkpoints."""

import datetime as dt
import itertools
import json
import math

import polars as pl
import pytest
from conftest import slow_ops
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analysis.advice.indexes import esr_keys, recommend_index
from analysis.findings.culprits import CAUSE_SHARE, causes, max_time_ms, rank
from analysis.findings.finding import Finding
from analysis.series.checkpoints import SAME_END, Checkpoint, checkpoint_windows, from_ftdc, merged
from analysis.series.derived import derive, prepare
from analysis.series.metrics import resolve
from analysis.series.stats import at_least
from analysis.series.thresholds import effective_thresholds
from analysis.series.windows import between, sustained
from ftdc.metadata import Metadata

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
SS, WT = "serverStatus.", "serverStatus.wiredTiger."
NO_METADATA = Metadata(
    [], pl.DataFrame(schema={"start": pl.Datetime("ms", "UTC"), "section": pl.String, "parameter": pl.String, "value": pl.String})
)


def times(seconds):
    return pl.Series("start", [T0 + dt.timedelta(seconds=s) for s in seconds], dtype=pl.Datetime("ms", "UTC"))


def series_of(columns: dict, seconds) -> pl.DataFrame:
    """The derived series of a raw frame with these metric columns."""
    raw = pl.DataFrame({"start": times(seconds), **columns})
    resolved = resolve(raw.columns)
    return derive(prepare(raw, resolved), resolved, effective_thresholds(NO_METADATA))


# --- aliases


def test_aliases_follow_versions_and_service_prefixes():
    old = resolve([WT + "transaction.transaction checkpoint currently running", WT + "concurrentTransactions.write.available"])
    new = resolve(
        [
            "shard." + WT + "checkpoint.progress state",
            "shard." + SS + "queues.execution.write.available",
            "common.systemMetrics.disks.nvme0n1.io_time_ms",
        ]
    )
    assert old.path("checkpoint.running") == WT + "transaction.transaction checkpoint currently running"
    assert new.path("checkpoint.running") == "shard." + WT + "checkpoint.progress state"
    assert old.path("tickets.write.available") == WT + "concurrentTransactions.write.available"
    assert new.path("tickets.write.available") == "shard." + SS + "queues.execution.write.available"
    assert new.path("disk.io_time_ms.nvme0n1") == "common.systemMetrics.disks.nvme0n1.io_time_ms"
    assert set(new.wanted) == {p for paths in new.paths.values() for p in paths}


def test_an_upgrade_mid_directory_coalesces_both_paths():
    """7.0 wrote concurrentTransactions, 8.0 queues.execution: one column."""
    raw = {
        WT + "concurrentTransactions.write.available": [5, 4, None, None],
        SS + "queues.execution.write.available": [None, None, 3, 0],
    }
    assert series_of(raw, range(4))["write_tickets_available"].to_list() == [5, 4, 3, 0]


# --- derived series


def test_rates_use_real_intervals_and_skip_gaps_restarts_and_resets():
    seconds = [0, 1, 2, 12, 13, 14, 15]  # a 10 s gap before 12
    raw = {
        SS + "pid": [7, 7, 7, 7, 7, 8, 8],  # restart before 14
        SS + "connections.totalCreated": [100, 110, 130, 140, 150, 5, 9],
        SS + "opLatencies.writes.latency": [0, 1000, 5000, 6000, 9000, 100, 600],
        SS + "opLatencies.writes.ops": [0, 10, 20, 30, 40, 1, 6],
    }
    s = series_of(raw, seconds)
    assert s["gap"].to_list()[3] and s["restart"].to_list()[5]
    assert s["connections_created_per_s"].to_list() == [None, 10, 20, None, 10, None, 4]
    # Interval mean latency, not the cumulative ratio: (5000-1000)/(20-10) us.
    assert s["writes_latency_ms"].to_list() == [None, 0.1, 0.4, None, 0.3, None, 0.1]


def test_cache_percentages_and_thresholds_in_bytes():
    raw = {
        WT + "cache.maximum bytes configured": [1000, 1000],
        WT + "cache.bytes currently in the cache": [960, 800],
        WT + "cache.tracked dirty bytes in the cache": [250, 10],
    }
    s = series_of(raw, [0, 1])
    assert s["cache_fill_pct"].to_list() == [96.0, 80.0] and s["cache_dirty_pct"].to_list() == [25.0, 1.0]
    assert s["eviction_trigger_pct"].to_list() == [95.0, 95.0]


# --- windows


def test_sustained_merges_short_dips_and_drops_short_runs():
    frame = pl.DataFrame(
        {
            "start": times(range(30)),
            "period_s": [1.0] * 30,
            "x": [0, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
        }
    )
    found = sustained(frame, pl.col("x") == 1, min_s=3, merge_s=3)
    assert [(w.start.second, w.end.second, w.first, w.last) for w in found] == [(1, 6, 1, 6), (12, 18, 12, 18)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=120), st.integers(0, 5), st.integers(1, 6))
def test_sustained_windows_are_ordered_disjoint_and_start_and_end_on_held_samples(flags, merge, minimum):
    frame = pl.DataFrame({"start": times(range(len(flags))), "period_s": [1.0] * len(flags), "x": flags})
    found = sustained(frame, pl.col("x"), min_s=minimum, merge_s=merge)
    for a, b in itertools.pairwise(found):
        assert a.last < b.first and (b.start - a.end).total_seconds() > merge
    for w in found:
        assert flags[w.first] and flags[w.last] and w.seconds + 1 >= minimum
    assert all(any(w.first <= i <= w.last for w in found) for i, f in enumerate(flags) if f) or minimum > 1


@settings(max_examples=200, deadline=None)
@given(
    st.data(),
    st.lists(st.integers(0, 40), min_size=1, max_size=30),
    st.sampled_from(["ms", "us"]),
    st.sampled_from(["both", "left", "right", "none"]),
)
def test_between_keeps_the_rows_is_between_keeps(data, steps, unit, closed):
    """Bisection finds the rows a filter finds: repeated times, no bound, and bounds a little before, at or after
    a sample to the microsecond (polars cuts a bound to the column's unit) included."""
    seconds = list(itertools.accumulate(steps))
    frame = pl.DataFrame(
        {
            "start": pl.Series([T0 + dt.timedelta(seconds=s) for s in seconds], dtype=pl.Datetime(unit, "UTC")),
            "row": range(len(seconds)),
        }
    )
    near = st.sampled_from([-1001, -1000, -999, -300, 0, 300, 999, 1000, 1001])
    bound = st.one_of(
        st.none(),
        st.builds(
            lambda s, us: T0 + dt.timedelta(seconds=s, microseconds=us), st.sampled_from(seconds + [-1, seconds[-1] + 1]), near
        ),
    )
    lo, hi = data.draw(bound), data.draw(bound)
    far = dt.timedelta(days=1)
    keep = pl.col("start").is_between(T0 - far if lo is None else lo, T0 + far if hi is None else hi, closed=closed)
    assert between(frame, lo, hi, closed=closed)["row"].to_list() == frame.filter(keep)["row"].to_list()


# --- statistics


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.integers(0, 9))
def test_poisson_binomial_tail_matches_enumeration(ps, k):
    exact = sum(
        math.prod(p if hit else 1 - p for p, hit in zip(ps, outcome))
        for outcome in itertools.product([0, 1], repeat=len(ps))
        if sum(outcome) >= k
    )
    assert at_least(ps, k) == pytest.approx(exact, abs=1e-9)


# --- indexes


def test_esr_order_equality_sort_range():
    keys = esr_keys({"total": {"$gt": 500}, "status": "pending", "region": {"$in": ["eu", "us"]}}, {"createdAt": -1})
    assert keys == [("status", 1), ("region", 1), ("createdAt", -1), ("total", 1)]
    # Extended-JSON values are values; $or/$expr cannot be served by one compound index.
    assert esr_keys({"_id": {"$oid": "66433a2f9d1e8b0012345678"}, "$or": [{"a": 1}]}, None) == [("_id", 1)]
    # A regular expression is a value to Extended JSON but a range to an index: after the sort's keys, as $regex is.
    literal = {"name": {"$regularExpression": {"pattern": "^ab", "options": ""}}, "status": "x"}
    assert esr_keys(literal, {"ts": 1}) == [("status", 1), ("ts", 1), ("name", 1)]
    assert esr_keys({"name": {"$regex": "^ab"}, "status": "x"}, {"ts": 1}) == [("status", 1), ("ts", 1), ("name", 1)]


def test_index_from_logged_commands():
    agg = json.dumps(
        {
            "aggregate": "orders",
            "pipeline": [{"$match": {"status": "x", "total": {"$gt": 1}}}, {"$sort": {"ts": 1}}, {"$group": {"_id": 1}}],
        }
    )
    assert (
        recommend_index("shop.orders", agg)
        == 'db.getSiblingDB("shop").getCollection("orders").createIndex({ status: 1, ts: 1, total: 1 })'
    )
    update = json.dumps({"update": "orders", "updates": [{"q": {"sku": "a"}, "u": {"$set": {"n": 1}}}]})
    assert recommend_index("shop.orders", update).endswith("createIndex({ sku: 1 })")
    assert recommend_index("shop.orders", json.dumps({"find": "orders", "filter": {}})) is None
    assert recommend_index("shop.orders", "not json") is None


field = st.from_regex(r"[a-z]{1,5}", fullmatch=True)


@given(
    st.dictionaries(
        field,
        st.one_of(
            st.integers(), st.fixed_dictionaries({"$gt": st.integers()}), st.fixed_dictionaries({"$in": st.lists(st.integers())})
        ),
    ),
    st.dictionaries(field, st.sampled_from([1, -1]), max_size=3),
)
def test_esr_keys_are_unique_and_ordered(filter_doc, sort):
    keys = esr_keys(filter_doc, sort)
    names = [k for k, _ in keys]
    assert len(names) == len(set(names)) and set(names) == set(filter_doc) | set(sort)
    rank_of = {k: (0 if not (isinstance(v, dict) and "$gt" in v) else 2) for k, v in filter_doc.items()}
    rank_of.update({k: 1 for k in sort if rank_of.get(k) != 0})
    assert [rank_of[n] for n in names] == sorted(rank_of[n] for n in names)


# --- culprits


def op(end_s, ms, ns="shop.orders", plan="IXSCAN", statement=False, command="find"):
    end = T0 + dt.timedelta(seconds=end_s)
    return {
        "ts": end,
        "started": end - dt.timedelta(milliseconds=ms),
        "duration_ms": ms,
        "ns": ns,
        "command": command,
        "op_type": "command",
        "write_statement": statement,
        "plan_summary": plan,
        "plan_kind": plan.split()[0],
        "shape": f"{ns}-{plan}",
        "command_json": json.dumps({"find": ns.split(".")[1], "filter": {"status": "a"}}),
    }


def test_culprits_ranked_by_seconds_inside_the_window():
    ops = slow_ops(
        [op(100, 90_000, plan="COLLSCAN"), op(50, 1_000), op(70, 20_000, ns="shop.users"), op(65, 5_000, statement=True)]
    )
    found = rank(ops, T0 + dt.timedelta(seconds=60), T0 + dt.timedelta(seconds=80))
    # The scan overlaps 20 s, the users find 10 s (50..70 → 60..70); the 1 s find ended before; the WRITE line repeats its command.
    assert [(c.ns, c.overlap_s, c.collscan) for c in found] == [("shop.orders", 20.0, True), ("shop.users", 10.0, False)]
    assert found[0].share == pytest.approx(20 / 30) and found[0].max_ms == 90_000
    assert causes(found, window_s=20) == [found[0]]


def test_a_short_scan_is_not_blamed_for_a_long_window():
    ops = slow_ops([op(100, 300, plan="COLLSCAN")])
    found = rank(ops, T0, T0 + dt.timedelta(seconds=600))
    assert found[0].share == 1.0 >= CAUSE_SHARE and causes(found, window_s=600) == []


def test_max_time_ms_is_twice_the_shapes_median_run_in_whole_seconds_never_below_it():
    # Issue 39: a tenth of the longest run (7 s) stopped the 12 s median run and every ordinary one with it.
    assert max_time_ms(pl.Series([3_000, 70_000, 12_000])) == 24_000
    assert max_time_ms(pl.Series([900])) == 2_000  # 1.8 s, rounded up to whole seconds
    assert max_time_ms(pl.Series([125_000] * 5 + [400_000])) >= 125_000


def test_finding_rejects_unknown_severity_and_serialises_times_with_z():
    with pytest.raises(ValueError):
        Finding("x", "serious", T0, T0, "t", "e")
    assert Finding("x", "info", T0, T0 + dt.timedelta(milliseconds=250), "t", "e").to_dict()["end"] == "2024-05-14T09:00:00.250Z"


# --- checkpoints


def test_checkpoint_windows_from_counters_flag_and_log():
    running = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0]
    total_ms = [0, 0, 0, 0, 3900, 3900, 3900, 3900, 3900, 4300, 4300, 4300]
    last_ms = [0, 0, 0, 0, 3900, 3900, 3900, 3900, 3900, 400, 400, 400]
    s = series_of(
        {
            WT + "transaction.transaction checkpoint currently running": running,
            WT + "transaction.transaction checkpoint total time (msecs)": total_ms,
            WT + "transaction.transaction checkpoint most recent time (msecs)": last_ms,
        },
        range(12),
    )
    found = checkpoint_windows(s, "6.0.0")
    # The counter moved at 4 while the flag still read 1; its fall at 5 is the same checkpoint.
    # The second one's 400 ms would start it at 8.6 s, but the flag was seen set at 8 s
    # ("most recent time" leaves out scrub up to 7.2): it had begun by then.
    assert [(c.start, c.end, c.source) for c in found] == [
        (T0 + dt.timedelta(seconds=0.1), T0 + dt.timedelta(seconds=4), "ftdc"),
        (T0 + dt.timedelta(seconds=8), T0 + dt.timedelta(seconds=9), "ftdc"),
    ]
    events = pl.DataFrame(
        {"ts": [T0 + dt.timedelta(seconds=9, milliseconds=300)], "kind": ["checkpoint"], "duration_ms": [1000]},
        schema={"ts": pl.Datetime("ms", "UTC"), "kind": pl.String, "duration_ms": pl.Int64},
    )
    merged = checkpoint_windows(s, "6.0.0", events)
    assert merged[1].source == "ftdc+log" and merged[1].seconds == 1.0 and merged[1].corroborated


def checkpoints_one_sample_at_a_time(rows: list[dict], version: str) -> list[tuple[int, int, bool]]:
    """The checkpoints of derived rows (time_ms, valid, running, total_ms, last_ms, scrub_ms) as (start ms, end ms,
    open), read a sample at a time as the module's docstring states them: the reference the query must match."""
    scrub_counts = tuple(int(x) for x in version.split(".")[:2]) < (7, 3)
    spans, rise, ended_since_rise = [], None, False
    for i, row in enumerate(rows):
        running = row["running"] or 0
        before = None if i == 0 else rows[i - 1]["running"] or 0
        counted = (row["total_ms"] or 0) > 0 and row["valid"]
        fell = before is not None and before > 0 and running == 0 and row["valid"]
        rose = running > 0 and (before == 0 or not row["valid"])
        duration = None if row["last_ms"] is None else row["last_ms"] + ((row["scrub_ms"] or 0) if scrub_counts else 0)
        if (counted or (fell and not ended_since_rise)) and duration is not None:
            ended_since_rise = True
            start = row["time_ms"] - max(0, round(duration))
            if rise is not None:
                start = min(max(start, start if rise[0] is None else rise[0]), rise[1])
            spans.append((start, row["time_ms"], False))
            rise = None
        if rose:
            rise, ended_since_rise = (None if i == 0 else rows[i - 1]["time_ms"], row["time_ms"]), False
    if rise is not None and (rows[-1]["running"] or 0) > 0:
        spans.append((rise[1], rows[-1]["time_ms"], True))
    return spans


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "step_ms": st.sampled_from([0, 250, 1000, 1000, 1000, 7000]),
                "valid": st.booleans(),
                "running": st.one_of(st.none(), st.sampled_from([0, 0, 1, 1, 2])),
                "total_ms": st.one_of(st.none(), st.sampled_from([0, 0, 0, 3, 900])),
                "last_ms": st.one_of(st.none(), st.integers(0, 9000)),
                "scrub_ms": st.one_of(st.none(), st.integers(0, 600)),
            }
        ),
        max_size=40,
    ),
    st.sampled_from(["6.0.0", "7.3.1"]),
)
# The flag rises, a checkpoint is counted while it stays up to the last sample: that one ended; none is still running.
@example(
    [
        {"step_ms": 1000, "valid": True, "running": r, "total_ms": t, "last_ms": m, "scrub_ms": None}
        for r, t, m in ((0, 0, None), (1, 0, None), (1, 900, 500), (1, 0, 500))
    ],
    "6.0.0",
)
# The flag already up at the first sample, whose interval counts (no rise seen), a checkpoint counted there and the
# flag falling at the next: one checkpoint.
@example(
    [
        {"step_ms": 1000, "valid": True, "running": 1, "total_ms": 900, "last_ms": 500, "scrub_ms": None},
        {"step_ms": 1000, "valid": True, "running": 0, "total_ms": 0, "last_ms": 500, "scrub_ms": None},
    ],
    "6.0.0",
)
def test_checkpoints_from_the_counters_and_the_flag_are_those_read_a_sample_at_a_time(rows, version):
    # Flags caught rising and falling, counters moving with the flag up or down, unknown durations, invalid intervals
    # (a restart, a gap), repeated times, a checkpoint still running at the end: the query finds what the sample-by-sample
    # reading does.
    clock = 0
    for row in rows:
        clock += row["step_ms"]
        row["time_ms"] = clock
    series = pl.DataFrame(
        {
            "start": pl.Series([T0 + dt.timedelta(milliseconds=r["time_ms"]) for r in rows], dtype=pl.Datetime("ms", "UTC")),
            "valid": pl.Series([r["valid"] for r in rows], dtype=pl.Boolean),
            "checkpoint_running": pl.Series([r["running"] for r in rows], dtype=pl.Int64),
            "checkpoint_time_ms": pl.Series([r["total_ms"] for r in rows], dtype=pl.Int64),
            "checkpoint_last_ms": pl.Series([r["last_ms"] for r in rows], dtype=pl.Int64),
            "checkpoint_scrub_ms": pl.Series([r["scrub_ms"] for r in rows], dtype=pl.Int64),
        }
    )
    found = from_ftdc(series, version)
    ms = dt.timedelta(milliseconds=1)
    assert [((c.start - T0) // ms, (c.end - T0) // ms, c.open) for c in found] == (
        checkpoints_one_sample_at_a_time(rows, version) if rows else []
    )
    assert all(c.source == "ftdc" and not c.corroborated for c in found)


# --- replication


def member_series(seconds, states, optimes_s, self_member="0"):
    """A node's view of a 2-member set: member states and optimes (seconds after T0)."""
    raw = {}
    for m in ("0", "1"):
        raw[f"replSetGetStatus.members.{m}.state"] = [s[int(m)] for s in states]
        raw[f"replSetGetStatus.members.{m}.optimeDate"] = pl.Series(
            [T0 + dt.timedelta(seconds=o[int(m)]) for o in optimes_s], dtype=pl.Datetime("ms", "UTC")
        )
    raw[f"replSetGetStatus.members.{self_member}.self"] = [1] * len(seconds)
    return series_of(raw, seconds)


def run_detector(detect, series):
    from analysis.findings.context import Context
    from analysis.series.checkpoints import checkpoint_windows
    from ftdc.metadata import NodeInfo

    return detect(
        Context(
            series, resolve([]), effective_thresholds(NO_METADATA), checkpoint_windows(series, None), NodeInfo(host="a", port=1)
        )
    )


def test_a_secondary_that_keeps_up_is_not_lagging():
    """Idle primary: a no-op every 10 s, the heartbeat view 0-12 s behind, back to 0 each cycle."""
    from analysis.findings.detectors import replication

    seconds = list(range(300))
    optimes = [(s - s % 10, s - s % 10 - (10 if s % 10 < 4 else 0)) for s in seconds]
    found = run_detector(replication.detect, member_series(seconds, [(1, 2)] * 300, optimes))
    assert [f for f in found if f.kind == "replication_lag"] == []


def test_a_stuck_secondary_lags():
    from analysis.findings.detectors import replication

    seconds = list(range(300))
    optimes = [(s, s if s < 100 else 100) for s in seconds]  # member 1 stops applying at 100 s
    lag = [
        f
        for f in run_detector(replication.detect, member_series(seconds, [(1, 2)] * 300, optimes))
        if f.kind == "replication_lag"
    ]
    assert len(lag) == 1 and lag[0].severity == "warning" and lag[0].evidence["member"] == "1"
    assert lag[0].start == T0 + dt.timedelta(seconds=110) and lag[0].end == T0 + dt.timedelta(seconds=299)
    assert "Member 1 lagged the primary by up to 3 min 19 s" in lag[0].title


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 120), st.integers(-3, 90), st.sampled_from([(1, 2), (2, 1)])), min_size=1, max_size=40))
@example([(10, -2, (1, 2))])  # the secondary heard 2 s ahead of the primary's last heartbeat: no lag, not -2 s
def test_lag_is_never_negative(rows):
    """A member's optime read ahead of the primary's (the optimes of one status are not read at one instant) is 0 lag;
    a secondary behind it lags by the difference."""
    seconds = list(range(len(rows)))
    optimes = [(primary, primary - behind) if state == (1, 2) else (primary - behind, primary) for primary, behind, state in rows]
    series = member_series(seconds, [state for _, _, state in rows], optimes)
    for column in ("member_lag_s.0", "member_lag_s.1"):
        secondary = 0 if column.endswith("0") else 1
        expected = [float(max(behind, 0)) if state[secondary] == 2 else None for _, behind, state in rows]
        assert series[column].to_list() == expected


def test_no_window_across_a_gap_in_the_data():
    seconds = list(range(20)) + list(range(900, 920))  # 15 minutes without samples
    frame = series_of({SS + "connections.current": [1] * 40}, seconds)
    found = sustained(frame, pl.col("connections") == 1, min_s=30, merge_s=0)
    assert found == []
    assert len(sustained(frame, pl.col("connections") == 1, min_s=10, merge_s=0)) == 2


def test_an_election_during_an_incident_is_a_warning():
    from analysis.findings.detectors import replication

    seconds = list(range(120))
    states = [(1, 2) if s < 60 else (2, 1) for s in seconds]
    found = run_detector(replication.detect, member_series(seconds, states, [(s, s) for s in seconds]))
    change = next(f for f in found if f.kind == "primary_change")
    assert change.severity == "info" and change.title == "Primary changed from member 0 (this node, a:1) to member 1"
    incident = Finding(
        "cache_pressure", "critical", T0 + dt.timedelta(seconds=50), T0 + dt.timedelta(seconds=90), "cache full", "e"
    )
    change, _ = replication.relate([change, incident])
    assert change.severity == "warning" and "cache full" in change.explanation


def test_operations_that_mostly_waited_are_victims_not_culprits():
    """Ranked by time held: a run's recorded waits (cache, locks, ticket queue) do not count."""
    ops = slow_ops([op(100, 60_000, plan="COLLSCAN"), *[op(95 + k, 50_000, ns="shop.carts") for k in range(3)]])
    ops = ops.with_columns(cache_wait_micros=pl.when(pl.col("ns") == "shop.carts").then(45_000_000))
    found = rank(ops, T0 + dt.timedelta(seconds=50), T0 + dt.timedelta(seconds=100))
    carts = next(c for c in found if c.ns == "shop.carts")
    assert carts.overlap_s > found[0].overlap_s and carts.held_s == pytest.approx(carts.overlap_s * 0.1)
    assert found[0].ns == "shop.orders" and found[0].collscan and causes(found, window_s=50) == [found[0]]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.integers(0, 20)), max_size=30),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 20)), max_size=30),
)
def test_log_checkpoints_twin_ftdc_ones_as_one_by_one_search_would(ftdc_steps, log_rows):
    # Each FTDC checkpoint takes the earliest-ending log checkpoint not yet taken whose end is as near as SAME_END and
    # a sample; the others within the data's span are added: what a search through the whole log for each gives.
    t0 = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
    at = lambda s: t0 + dt.timedelta(seconds=s)  # noqa: E731
    ends = list(itertools.accumulate(step for step, _ in ftdc_steps))
    ftdc = [Checkpoint(at(end - length), at(end), "ftdc") for end, (_, length) in zip(ends, ftdc_steps)]
    log = [Checkpoint(at(end - length), at(end), "log") for end, length in log_rows]
    first, last = at(0), at(300)
    remaining, want = sorted(log, key=lambda c: c.end), []
    for c in ftdc:
        twin = next((t for t in remaining if abs(t.end - c.end) <= SAME_END + dt.timedelta(seconds=1)), None)
        if twin is None:
            want.append(c)
        else:
            want.append(Checkpoint(twin.start, twin.end, "ftdc+log", c.open, corroborated=True))
            remaining.remove(twin)
    want += [c for c in remaining if first <= c.end <= last]
    assert merged(ftdc, log, first, last) == sorted(want, key=lambda c: c.start)


@pytest.mark.parametrize(("burst_per_s", "storm"), [(15, False), (19, False), (20, True), (100, True)])
def test_a_connection_storm_opens_at_least_its_least_rate(burst_per_s, storm):
    # An hour at 0.5 new connections a second, then 30 s far above that while the open count triples: a storm only
    # when the burst reaches MIN_RATE (20/s); under it, however many times the usual rate, none (and the hour's
    # medians are not taken).
    from analysis.findings.detectors import connection_storm

    seconds = list(range(3_700))
    rates = [0.5] * 3_650 + [burst_per_s] * 30 + [0.5] * 20
    created = list(itertools.accumulate(rates))
    current = [50] * 3_650 + [50 + 10 * i for i in range(30)] + [350] * 20
    series = series_of({SS + "connections.totalCreated": created, SS + "connections.current": current}, seconds)
    found = [f for f in run_detector(connection_storm.detect, series) if f.kind == "connection_storm"]
    assert connection_storm.MIN_RATE == 20
    assert bool(found) == storm


@pytest.mark.parametrize(("deleted", "burst"), [(9_999, False), (10_000, True)])
def test_a_ttl_burst_deletes_at_least_its_least_documents_in_a_minute(deleted, burst):
    # Two quiet hours, then one TTL pass deleting `deleted` documents within 50 s: a burst only from MIN_DOCS
    # (10,000) in its busiest minute; a capture that deleted fewer in all is not looked at further.
    from analysis.findings.detectors import ttl_burst

    seconds = list(range(7_300))
    per_second = [0] * 7_200 + [deleted // 50] * 50 + [0] * 50
    per_second[7_200] += deleted - sum(per_second)
    series = series_of({SS + "metrics.ttl.deletedDocuments": list(itertools.accumulate(per_second))}, seconds)
    found = [f for f in run_detector(ttl_burst.detect, series) if f.kind == "ttl_burst"]
    assert ttl_burst.MIN_DOCS == 10_000 and series["ttl_deleted"].sum() == deleted
    assert bool(found) == burst


# --- CPU saturation


def cpu_series(seconds: int, shares, cores: int = 4, mongod: bool = True, reboot_at: int | None = None) -> pl.DataFrame:
    """A Linux host's derived series from its /proc/stat counters, one sample a second: `shares(s)` gives each second's
    (busy, steal, mongod's share of the busy time less steal, runnable tasks); a reboot starts the counters again."""
    states = {k: 0.0 for k in ("user", "system", "idle", "iowait", "steal")}
    own = 0.0
    raw: dict[str, list] = {f"systemMetrics.cpu.{k}_ms": [] for k in states}
    raw |= {"systemMetrics.cpu.num_cpus": [], "systemMetrics.cpu.procs_running": []}
    if mongod:
        raw |= {"serverStatus.extra_info.user_time_us": [], "serverStatus.extra_info.system_time_us": []}
    for s in range(seconds):
        if s == reboot_at:
            states, own = {k: 0.0 for k in states}, 0.0
        busy, steal, mine, runnable = shares(s)
        for state, share in (("user", busy - steal), ("steal", steal), ("idle", 1 - busy)):
            states[state] += 1000 * cores * share
        own += 1000 * cores * (busy - steal) * mine * 1000
        for state, value in states.items():
            raw[f"systemMetrics.cpu.{state}_ms"].append(int(value))
        raw["systemMetrics.cpu.num_cpus"].append(cores)
        raw["systemMetrics.cpu.procs_running"].append(runnable)
        if mongod:
            raw["serverStatus.extra_info.user_time_us"].append(int(own * 0.8))
            raw["serverStatus.extra_info.system_time_us"].append(int(own * 0.2))
    return series_of(raw, list(range(seconds)))


@settings(max_examples=40, deadline=None)
@given(
    busy=st.one_of(st.floats(0.3, 0.85), st.floats(0.92, 1.0)),
    runnable=st.integers(1, 12),
    length=st.one_of(st.integers(5, 55), st.integers(65, 400)),
)
def test_cpu_saturation_is_busy_cpus_with_more_threads_runnable_than_cores_for_a_minute(busy, runnable, length):
    """Found exactly when the CPUs were ≥ 90 % busy with more runnable threads than the 4 cores for a minute or more:
    busy with no thread waiting, waiting threads on CPUs with idle time, or a burst under a minute are not saturation."""
    from analysis.findings.detectors import cpu_saturation

    def shares(s):
        inside = 100 <= s < 100 + length
        return (busy, 0.0, 0.9, runnable) if inside else (0.3, 0.0, 0.9, 1)

    found = run_detector(cpu_saturation.detect, cpu_series(100 + length + 120, shares))
    assert bool(found) == (busy >= 0.9 and runnable > 4 and length >= 60)
    for f in found:
        assert (f.start, f.end) == (T0 + dt.timedelta(seconds=99), T0 + dt.timedelta(seconds=99 + length))
        assert f.severity == ("critical" if runnable >= 8 else "warning")
        assert f.evidence["mechanism"] == "mongod" and f.recommendations[0].action == "change_workload"


@pytest.mark.parametrize(
    ("steal", "mine", "mongod", "told", "first"),
    [
        (0.2, 0.9, True, "hypervisor", "resize"),  # steal took a fifth of the cores: the hypervisor's
        (0.0, 0.2, True, "another_process", "investigate"),  # mongod a fifth of the busy time: another process's
        (0.0, 0.9, True, "mongod", "change_workload"),
        (0.0, 0.9, False, None, "investigate"),  # mongod's CPU time not recorded: not said whose
    ],
)
def test_whose_cpu_it_was(steal, mine, mongod, told, first):
    from analysis.findings.detectors import cpu_saturation

    def shares(s):
        return (0.97, steal, mine, 10) if 100 <= s < 300 else (0.3, 0.0, 0.9, 1)

    [found] = run_detector(cpu_saturation.detect, cpu_series(420, shares, mongod=mongod))
    assert found.evidence.get("mechanism") == told and found.recommendations[0].action == first
    assert ("not recorded" in found.explanation) == (not mongod)
    assert not [r for r in found.recommendations if r.action == "resize" and "cores" in r.what]  # usually 30 % busy


def test_a_reboot_is_no_cpu_value_and_no_saturation():
    """The counters start again from boot: the Δ across is no value (not a negative or a huge share), and a host under
    the bar on both sides, threads waiting all along, stays quiet."""
    from analysis.findings.detectors import cpu_saturation

    series = cpu_series(600, lambda s: (0.85, 0.0, 0.9, 10), reboot_at=300)
    assert series["cpu_busy_pct"][300] is None and series["mongod_cpu_pct"][300] is None
    assert series["cpu_busy_pct"].drop_nulls().is_between(84, 86).all()
    assert run_detector(cpu_saturation.detect, series) == []


def test_a_node_without_runnable_threads_is_not_said_to_have_passed_the_cpu_check():
    """Busy CPUs, runnable threads not recorded (4.2, or a Windows node's Processor counters, not read): busy is not
    saturated and nothing tells the two apart, so the node is said not to have been checked, naming what it lacked, and
    no report counts CPU saturation among the checks it passed."""
    from analysis.findings.context import Context
    from analysis.findings.detectors import cpu_saturation
    from analysis.outputs.document import checked_kinds
    from analysis.series.checkpoints import checkpoint_windows
    from ftdc.metadata import NodeInfo

    series = cpu_series(400, lambda s: (1.0, 0.0, 0.9, 10)).drop("runnable_per_core")
    recorded = [f"systemMetrics.cpu.{k}_ms" for k in ("user", "system", "idle", "iowait", "steal")]
    for os, names, missing in (
        ("Ubuntu 22.04", [*recorded, "systemMetrics.cpu.num_cpus"], ["systemMetrics.cpu.procs_running"]),
        (
            "Ubuntu 22.04",
            recorded[:1],
            [
                "systemMetrics.cpu.system_ms",
                "systemMetrics.cpu.idle_ms",
                "systemMetrics.cpu.procs_running",
                "systemMetrics.cpu.num_cpus",
            ],
        ),
        ("Microsoft Windows Server 2019", [], ["Processor counters"]),
        ("Mac OS X", [], ["systemMetrics.cpu"]),  # nothing of it recorded: the section, not each of its five paths
    ):
        node = NodeInfo(host="a", port=1, os=os)
        ctx = Context(series, resolve(names), effective_thresholds(NO_METADATA), checkpoint_windows(series, None), node)
        [found] = cpu_saturation.detect(ctx)
        assert found.not_checked and found.subject == "CPU saturation not checked"
        assert found.evidence["missing"] == missing
        assert ("Processor performance counters" in found.statement) == os.startswith("Microsoft")
        assert "CPU saturation" in checked_kinds([]) and "CPU saturation" not in checked_kinds([found])
