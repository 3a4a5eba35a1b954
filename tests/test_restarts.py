"""Restarts and restart loops as they happened (issue 39 §1): a restart is a new process, never one process's samples
interleaved with another's; a loop is processes living minutes that come back promptly, one finding however long it
lasts, with each process's life and each downtime as they were, and the out-of-memory killer's signature where the
resident memory reached the memory limit."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.findings.detectors.restart_loop import PROMPT_RETURN, SHORT_LIFE, loops
from analysis.outputs.console import render_overview
from analysis.series.derived import prepare
from analysis.series.metrics import resolve
from analysis.workbench.overview import Overview
from ftdc.metadata import NodeInfo
from samples.families import Restarts, Shape, analyzed_restarts, failures, restart_failures

SS = "serverStatus."
T0 = dt.datetime(2024, 5, 6, 9, 0, tzinfo=dt.timezone.utc)
MIN = 60


def sampled(processes: list[tuple], period: float = 10.0) -> pl.DataFrame:
    """A prepared frame of processes (first sampled at second, lived seconds, pid, and optionally how long it had run at
    its first sample), each sampled every `period` seconds with its uptime, in time order (samples of processes alive at
    once interleave)."""
    rows = [
        (T0 + dt.timedelta(seconds=began + k * period), pid, int((k * period + ran) * 1000) + 1500)
        for began, lived, pid, *older in processes
        for ran in [older[0] if older else 0]
        for k in range(int(lived // period) + 1)
    ]
    times, pids, uptimes = zip(*sorted(rows))
    raw = pl.DataFrame({"start": list(times), SS + "pid": list(pids), SS + "uptimeMillis": list(uptimes)})
    return prepare(raw, resolve(raw.columns))


def lives(spans: list[tuple[float, float]], pid=lambda i: 100 + i) -> list[tuple[float, float, int]]:
    """Processes one after another: (how long each lived, how long the node was down after it) in seconds."""
    out, at = [], 0.0
    for i, (lived, down) in enumerate(spans):
        out.append((at, lived, pid(i)))
        at += lived + down
    return out


def restarts(frame: pl.DataFrame) -> list[dt.datetime]:
    return frame.filter(pl.col("restart"))["start"].to_list()


def test_one_process_sampled_twice_over_is_no_restart():
    # A 3.6 laptop "restarted 5 times in 6.0 s": two lines of one pid whose uptimes differ, their samples interleaved.
    frame = sampled([(0, 600, 4242), (5, 600, 4242)])
    assert restarts(frame) == []
    # and no rate is taken from one line's sample to the other's
    assert not frame["valid"].any()


def test_two_processes_whose_files_overlap_are_no_restart_and_a_real_one_after_them_is_one():
    # Two mongod processes of different pids read together, then one process replacing both.
    frame = sampled([(0, 600, 11), (3, 600, 22), (700, 300, 33)])
    assert restarts(frame) == [T0 + dt.timedelta(seconds=700)]


def test_a_container_restarted_under_the_same_pid_is_a_restart():
    frame = sampled(lives([(600, 20), (600, 0)], pid=lambda i: 1))
    assert restarts(frame) == [T0 + dt.timedelta(seconds=620)]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(60, 3 * 3600), st.integers(30, 2 * 86400)), min_size=1, max_size=8),
    st.booleans(),
    st.integers(0, 3),
)
def test_restarts_are_the_new_processes_however_their_samples_interleave(spans, same_pid, copies):
    """Processes one after another, each beside `copies` lines of its pid whose uptimes run ahead of its own (their
    samples interleave with its own, the uptime jumping back and forth): one restart per new process, at its first
    sample."""
    processes = lives(spans, pid=(lambda i: 1) if same_pid else (lambda i: 100 + i))
    shifted = [(began + 3 * (c + 1), lived, pid, 40 * (c + 1)) for c in range(copies) for began, lived, pid in processes]
    frame = sampled(processes + shifted)
    assert restarts(frame) == [T0 + dt.timedelta(seconds=began) for began, _, _ in processes[1:]]


def test_a_developer_starting_a_container_hours_apart_is_no_loop():
    # "restarted 3 times in 15 d 2 h": processes living minutes, the node down for hours or days between them.
    frame = sampled(lives([(5 * MIN, 9 * 3600), (8 * MIN, 3 * 86400), (4 * MIN, 5 * 3600), (6 * MIN, 0)]))
    assert len(restarts(frame)) == 3 and loops(frame) == []


def test_a_node_down_longer_than_a_supervisor_waits_between_short_lives_is_no_loop():
    # The window: lived 47 min, 2 min, 8 min and 2 min, down 22 min, 80 s, 2 h 45 min and 1 min.
    frame = sampled(lives([(47 * MIN, 22 * MIN), (2 * MIN, 80), (8 * MIN, 165 * MIN), (2 * MIN, 60), (10 * MIN, 0)]))
    assert len(restarts(frame)) == 4 and loops(frame) == []


def test_a_loop_tells_each_life_and_each_downtime_as_they_were():
    spans = [(47 * MIN, 30), (2 * MIN, 80), (8 * MIN, 45), (2 * MIN, 60), (10 * MIN, 0)]
    [loop] = loops(sampled(lives(spans)))
    assert loop.lives_s == [2 * MIN, 8 * MIN, 2 * MIN]
    assert loop.downs_s == [30, 80, 45, 60]


def test_a_loop_of_weeks_with_calmer_stretches_is_one_loop():
    # Bursts of crashes minutes apart, a process living hours between them, the supervisor bringing it back each time.
    burst = [(3 * MIN, 20)] * 10
    frame = sampled(lives((burst + [(5 * 3600, 30)]) * 5 + burst + [(10 * MIN, 0)]), period=30)
    [loop] = loops(frame)
    assert len(loop.restarts) == len(restarts(frame)) == 65


@pytest.mark.parametrize(
    ("down", "looping"), [(PROMPT_RETURN.total_seconds() - 20, True), (PROMPT_RETURN.total_seconds() + 20, False)]
)
def test_a_loop_is_processes_back_within_a_supervisors_back_off(down, looping):
    life = SHORT_LIFE.total_seconds() / 3
    assert bool(loops(sampled(lives([(life, down)] * 5 + [(life, 0)])))) is looping


def test_the_terminal_header_gives_the_count_and_the_first_and_last_restart():
    moments = [T0 + dt.timedelta(minutes=100 * i) for i in range(282)]
    view = Overview(NodeInfo(), 1, T0, moments[-1], 1000, {1000: 999}, 10, 10, 0, restarts=moments)
    text = render_overview(view, 200)
    [line] = [line for line in text.splitlines() if "restart" in line]
    assert f"282, the first at 2024-05-06 09:00:00 UTC, the last at {moments[-1]:%Y-%m-%d %H:%M:%S} UTC" in line


@pytest.mark.parametrize(
    ("case", "layout", "standalone", "same_pid"),
    [
        ("interleaved", "6.0", True, True),
        ("developer", "7.0", False, True),
        ("developer", "8.0", True, False),
        ("oom_loop", "8.0-services", False, True),
        ("oom_loop", "6.0", True, False),
    ],
)
def test_simulated_restarts_are_told_as_they_happened(case, layout, standalone, same_pid):
    shape = Shape(layout=layout, seed=3)
    scenario, truth, result = analyzed_restarts(shape, Restarts(case, processes=4, standalone=standalone, same_pid=same_pid))
    assert failures(scenario, result) + restart_failures(truth, result) == []
    if case == "oom_loop":
        [incident] = result.incidents
        assert incident.root_cause.kind == "restart"
