"""Rich display in Jupyter without the model depending on its renderer.

`Finding`, `Incident` and `Analysis` ask here for their HTML; the renderer
(`RENDERER`, which draws with the report package) is imported by name on the
first display, so importing the model never imports the report.
"""

from __future__ import annotations

import importlib
from typing import Any

RENDERER = "analysis.outputs.render"


def html(obj: Any) -> str:
    """`obj` as HTML: the renderer's `<type>_html` (finding_html, incident_html, analysis_html)."""
    renderer = importlib.import_module(RENDERER)
    return getattr(renderer, f"{type(obj).__name__.lower()}_html")(obj)
