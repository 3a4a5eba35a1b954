"""Writes the executed copy of every notebook to docs/notebooks/, readable without running it.

Each notebook runs in a clean kernel (the notebooks find the bundled samples themselves from any
working directory); tests/test_notebooks.py runs them from a new temporary directory, the copies
are run from the checkout so the paths they show read `samples/...`. A copy keeps its outputs,
figures included. Run it after changing a notebook (the test fails on a stale copy):

    python notebooks/execute.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Optional

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
COPIES = HERE.parent / "docs" / "notebooks"


def executed(nb: nbformat.NotebookNode, cwd: Optional[Path] = None) -> nbformat.NotebookNode:
    """`nb` run top to bottom in a clean kernel in `cwd`, by default a new temporary directory (raises on a cell error)."""
    with tempfile.TemporaryDirectory(prefix="notebook-") as elsewhere:
        NotebookClient(nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(cwd or elsewhere)}}).execute()
    return nb


def main() -> None:
    COPIES.mkdir(parents=True, exist_ok=True)
    for notebook in sorted(HERE.glob("*.ipynb")):
        nbformat.write(executed(nbformat.read(notebook, as_version=4), HERE.parent), COPIES / notebook.name)
        print(f"wrote {COPIES / notebook.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
