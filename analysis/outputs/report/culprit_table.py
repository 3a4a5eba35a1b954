"""The culprit table's columns, shared by the HTML and Markdown reports: each says its base.

Seconds are operation-seconds (each run's time inside the window, summed: ten
operations at once for a minute are 600), so a column of them can exceed the
window; the share is of the time all slow operations worked there (their
operation-seconds less what the log says they waited), which ranks culprits.
An operation that failed (interrupted, a client that disconnected) says so
instead of leaving its plan blank; one the planner does not plan (an insert)
says it has no plan and no filter.
"""

from __future__ import annotations

from analysis.findings.culprits import operation_seconds
from analysis.findings.finding import Culprit
from analysis.workbench.log_overview import no_plan, shape_text, with_failures

HEADERS = (
    "namespace",
    "command",
    "plan",
    "runs",
    "op-seconds in window",
    "op-seconds working (less waits)",
    "share of working op-seconds",
    "longest ms",
    "shape",
)
NUMERIC = (False, False, False, True, True, True, True, True, False)
NOTE = (
    "op-seconds: each run's time inside the window, summed, so they can exceed the window; working: less what the log says "
    "the runs waited (cache, locks, tickets, disk); the share is of every slow operation's working op-seconds in the window."
)


def plan(c: Culprit) -> str:
    text = (c.plan_summary or "") + (" COLLSCAN" if c.collscan and "COLLSCAN" not in (c.plan_summary or "") else "")
    text = text.strip()
    if c.failed:
        return with_failures(text, c.failed, c.count, c.error)
    return text or no_plan(c.command)


def cells(c: Culprit) -> list[tuple[str, bool]]:
    """The row's texts, each with whether it is a number (right-aligned)."""
    values = (
        c.ns or "",
        c.command or "",
        plan(c),
        f"{c.count:,}",
        operation_seconds(c.overlap_s),  # as the culprit's sentence and the root cause's evidence say them
        operation_seconds(c.held_s),
        f"{c.share:.0%}",
        f"{c.max_ms:,}",
        shape_text(c.shape, c.query_hash, c.command)[0],
    )
    return list(zip(values, NUMERIC))
