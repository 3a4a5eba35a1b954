"""Rich display in Jupyter: a `Finding` as the report's card, an `Analysis` as its findings."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from analysis.outputs.report import html
from ftdc.timeutil import say_window

if TYPE_CHECKING:
    from analysis.findings.finding import Finding
    from analysis.incidents.incident import Incident
    from analysis.observe import Analysis

SCOPE = "ftdc-analyze"


def _scoped_css() -> str:
    """The report's rules limited to one output (a notebook page shows many); its body rule dropped."""
    rules = []
    for rule in html.CSS.split("}"):
        if "{" not in rule:
            continue
        selectors, declarations = rule.split("{", 1)
        if selectors.strip() == "body":
            continue
        rules.append(",".join(f".{SCOPE} {s.strip()}" for s in selectors.split(",")) + "{" + declarations + "}")
    return "".join(rules)


def _styled(body: str) -> str:
    return f'<div class="{SCOPE}"><style>{_scoped_css()}</style>{body}</div>'


def finding_html(finding: Finding) -> str:
    return _styled(html.finding_html(finding))


def incident_html(incident: Incident) -> str:
    """The report's incident card (its plot needs the node's series: the report draws it)."""
    return _styled(html.incident_html(incident))


def analysis_html(analysis: Analysis) -> str:
    result = analysis.result  # what the analysis says: the Jupyter view draws no series
    view = result.overview
    span = say_window(*window, result.log_offset) if (window := view.window) else "no samples"
    head = (
        f"<p><b>{escape(result.node.address or 'node')}</b> · {escape(result.node.version or 'unknown version')} · "
        f"{escape(span)} · {view.samples:,} samples</p>"
    )
    problems = result.problems
    body = "".join(map(html.finding_html, problems)) if problems else "<p>No problems found: no warning or critical finding.</p>"
    context = [f for f in result.findings if f.severity == "info"]
    if context:
        body += (
            f"<details><summary>context ({len(context)})</summary><ul>"
            + "".join(f"<li>{escape(f.title)}</li>" for f in context)
            + "</ul></details>"
        )
    return _styled(head + body)
