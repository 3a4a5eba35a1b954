"""What the report's figures say besides their lines: a series the node did not record is said not recorded (never a
flat zero under a legend), the system panels carry the detectors' bars and the incidents' windows, member states
and critical windows have patterns beside their colours, span labels close together are joined."""

from __future__ import annotations

import dataclasses
import datetime as dt
from xml.etree import ElementTree

import polars as pl
import pytest

import analysis
from analysis.outputs.report import figures, plots
from analysis.outputs.system import view
from tests.test_browser import SAMPLES

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def demo():
    return analysis.analyze(SAMPLES / "diagnostic.data", SAMPLES / "mongod.log")


class Recorded:
    """A node's evidence as if its series were `series` (the figures read nothing else of it that would differ)."""

    def __init__(self, evidence, series: pl.DataFrame):
        self._evidence, self.series = evidence, series

    def __getattr__(self, name):
        return getattr(self._evidence, name)


def recorded(node, series: pl.DataFrame):
    """`node` with its evidence `Recorded` as `series`."""
    return dataclasses.replace(node, evidence=Recorded(node.evidence, series))


def of_class(fig: str, cls: str) -> list:
    return [e for e in ElementTree.fromstring(fig).iter() if e.get("class") == cls]


def test_a_series_not_recorded_is_said_so_and_not_drawn(demo):
    # The disk panel of a node whose device reported nothing over the range: no flat zero under a legend "sda".
    nulls = demo.series.with_columns(pl.lit(None, pl.Float64).alias("disk_util_pct.sda"), pl.lit(0.0).alias("disk_iops.sda"))
    node = recorded(demo, nulls)
    panels = [
        plots.Panel("disk busy, %", [("disk_util_pct.sda", "sda", None)]),
        plots.Panel("IOPS", [("disk_iops.sda", "sda", None)]),
    ]
    fig = plots.figure(panels, node, node.overview.first, node.overview.last, [])
    assert [e.text for e in of_class(fig, "zero")] == ["not recorded: sda", "zero throughout: sda"]
    assert of_class(fig, "series") == [] and of_class(fig, "legend") == []


def test_system_panels_carry_the_detectors_bars_and_the_incidents_windows(demo):
    fig = figures.system(demo, view(demo, {}))
    said = [e.text for e in of_class(fig, "threshold")]
    assert "disk saturation: busy 90 % and more" in said and "saturation critical: 100 ms per request" in said
    labels = ", ".join(e.text for e in of_class(fig, "span-label"))
    held = {f for i in demo.incidents for f in i.finding_ids}
    assert demo.incidents and all(i.id in labels for i in demo.incidents)
    assert not [f for f in held if f in labels.split(", ")]  # a finding an incident holds is shaded as the incident


def test_the_cpu_panels_carry_the_cpu_saturation_bars(demo):
    # The demo records four CPU states (busy, not runnable threads): its CPU panel carries the busy bar; a node that
    # records procs_running too has the runnable panel, with its bar at one thread per core.
    assert "CPU saturation: busy 90 % and more" in [e.text for e in of_class(figures.system(demo, view(demo, {})), "threshold")]
    node = recorded(demo, demo.series.with_columns(pl.lit(0.5).alias("runnable_per_core")))
    shown = view(node, {})
    assert ("runnable threads per core", ["runnable_per_core"]) in shown.panels
    said = [e.text for e in of_class(figures.system(node, shown), "threshold")]
    assert "CPU saturation: busy 90 % and more" in said and "more runnable threads than cores" in said


def test_states_and_critical_windows_have_patterns_beside_colours(demo):
    first = demo.overview.first
    states = demo.series.with_columns(
        pl.Series("member_state.0", [1] * (demo.series.height // 2) + [2] * (demo.series.height - demo.series.height // 2)),
        pl.lit(3).alias("member_state.1"),
    )
    node = recorded(demo, states)
    panel = plots.Panel(figures.STATES_TITLE, [("member_state.0", "a", None), ("member_state.1", "b", None)], states=True)
    fig = plots.figure(
        [panel], node, first, demo.overview.last, [plots.Span(first, first + dt.timedelta(minutes=1), "critical", "I1")]
    )
    fills = {r.get("fill") for r in ElementTree.fromstring(fig).iter(f"{SVG}rect")}
    assert any(f.endswith("-stripes)") for f in fills) and any(f.endswith("-cross)") for f in fills)  # secondary, other
    assert plots.STATE_COLORS[1] in fills  # primary, solid
    assert of_class(fig, "critical-window") and "striped" in figures.STATES_TITLE and "hatched" in " ".join(plots.KEY)


def test_span_labels_close_together_are_joined_and_stay_in_the_plot_area():
    x = plots.LEFT + plots.PIXELS - 30
    joined = plots._joined([(x, "F1"), (x + 10, "F2"), (plots.LEFT + 4, "F3")])
    assert [t for _, t in joined] == ["F3", "F1, F2"]
    assert all(a + plots._width(t) <= plots.LEFT + plots.PIXELS for a, t in joined)
    many = plots._joined([(plots.LEFT + 4 + k, f"F{k}") for k in range(60)])
    assert [t for _, t in many] == ["F0 … F59, 60 windows"]


GRID = {"#b0b0b0", "#d8d8d8"}  # the time grid's and the value grid's strokes
BAND = {"zero", "threshold", "span-label", "mark-label"}


def test_grid_lines_stop_short_of_the_texts_along_a_panels_top(demo):
    # "zero throughout: iowait" sat on the 100 % line: the grid's lines and the windows' edges run beside a text,
    # never through it.
    import re

    checked = 0
    for fig in (figures.incident(demo, demo.incidents[0]), figures.timeline(demo), figures.system(demo, view(demo, {}))):
        root = ElementTree.fromstring(fig)
        for panel in (e for e in root.iter() if e.get("class") == "panel"):
            texts = [e for e in panel.iter(f"{SVG}text") if e.get("class") in BAND]
            if not any(e.get("class") == "span-label" for e in texts):
                texts += [e for e in root.iter(f"{SVG}text") if e.get("class") in {"span-label", "mark-label"}]
            boxes = [
                (float(t.get("x")), float(t.get("y")) - 13, float(t.get("x")) + plots._width(t.text), float(t.get("y")) + 3)
                for t in texts
            ]
            for path in (p for p in panel.iter(f"{SVG}path") if p.get("stroke") in GRID or p.get("class") == "window-edge"):
                for x, a, b in re.findall(r"M([\d.]+) ([\d.]+)V([\d.]+)", path.get("d")):
                    x, a, b = float(x), float(a), float(b)
                    hit = [box for box in boxes if box[0] < x < box[2] and a < box[3] and b > box[1]]
                    assert not hit, (panel.get("data-title"), x, a, b, hit)
                for a, y, b in re.findall(r"M([\d.]+) ([\d.]+)H([\d.]+)", path.get("d")):
                    a, y, b = float(a), float(y), float(b)
                    hit = [box for box in boxes if box[1] < y < box[3] and a < box[2] and b > box[0]]
                    assert not hit, (panel.get("data-title"), y, a, b, hit)
                checked += 1
    assert checked > 10
