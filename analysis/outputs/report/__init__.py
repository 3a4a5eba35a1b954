"""Incident reports: one file a colleague opens and understands in two minutes.

    write_report(build_report([analysis]), "incident.html")   # .html, .md (+ SVG folder) or .json
    write_explorer(explore(analysis, "diagnostic.data", "node"), "node.html")  # every metric on one time axis

`content` decides what the report says (once); `figures` chooses its pictures and `plots` draws them; `html`,
`markdown` and the JSON of `Report.to_dict` render it (`writers` builds and writes it). The names below are imported
when first used (`ftdc.lazy`): `explore` loads the explorer's modules, not the report's content, figures and formats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ftdc.lazy import lazy_exports

_EXPORTS = {
    "FORMATS": "writers",
    "Explorer": "explorer",
    "Redactor": "writers",
    "build_report": "writers",
    "explore": "explorer",
    "redact_result": "writers",
    "write_explorer": "explorer_page",
    "write_key": "writers",
    "write_report": "writers",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from analysis.outputs.report.explorer import Explorer, explore
    from analysis.outputs.report.explorer_page import write_explorer
    from analysis.outputs.report.writers import FORMATS, Redactor, build_report, redact_result, write_key, write_report
