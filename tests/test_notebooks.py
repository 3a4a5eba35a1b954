"""Every notebook runs top to bottom in a clean Jupyter kernel against the bundled samples.

nbclient starts a new `python3` kernel (this interpreter) per notebook, in notebooks/ as
Jupyter would (the notebooks read ../samples), and fails on the first cell that raises.
Content checks append one cell, in memory only, that prints what they need as JSON.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
RICH_HTML = 'class="ftdc-analyze"'  # analysis.render: Analysis and Finding in Jupyter

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
}


@functools.lru_cache(maxsize=None)
def execute(notebook: Path) -> tuple[nbformat.NotebookNode, dict | None]:
    """The executed notebook (raises nbclient's CellExecutionError, with the traceback, on
    any cell error) and what its probe printed."""
    nb = nbformat.read(notebook, as_version=4)
    probe = PROBES.get(notebook.name)
    if probe:
        nb.cells.append(nbformat.v4.new_code_cell(probe.strip()))
    NotebookClient(nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(NOTEBOOK_DIR)}}).execute()
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
