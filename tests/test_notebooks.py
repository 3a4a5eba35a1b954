"""Every notebook's code cells run top to bottom against the bundled samples."""

import json
from pathlib import Path

import matplotlib
import polars as pl
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def run_cells(notebook: Path, monkeypatch) -> dict:
    matplotlib.use("Agg")
    monkeypatch.chdir(notebook.parent)
    cells = json.loads(notebook.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert code, "a notebook without code"
    namespace: dict = {}
    for source in code:
        exec(compile(source, notebook.name, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook, monkeypatch):
    run_cells(notebook, monkeypatch)


def test_demo_notebook_finds_the_incident(monkeypatch):
    namespace = run_cells(NOTEBOOK_DIR / "why_latency_spiked.ipynb", monkeypatch)
    worst = namespace["worst"].row(0, named=True)
    assert worst["write_latency_ms"] > 10
    assert worst["checkpoint"] == 1 and worst["write_tickets_available"] == 0
    around = namespace["frame"].filter(pl.col("start").is_between(worst["start"] - pl.duration(minutes=3), worst["start"] + pl.duration(minutes=3)))
    assert around["dirty_pct"].max() > 20 and around["app_evictions"].max() > 0
