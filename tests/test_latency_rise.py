"""A sustained rise in latency (issue 39 §3): an hour of read and write latency at about 3× its usual is an incident
even when no mechanism matched, told with what moved beside it (a shard's chunk migrations and range deletions) or,
where nothing known did, saying so; an idle node, a handful of slow operations and a rise another finding explains
raise nothing of it. Family draws are judged on the window, the root cause and the words."""

import datetime as dt
import os
import random
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

from hypothesis import example, given, settings

import analysis
from analysis.findings.detectors import latency_rise
from analysis.findings.finding import Finding
from samples.families import T0, Baseline, Incident, Shape, analyzed, build, failures
from samples.family_strategies import cases
from samples.simulate import write_ftdc

EXAMPLES = int(os.environ.get("FTDC_FAMILY_EXAMPLES", "8"))


def judged(shape: Shape, incident: Incident) -> list[str]:
    """`failures` (window, root cause, nothing else raised, advice), and the words: a rise with migrations names them as
    its root cause; one with nothing beside it says that nothing the node records moved, in the finding and the root cause."""
    scenario, result = analyzed(build, shape, incident)
    wrong = failures(scenario, result)
    rises = [f for f in result.problems if f.kind == "latency_rise"]
    for f in rises:
        if incident.variant == "migrations" and "chunk migration" not in f.statement:
            wrong.append(f"migrations not told beside the rise: {f.title}")
        if incident.variant == "" and f.statement != "nothing the node records moved with it":
            wrong.append(f"a rise with nothing beside it told as: {f.title}")
    for i in result.incidents:
        if incident.variant == "" and "nothing the node records moved" not in i.root_cause.summary:
            wrong.append(f"root cause does not say nothing moved: {i.root_cause.summary}")
        if "latency_rise" in i.title:
            wrong.append(f"internal name in the title: {i.title}")
    return wrong


@settings(max_examples=EXAMPLES)
# An hour of reads and writes at 3× their usual raised nothing before the detector: with a shard's migrations, and with none.
@example(case=(Shape(), Incident("latency_rise", 3600, 3.0, "", 0.5)))
@example(case=(Shape(layout="8.0", period_s=5), Incident("latency_rise", 3600, 3.0, "migrations", 0.5)))
@example(case=(Shape(layout="4.2", period_s=10, checkpoint_interval=120), Incident("latency_rise", 1500, 2.5, "migrations", 1.0)))
@given(case=cases("latency_rise"))
def test_a_sustained_rise_is_found_with_what_moved_beside_it(case):
    assert judged(*case) == []


def test_a_rise_another_finding_explains_is_not_told_twice():
    # An hour of a saturated disk slows every operation 4×: the disk's finding tells it, the rise is not a second one.
    scenario, result = analyzed(build, Shape(), Incident("disk_saturation", 3600, 4.0))
    assert failures(scenario, result) == []
    assert not [f for f in result.findings if f.kind == "latency_rise"]


def _rise(start_min: float, end_min: float) -> Finding:
    return Finding(
        "latency_rise", "warning", T0 + dt.timedelta(minutes=start_min), T0 + dt.timedelta(minutes=end_min), "rise", ""
    )


def _other(start_min: float, end_min: float) -> Finding:
    return Finding(
        "cache_pressure", "warning", T0 + dt.timedelta(minutes=start_min), T0 + dt.timedelta(minutes=end_min), "Cache", ""
    )


def test_relate_drops_a_rise_others_cover_and_notes_those_that_touch_it():
    covered = latency_rise.relate([_rise(0, 60), _other(0, 20), _other(15, 40)])  # 40 of its 60 minutes
    assert [f.kind for f in covered] == ["cache_pressure", "cache_pressure"]
    touched = latency_rise.relate([_rise(0, 60), _other(50, 70)])
    assert [f.kind for f in touched] == ["latency_rise", "cache_pressure"]
    assert touched[0].notes and "Cache" in touched[0].notes[0]


def _quiet_rise(out: Path, reads: float, writes: float, factor: float, minutes: int = 90) -> Path:
    """A node whose reads and writes run `factor` times slower from minute 20 to minute 80, at these rates."""
    shape = Shape()
    base = Baseline(shape)
    rng = random.Random(5)

    def plan(s: int):
        tick = replace(base(s), reads=reads * rng.uniform(0.5, 1.5), writes=writes * rng.uniform(0.5, 1.5), commands=2)
        if 20 * 60 <= s < 80 * 60:
            return replace(tick, read_latency_us=tick.read_latency_us * factor, write_latency_us=tick.write_latency_us * factor)
        return tick

    write_ftdc(out / "diagnostic.data", shape.config(), T0, minutes * 60, plan, period=10)
    return out / "diagnostic.data"


def test_an_idle_node_does_not_raise_it():
    # A handful of operations a second at 5× their usual for an hour: their latency says nothing of the node.
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idle = analysis.analyze(_quiet_rise(Path(folder), reads=3, writes=1, factor=5))
        assert not [f for f in idle.findings if f.kind == "latency_rise"]
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        busy = analysis.analyze(_quiet_rise(Path(folder), reads=300, writes=100, factor=5))
        (rise,) = [f for f in busy.findings if f.kind == "latency_rise"]
        assert rise.evidence["baseline"]["minutes"] >= latency_rise.MIN_BASELINE_MINUTES
        assert "samples, this process's" in rise.reasoning  # what the baseline rests on


def test_a_handful_of_slow_operations_do_not_raise_it():
    # Four slow seconds a minute at 50×: the minute's mean latency triples, its median sample does not move.
    shape = Shape()
    base = Baseline(shape)
    rng = random.Random(9)
    slow = set(rng.sample(range(15 * 60, 75 * 60), 240))

    def plan(s: int):
        tick = base(s)
        return replace(tick, write_latency_us=tick.write_latency_us * 50) if s in slow else tick

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_ftdc(Path(folder) / "diagnostic.data", shape.config(), T0, 90 * 60, plan, period=1)
        result = analysis.analyze(Path(folder) / "diagnostic.data")
    assert not [f for f in result.findings if f.kind == "latency_rise"]


def test_a_load_that_rose_with_it_is_told_beside_it():
    # Twice the operations and three times the latency for 40 minutes: the rise says the load rose, with both rates.
    shape = Shape()
    base = Baseline(shape)

    def plan(s: int):
        tick = base(s)
        if 15 * 60 <= s < 55 * 60:
            tick = replace(tick, reads=tick.reads * 2, writes=tick.writes * 2, commands=tick.commands * 2)
            return replace(tick, read_latency_us=tick.read_latency_us * 3, write_latency_us=tick.write_latency_us * 3)
        return tick

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_ftdc(Path(folder) / "diagnostic.data", shape.config(), T0, 70 * 60, plan, period=1)
        result = analysis.analyze(Path(folder) / "diagnostic.data")
    (rise,) = [f for f in result.findings if f.kind == "latency_rise"]
    assert rise.statement.startswith("the operations per second rose to")
    moved = rise.evidence["moved"]["finished_per_s"]
    assert moved["now"] >= 1.8 * moved["usual"] and not rise.evidence["nothing_moved"]
    assert "nothing the node records moved" not in result.incidents[0].root_cause.summary
