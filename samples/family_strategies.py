"""Hypothesis strategies for the randomised scenarios (samples/families.py): node shapes and each
detector's incidents drawn across realistic ranges, the simplest values first so a failure
shrinks to a small scenario (a 7.0 node, 1 s sampling, default settings, the shortest incident)."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import strategies as st

from analysis.findings.detectors.checkpoint_stall import MAX_P_VALUE, MIN_ALIGNED
from samples.families import (
    CPU_CAUSES,
    CPU_QUIET,
    KINDS,
    PLANNED_CHANGES,
    Incident,
    Laptop,
    Leak,
    Quiet,
    Restarts,
    RoleChange,
    Shape,
    stall_seconds,
)

HOUR = 3600
LAYOUTS = ("7.0", "4.2", "6.0", "8.0", "8.0-services", "4.4")
# UTC offsets hosts use, in minutes (whole, half and quarter hours, -12:00 to +14:00).
OFFSETS = st.one_of(
    st.just(0),
    st.integers(-12, 14).map(lambda h: 60 * h),
    st.sampled_from([-570, -210, 210, 270, 330, 345, 390, 525, 570, 630, 765]),
)


@st.composite
def shapes(draw) -> Shape:
    layout = draw(st.sampled_from(LAYOUTS))
    interval = draw(st.sampled_from([60, 30, 120, 300]))  # syncPeriodSecs: 60 unless set
    # diagnosticDataCollectionPeriodMillis: 1 s unless set; a sample every few seconds at most a sixth of the
    # checkpoint interval (coarser sampling cannot see checkpoints apart).
    period = draw(st.sampled_from([p for p in (1, 5, 10) if p <= interval // 6]))
    return Shape(
        layout=layout,
        cache_gb=draw(st.sampled_from([8.0, 1.0, 2.0, 4.0, 16.0, 32.0, 64.0, 128.0, 256.0])),
        baseline_ms=draw(st.floats(0.05, 50.0)),
        period_s=period,
        tz_minutes=draw(OFFSETS),
        checkpoint_interval=interval,
        # Raised or lowered: WiredTiger needs trigger > target (80 and 5 by default), dirty below the whole.
        eviction_trigger=draw(st.one_of(st.just(95), st.integers(85, 99))),
        dirty_trigger=draw(st.one_of(st.just(20), st.integers(10, 40))),
        tickets=draw(st.one_of(st.none(), st.integers(16, 512))),  # None: 128 before 7.0, throughput probing from 7.0
        seed=draw(st.integers(0, 2**16)),
        cores=draw(st.sampled_from([8, 2, 4, 16, 64])),
    )


FACTORS = st.floats(
    3.4, 100.0
)  # the spike rule is 3× its baseline; the simulator's noise is ±10 %, so 3.4× is a rise of 3× at least
STRENGTHS = st.floats(0.0, 1.0)


def _length(shape: Shape, low: int, high: int = HOUR):
    """Incident lengths, at least three samples long."""
    return st.integers(max(low, 3 * shape.period_s), high)


@st.composite
def incidents(draw, kind: str, shape: Shape) -> Incident:
    factor, strength = draw(FACTORS), draw(STRENGTHS)
    if kind == "checkpoint_stall":
        variant = draw(st.sampled_from(["repeated", "long"]))
        interval = shape.checkpoint_interval
        if variant == "long":
            return Incident(kind, draw(st.integers(interval + 10, HOUR)), factor, variant, strength)
        # Stalls in checkpoints are told from chance only when that many aligned spikes are improbable by
        # chance (the detector's p-value): the share of time a spike would touch a checkpoint, to the power n.
        # A spike (the slow part and the sample before) touches a checkpoint (and one sample after) from this
        # share of the sample times, a tenth more for the episode's edges.
        stall = stall_seconds(Incident(kind, 0, strength=strength), shape)
        chance = 1.1 * (stall + max(2 * shape.period_s, 0.3 * stall) + 3 * shape.period_s) / interval
        fewest = max(MIN_ALIGNED, math.ceil(math.log(MAX_P_VALUE) / math.log(chance)) + 1) if chance < 0.8 else None
        if fewest is None or fewest * interval > HOUR:  # checkpoints that long every time: one that outlasts the interval instead
            return Incident(kind, draw(st.integers(interval + 10, HOUR)), factor, "long", strength)
        count = draw(st.integers(fewest, HOUR // interval))
        return Incident(kind, count * interval, factor, variant, strength, victims=draw(st.booleans()))
    if kind == "cache_pressure":
        variant = draw(st.sampled_from(["fill", "dirty"]))
        return Incident(
            kind, draw(_length(shape, 30)), factor, variant, strength, culprit=variant == "fill" and draw(st.booleans())
        )
    if kind == "ticket_exhaustion":
        return Incident(
            kind,
            draw(_length(shape, 30)),
            factor,
            draw(st.sampled_from(["read", "write"])),
            strength,
            culprit=draw(st.booleans()),
        )
    if kind == "disk_saturation":  # saturation is a minute or more by definition (docs/metrics.md §11)
        return Incident(kind, draw(_length(shape, 60)), factor, strength=strength)
    if kind == "cpu_saturation":  # a minute or more by definition, as a disk's; whose CPU it was drawn
        return Incident(kind, draw(_length(shape, 60)), factor, draw(st.sampled_from(CPU_CAUSES)), strength)
    if kind == "connection_storm":  # clients reconnect for seconds to minutes; beyond, the count has long hit its limit
        return Incident(kind, draw(_length(shape, 10, 900)), factor, strength=strength)
    if kind == "throughput_dip":  # a server stall lasts seconds to a couple of minutes; longer is an outage
        return Incident(kind, draw(_length(shape, 10, 120)), factor, strength=strength)
    if kind == "latency_rise":  # sustained: 12 minutes to an hour at 2.5-6× (the rule: 2× for 10 minutes)
        variant = draw(st.sampled_from(["", "migrations"]))
        return Incident(kind, draw(st.integers(12 * 60, HOUR)), draw(st.floats(2.5, 6.0)), variant, strength)
    return Incident(kind, draw(_length(shape, 30)), factor, strength=strength)


QUIET = st.builds(
    Quiet,
    minutes=st.integers(30, 180),
    full_cache=st.booleans(),
    fast_collscans=st.booleans(),
    blips=st.integers(0, 120),
    restart=st.booleans(),
    gap=st.booleans(),
    idle_days=st.just(0.0),
)
IDLE = st.builds(Quiet, idle_days=st.floats(1.0, 3.0))


def cases(kind: str):
    """(shape, incident) pairs for one detector."""
    return shapes().flatmap(lambda shape: incidents(kind, shape).map(lambda incident: (shape, incident)))


ANY_CASE = st.sampled_from(list(KINDS)).flatmap(cases)
# A checkpoint stall with short COLLSCANs in the log that spent their time waiting on it.
VICTIMS = shapes().flatmap(
    lambda shape: (
        incidents("checkpoint_stall", shape)
        .filter(lambda i: i.variant == "repeated")
        .map(lambda i: (shape, Incident(i.kind, i.length_s, i.factor, i.variant, i.strength, victims=True)))
    )
)
# A COLLSCAN find whose runs fill the read pool of an 8.0 node (which logs time queued) and queue behind each other.
OWN_QUEUE = (
    shapes()
    .filter(lambda shape: shape.layout.startswith("8.0"))
    .flatmap(
        lambda shape: st.tuples(
            st.just(shape),
            st.builds(
                Incident,
                st.just("ticket_exhaustion"),
                st.integers(max(30, 3 * shape.period_s), 300),
                FACTORS,
                st.just("read"),
                STRENGTHS,
                culprit=st.just(True),
                own_queue=st.just(True),
            ),
        )
    )
)
# Checkpoint stalls of writes beside long reads whose whole latency is credited to the second each one ends.
LONG_READS = shapes().flatmap(
    lambda shape: incidents("checkpoint_stall", shape).map(
        lambda i: (shape, Incident(i.kind, i.length_s, i.factor, i.variant, i.strength, long_reads=True))
    )
)
# A cache filled by an index build's scan (the build its root cause), and dirty data kept by an idle transaction (ended by the
# client or by the server's reaper) or a cursor pinning history.
INDEX_BUILDS = (
    shapes()
    .filter(lambda shape: shape.layout != "4.2")
    .flatmap(
        lambda shape: st.tuples(
            st.just(shape),
            st.builds(
                Incident,
                st.just("cache_pressure"),
                _length(shape, 30),
                FACTORS,
                st.just("fill"),
                STRENGTHS,
                index_build=st.just(True),
            ),
        )
    )
)
PINNED = (
    shapes()
    .filter(lambda shape: shape.layout != "4.2")
    .flatmap(
        lambda shape: st.tuples(
            st.just(shape),
            st.builds(
                Incident,
                st.just("cache_pressure"),
                _length(shape, 30),
                FACTORS,
                st.just("dirty"),
                STRENGTHS,
                pinned=st.just(True),
                pinned_by=st.sampled_from(["transaction", "reaped", "cursor"]),
            ),
        )
    )
)
# 8.0 nodes with their defaults recorded: ticket parameters 0 (the node sizes the pools), any detector's incident.
DEFAULTS_80 = st.sampled_from(list(KINDS)).flatmap(
    lambda kind: (
        shapes()
        .filter(lambda shape: shape.layout.startswith("8.0"))
        .flatmap(
            lambda shape: incidents(kind, replace(shape, tickets=0)).map(lambda incident: (replace(shape, tickets=0), incident))
        )
    )
)
# Checkpoint stalls under a load that did not change: the root cause says so and says what did.
STEADY = shapes().flatmap(lambda shape: incidents("checkpoint_stall", shape).map(lambda i: (shape, replace(i, steady=True))))
# Nodes living at their limits: the cache at its trigger all along, the working set outgrowing it.
AT_LIMITS = shapes().flatmap(
    lambda shape: st.tuples(
        st.just(shape),
        st.builds(
            Incident, st.just("cache_pressure"), _length(shape, 30), FACTORS, st.just("fill"), STRENGTHS, at_limits=st.just(True)
        ),
    )
)


@st.composite
def deliberate(draw, shape: Shape) -> Shape:
    """`shape` as a standalone or a member, with eviction targets it may have lowered on purpose (background eviction
    starting early): advice must fit it (issue 39 §2). Its ticket pools, triggers and versions are drawn as for every shape."""
    return replace(
        shape,
        standalone=draw(st.booleans()),
        eviction_target=draw(st.one_of(st.just(80), st.integers(60, 79))),
        dirty_target=draw(st.one_of(st.just(5), st.integers(2, 4))),
    )


# Cache, ticket and checkpoint incidents, COLLSCANs among them, index builds and transactions pinning history (whose
# lifetimes `families._lifetime` raises), on standalones and members with their own settings: judged on advice too.
FITTING = st.one_of(cases("cache_pressure"), cases("ticket_exhaustion"), cases("checkpoint_stall"), INDEX_BUILDS, PINNED).flatmap(
    lambda case: deliberate(case[0]).map(lambda shape: (shape, case[1]))
)


# Idle transactions the reaper aborts every minute, on 4.4+ nodes sampled every 1 or 5 s (the short cache episodes each
# sets off last seconds), replica-set members and single nodes alike.
REAPED = (
    shapes()
    .filter(lambda shape: shape.layout != "4.2" and shape.period_s <= 5)
    .flatmap(
        lambda shape: st.tuples(
            st.just(shape),
            st.builds(Incident, st.just("reaped_every_minute"), st.integers(10 * 60, HOUR), FACTORS, st.just(""), STRENGTHS),
            st.booleans(),
        )
    )
)


# Issue 39 §3, causes that are true, on single nodes and replica-set members alike: a bulk loader (requests flat, documents
# ×75; 4.4+, whose JSON log names its client), a disk busy with another process's reads, a working set past the cache
# after quiet hours (an hour at the trigger; incidents up to 15 minutes, the simulated hours are long enough).
MEMBERS = shapes().flatmap(lambda shape: st.booleans().map(lambda alone: replace(shape, standalone=alone)))
BULK_LOADER = MEMBERS.filter(lambda shape: shape.layout != "4.2").flatmap(
    lambda shape: incidents("checkpoint_stall", shape).map(lambda i: (shape, replace(i, bulk_loader=True)))
)
OTHER_PROCESS = MEMBERS.flatmap(
    lambda shape: incidents("disk_saturation", shape).map(lambda i: (shape, replace(i, other_process=True)))
)
# A reconnect storm whose clients' first queries hold every read ticket (4.4+: the JSON log names their client).
WARM_UP = MEMBERS.filter(lambda shape: shape.layout != "4.2").flatmap(
    lambda shape: incidents("connection_storm", shape).map(lambda i: (shape, replace(i, warm_up=True)))
)
OUTGROWN = MEMBERS.flatmap(
    lambda shape: st.tuples(
        st.just(shape),
        st.builds(
            Incident,
            st.just("cache_pressure"),
            _length(shape, 30, 900),
            FACTORS,
            st.just("fill"),
            STRENGTHS,
            outgrown=st.just(True),
        ),
    )
)


# Issue 39 §1: quiet nodes and planned role changes, on every layout (4.2's legacy text log, 6.0 to 8.0's JSON), single
# nodes and replica-set members alike.
LAPTOPS = st.builds(
    Laptop,
    hours=st.floats(2.5, 4.0),
    suites=st.integers(1, 3),
    restarts=st.integers(0, 2),
    sleeps=st.integers(0, 2),
    standalone=st.booleans(),
)
# A leak of 500-4,000 connections (context), or one climbing past four fifths of the node's limit (a warning).
LEAKS = st.builds(
    Leak,
    hours=st.floats(0.75, 2.5),
    leaked=st.one_of(st.integers(600, 4000), st.integers(42_000, 50_000)),
    app=st.sampled_from(["billing-reports", "etl worker", "ms-orders"]),
    standalone=st.booleans(),
)


# Restarts (issue 39 §1): files of two processes overlapping in time, a developer's stops and starts hours or days
# apart, a crash loop at a container's memory limit; single nodes and replica-set members, 4.4 to 8.0.
RESTART_SHAPES = shapes().filter(lambda shape: shape.layout != "4.2")  # 4.4+: 4.4's FTDC stands for 5.0 too


@st.composite
def restarts(draw, case: str):
    shape = draw(RESTART_SHAPES)
    version = draw(st.sampled_from([None, "5.0.26"])) if shape.layout == "4.4" else None
    return shape, Restarts(
        case,
        processes=draw(st.integers(3, 10) if case == "oom_loop" else st.integers(4, 8)),
        standalone=draw(st.booleans()),
        same_pid=draw(st.booleans()),
        version=version,
        hours_apart=draw(st.floats(2.0, 48.0)),
        limit_mb=draw(st.sampled_from([2048, 4096, 8192, 16384])),
        cache_share=draw(st.floats(0.3, 0.8)),
    )


RESTARTS = st.sampled_from(["interleaved", "developer", "oom_loop"]).flatmap(restarts)


# Issue 39 §3: a disk busy with another process's writes (a file copy onto the volume, another database), mongod's own a tenth.
OTHER_WRITES = MEMBERS.flatmap(
    lambda shape: incidents("disk_saturation", shape).map(lambda i: (shape, replace(i, other_writes=True)))
)
# ...and one busy with mongod's own I/O, its work named (every kind's family draws these too, judged only on the window).
OWN_DISK = MEMBERS.flatmap(lambda shape: incidents("disk_saturation", shape).map(lambda i: (shape, i)))
# A role change with no log beside the FTDC, or with one (issue 39 §1): planned (a replSetStepDown this node carried out, an
# election it called on a step-up request, by priority or to catch up, another member taking over while it answered) or a
# failover, told from the node's own counters and its log's lines; replica-set members, 4.4 to 8.0 (5.0 on 4.4's layout).
ROLE_CHANGES = RESTART_SHAPES.flatmap(
    lambda shape: st.tuples(
        st.just(shape),
        st.builds(
            RoleChange,
            how=st.sampled_from([*PLANNED_CHANGES, "failover"]),
            version=st.sampled_from([None, "5.0.26"]) if shape.layout == "4.4" else st.none(),
            logged=st.booleans(),
        ),
    )
)


# CPU saturation told as whose CPU it was (mongod's own work, another process's, the hypervisor's steal), on single nodes
# and replica-set members alike; and hosts that must stay quiet: every core busy with no thread waiting (up to an hour),
# a saturation shorter than a minute (at most 58 s less two sampling periods: a window reaches back one sample and a
# single sample stands for one period), a host rebooted for 1-10 minutes with its CPUs under the bar on both sides.
CPU_CASES = MEMBERS.flatmap(lambda shape: incidents("cpu_saturation", shape).map(lambda i: (shape, i)))


@st.composite
def cpu_quiet(draw):
    shape = draw(MEMBERS)
    variant = draw(st.sampled_from(CPU_QUIET))
    lengths = {"busy": _length(shape, 60), "spike": st.integers(5, 58 - 2 * shape.period_s), "reboot": st.integers(60, 600)}
    return shape, Incident("cpu_saturation", draw(lengths[variant]), draw(FACTORS), variant, draw(STRENGTHS))


CPU_QUIET_CASES = cpu_quiet()
