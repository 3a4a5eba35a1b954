"""Every notebook runs top to bottom in a clean Jupyter kernel against the bundled samples.

nbclient starts a new `python3` kernel (this interpreter) per notebook, in a new temporary
working directory, not notebooks/ (the notebooks find the samples themselves: issue 20 §6), and
fails on the first cell that raises. Content checks append one cell, in memory only, that prints
what they need as JSON. docs/notebooks/ holds each notebook's executed copy (`notebooks/execute.py`):
current, complete and without errors.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

import pytest
from conftest import require_module

nbformat = require_module("nbformat")
require_module("nbclient")
from notebooks.execute import executed  # noqa: E402  (how the copies in docs/notebooks/ are made; needs nbclient)

pytestmark = pytest.mark.notebooks

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
COPIES = NOTEBOOK_DIR.parent / "docs" / "notebooks"
RICH_HTML = 'class="ftdc-analyze"'  # analysis.outputs.render: Analysis and Finding in Jupyter

# Per notebook: a cell appended after the last one, printing one line of JSON.
PROBES = {
    "why_latency_spiked.ipynb": """
import json as _json
_worst = worst.row(0, named=True)
_around = frame.filter(pl.col("start").is_between(_worst["start"] - pl.duration(minutes=3), _worst["start"] + pl.duration(minutes=3)))
_trigger = in_effect.filter(pl.col("start").is_between(_worst["start"] - pl.duration(minutes=3), _worst["start"] + pl.duration(minutes=3)))
print(_json.dumps({
    "write_latency_ms": _worst["write_latency_ms"],
    "checkpoint": _worst["checkpoint"],
    "write_tickets_available": _worst["write_tickets_available"],
    "dirty_pct_max": _around["dirty_pct"].max(),
    "app_evictions_max": _around["app_evictions"].max(),
    "dirty_trigger_drawn": _trigger["eviction_dirty_trigger_pct"].unique().to_list(),
    "fill_trigger_drawn": in_effect["eviction_trigger_pct"].unique().to_list(),
    "dirty_trigger": result.thresholds.value("eviction_dirty_trigger"),
    "fill_trigger": result.thresholds.value("eviction_trigger"),
}))
""",
    "investigate_node.ipynb": """
import json as _json
print(_json.dumps({
    "problems": len(result.problems),
    "top": {"kind": top.kind, "start": top.start.isoformat(), "end": top.end.isoformat(),
            "culprit": [top.culprits[0].ns, top.culprits[0].plan_summary] if top.culprits else None},
    "window": {"rows": window.height, "first": window["start"].min().isoformat(), "last": window["start"].max().isoformat(),
               "dirty_pct_max": window["dirty_pct"].max()},
    "overlapping": overlapping.height,
    "longest": [overlapping["ns"][0], overlapping["plan_summary"][0]] if overlapping.height else None,
    "overlap_ok": overlapping.filter((pl.col("started") > top.end) | (pl.col("ts") < top.start)).height == 0,
}))
""",
    "fleet_questions.ipynb": """
