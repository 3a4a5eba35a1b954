"""A connection storm inside a stall of the server is told as the stall's effect; alone it keeps its own advice."""

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from analysis.findings.detectors import RELATE, connection_storm
from analysis.findings.detectors.connection_storm import BACK_OFF, CAP_POOLS, LOOK_FOR_WHY, STALLS, TIMED_OUT, relate
from analysis.findings.finding import Finding

T0 = dt.datetime(2024, 11, 18, 3, 40, 30, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def storm(start: float, severity: str = "critical") -> Finding:
    return Finding(
        "connection_storm",
        severity,
        at(start),
        at(start + 40),
        "Connection storm",
        "Clients opened 12,000 connections in 40 s.",
        recommendations=[CAP_POOLS, LOOK_FOR_WHY],
        statement="12,000 connections opened in 40 s",
    )


def stall(kind: str, start: float, end: float, severity: str = "critical") -> Finding:
    return Finding(kind, severity, at(start), at(end), "A 15 min checkpoint", "r", statement="write latency up to 26 ms")


def test_every_stall_a_storm_is_told_after_sets_one_off_and_relate_runs_after_detection():
    from analysis.findings.detectors import LINKS

    assert all(connection_storm.KIND in LINKS[kind] for kind in STALLS)
    assert relate in RELATE


@given(
    st.sampled_from(STALLS),
    st.floats(0, 1800),
    st.floats(1, 1800),
    st.floats(-600, 3000),
    st.sampled_from(["warning", "critical", "info"]),
)
def test_a_storm_that_began_in_a_stall_or_just_after_it_is_told_as_its_effect_and_alone_keeps_its_advice(
    kind, start, length, storm_start, severity
):
    found = relate([stall(kind, start, start + length, severity), storm(storm_start)])
    after = found[1]
    followed = severity != "info" and at(start) <= at(storm_start) <= at(start + length) + TIMED_OUT
    if followed:
        assert after.recommendations == [CAP_POOLS, BACK_OFF]
        assert (
            after.explanation.startswith("Clients opened") and "The storm followed a stall of the server: " in after.explanation
        )
        assert "a 15 min checkpoint: write latency up to 26 ms" in after.explanation
    else:
        assert after == storm(storm_start) and after.recommendations == [CAP_POOLS, LOOK_FOR_WHY] and not after.notes
    assert found[0] == stall(kind, start, start + length, severity)
