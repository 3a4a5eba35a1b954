"""Where the bundled demo node and scenarios are, so a notebook runs from any working directory.

The checkout's `samples/` sits beside the `analysis` package (an editable install or a checkout on
`sys.path`); from an installed wheel, the nearest `samples/` above the working directory is used.
"""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]


def samples_dir(cwd: Path | None = None) -> Path:
    """The `samples/` folder holding the demo's `diagnostic.data`: relative to the working directory
    when it is below it (what a notebook then shows reads `samples/mongod.log`), else absolute."""
    here = (cwd or Path.cwd()).resolve()
    for folder in (CHECKOUT, here, *here.parents):
        if (folder / "samples" / "diagnostic.data").is_dir():
            found = folder / "samples"
            return found.relative_to(here) if found.is_relative_to(here) else found
    raise FileNotFoundError(
        f"no samples/diagnostic.data beside {CHECKOUT} or above {here}: "
        "give the notebook's DIAG parameter your node's diagnostic.data"
    )