import json as _json
_series_worst = series.group_by("node").agg(pl.col("writes_latency_ms").max()).collect()
_top = explained.row(0, named=True)
print(_json.dumps({
    "nodes": facts.height, "given": len(NODES), "families": sorted(facts["family"].unique()),
    "written": sorted(p.stem for p in (DATASET / "nodes").glob("*.parquet")) == sorted(facts["node"]),
    "sql_worst": {r["node"]: r["worst_ms"] for r in slow_writes.iter_rows(named=True)},
    "series_worst": {r["node"]: r["writes_latency_ms"] for r in _series_worst.iter_rows(named=True)},
    "dirty_top": cache.row(0, named=True)["node"], "dirty_top_seconds": cache.row(0, named=True)["seconds_past_dirty_trigger"],
    "family_of": dict(facts.select("node", "family").iter_rows()),
    "slowest": _top["node"], "slowest_incident": _top["incident"], "slowest_root_cause": _top["root_cause"],
    "incidents": incidents.filter(pl.col("error").is_null()).height,
}, default=str))
""",
}


@functools.cache
def execute(notebook: Path) -> tuple[nbformat.NotebookNode, dict | None]:
    """The executed notebook (raises nbclient's CellExecutionError, with the traceback, on
    any cell error) and what its probe printed."""
    nb = nbformat.read(notebook, as_version=4)
    probe = PROBES.get(notebook.name)
    if probe:
        nb.cells.append(nbformat.v4.new_code_cell(probe.strip()))
    nb = executed(nb)
    values = None
    if probe:
        printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream" and o.name == "stdout")
        values = json.loads(printed.strip().splitlines()[-1])
    return nb, values


def outputs(nb: nbformat.NotebookNode, mime: str) -> list[str]:
    return [o["data"][mime] for c in nb.cells if c.cell_type == "code" for o in c.outputs if mime in o.get("data", {})]


def test_notebooks_are_stored_without_outputs():
    assert NOTEBOOKS, "no notebook in notebooks/"
    for notebook in NOTEBOOKS:
        nb = nbformat.read(notebook, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, f"{notebook.name}: no code"
        assert all(c.outputs == [] and c.execution_count is None for c in code), f"{notebook.name}: outputs not stripped"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_in_a_clean_kernel(notebook):
    nb, _ = execute(notebook)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    # A notebook that plots shows its figures (nothing switched matplotlib away from inline).
    if any("plt." in c.source for c in code):
        assert outputs(nb, "image/png"), f"{notebook.name} plots but showed no figure"


def test_demo_notebook_finds_the_incident():
    _, values = execute(NOTEBOOK_DIR / "why_latency_spiked.ipynb")
    assert values["write_latency_ms"] > 10
    assert values["checkpoint"] == 1 and values["write_tickets_available"] == 0
    assert values["app_evictions_max"] > 0
    # The trigger lines are the node's effective thresholds, and dirty data went past the one in effect.
    assert values["dirty_trigger_drawn"] == [values["dirty_trigger"]] and values["fill_trigger_drawn"] == [values["fill_trigger"]]
    assert values["dirty_pct_max"] > values["dirty_trigger"]


def test_investigation_notebook_drills_into_the_worst_finding():
    nb, values = execute(NOTEBOOK_DIR / "investigate_node.ipynb")
    assert values["problems"] >= 1
    # The Analysis and its top Finding rendered as the report's HTML cards.
    assert len([h for h in outputs(nb, "text/html") if RICH_HTML in h]) >= 2
    assert len(outputs(nb, "image/png")) >= 2  # the timeline and the drill-down
    top, window = values["top"], values["window"]
    start, end = dt.datetime.fromisoformat(top["start"]), dt.datetime.fromisoformat(top["end"])
    first, last = dt.datetime.fromisoformat(window["first"]), dt.datetime.fromisoformat(window["last"])
    pad = dt.timedelta(seconds=30)
    assert window["rows"] > 0 and start - pad <= first <= start and end <= last <= end + pad
    assert values["overlapping"] >= 1 and values["overlap_ok"]
    # On the demo, the log's longest overlapping operation is the culprit the finding names: the COLLSCAN.
    assert top["culprit"] == values["longest"] == ["shop.orders", "COLLSCAN"]


def test_fleet_notebook_answers_from_the_whole_dataset():
    _, values = execute(NOTEBOOK_DIR / "fleet_questions.ipynb")
    # Every scenario node is in the dataset, every version family the scenarios cover.
    assert values["nodes"] == values["given"] == 15 and values["written"]
    assert values["families"] == ["mongod-4.2", "mongod-6.0", "mongod-7.0", "mongod-8.0"]
    # DuckDB's Δlatency / Δops over the raw samples is the derived series' interval latency, node by node.
    assert values["sql_worst"].keys() == values["series_worst"].keys()
    for node, worst in values["sql_worst"].items():
        assert worst == pytest.approx(values["series_worst"][node], rel=0.01, abs=0.1), node
    # The node longest past its dirty trigger is the 8.0 scenario that injected dirty cache; the slowest writer's
    # worst second falls inside one of its incidents.
    assert values["family_of"][values["dirty_top"]] == "mongod-8.0" and values["dirty_top_seconds"] > 60
    assert values["slowest_incident"] is not None and values["slowest_root_cause"] and values["incidents"] >= 10


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_executed_copy_is_current_and_readable(notebook):
    """docs/notebooks/ holds the notebook as it ran: the same code, every cell's outputs, no error."""
    copy = COPIES / notebook.name
    assert copy.is_file(), f"{copy} missing: python notebooks/execute.py"
    source, ran = nbformat.read(notebook, as_version=4), nbformat.read(copy, as_version=4)
    assert [c.source for c in ran.cells] == [c.source for c in source.cells], f"{copy} is stale: python notebooks/execute.py"
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code) and sum(bool(c.outputs) for c in code) >= len(code) - 1
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
