"""The report's workbench sections as HTML: the slow-operation table (sortable in the page, the top
TOP_SHAPES shown, the rest one click away), connections by client, the log's warnings and errors,
the system panels, the configuration audit. Every string from input is escaped; numbers sort by
their `data-v` value, not their text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

import polars as pl

from analysis.outputs.system import SystemView
from analysis.workbench.audit import AuditItem
from analysis.workbench.log_overview import NO_SLOW_OPERATIONS, TOP_SHAPES, Workload, apps_text, plan_text, shape_text
from ftdc.timeutil import say_time

# Sorting and the "show all" buttons. Pinned by its hash in the page's Content-Security-Policy:
# no other script runs, and it requests nothing.
SCRIPT = """
(() => {
  const key = (row, i) => { const c = row.cells[i], v = c.dataset.v; return v === undefined ? c.textContent.trim() : v === '' ? -Infinity : +v; };
  const show = (table) => { const top = +(table.dataset.top || 0), all = !table.classList.contains('collapsed');
    [...table.tBodies[0].rows].forEach((r, n) => { r.hidden = !all && top > 0 && n >= top; }); };
  const sort = (th) => {
    const table = th.closest('table'), i = [...th.parentNode.children].indexOf(th), body = table.tBodies[0];
    const descending = th.getAttribute('aria-sort') !== 'descending';
    table.querySelectorAll('th[aria-sort]').forEach(h => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
    const rows = [...body.rows].sort((a, b) => { const x = key(a, i), y = key(b, i);
      const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return descending ? -order : order; });
    rows.forEach(r => body.appendChild(r));
    show(table);
  };
  document.addEventListener('click', (event) => {
    const th = event.target.closest('table.sortable thead th');
    if (th) { sort(th); return; }
    const button = event.target.closest('button.all');
    if (button) { const table = document.getElementById(button.dataset.table); table.classList.toggle('collapsed');
      show(table); button.textContent = table.classList.contains('collapsed') ? button.dataset.more : button.dataset.less; }
  });
  const open = () => { const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && target.tagName === 'DETAILS') target.open = true; };
  window.addEventListener('hashchange', open); open();
})();
"""

CSS = """
.wide{overflow-x:auto;max-width:100%}
table.sortable thead th{cursor:pointer;white-space:nowrap}
table.sortable thead th[aria-sort=descending]::after{content:" \\25BE"}table.sortable thead th[aria-sort=ascending]::after{content:" \\25B4"}
.collscan{color:#fff;background:#c62828;border-radius:3px;padding:0 4px;font-size:11px;font-weight:600}
td.shape code{display:inline-block;min-width:24em;max-width:40em;white-space:normal;word-break:break-all}
button.all{margin:4px 0;font:inherit;cursor:pointer}
.audit td:first-child{white-space:nowrap}
.badge.unrecorded{background:#fff;color:#444;border:1px dashed #757575}
"""


def _num(value, text: str | None = None) -> str:
    """A numeric cell: sorted by `value`, shown as `text`."""
    if value is None:
        return "<td class=num data-v=''>-</td>"
    return f"<td class=num data-v='{float(value)!r}'>{escape(text if text is not None else f'{value:,}')}</td>"


def _text(value: str | None, cls: str = "") -> str:
    return f"<td{f' class={cls}' if cls else ''}>{escape(value or '')}</td>"


def _time(value) -> str:
    return f"<td data-v='{value.timestamp()!r}'>{escape(say_time(value))}</td>" if value is not None else "<td data-v=''>-</td>"


def sortable(table_id: str, headers: Sequence[tuple[str, str]], rows: list[str], top: int = 0, noun: str = "rows") -> str:
    """A table sorted by a click on a header (`headers`: text, title), its first `top` rows shown and a button for the rest."""
    head = "".join(f"<th title='{escape(title)}'>{escape(text)}</th>" for text, title in headers)
    hidden = top > 0 and len(rows) > top
    body = "".join(row.replace("<tr>", "<tr hidden>", 1) if hidden and n >= top else row for n, row in enumerate(rows))
    button = (
        (
            f"<button class=all type=button data-table='{table_id}' data-more='show all {len(rows)} {noun}' data-less='show the top {top}'>"
            f"show all {len(rows)} {noun}</button>"
        )
        if hidden
        else ""
    )
    cls = "sortable collapsed" if hidden else "sortable"
    return (
        f"<div class=wide><table id='{table_id}' class='{cls}' data-top='{top if hidden else 0}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>{button}"
    )


QUERY_HEADERS = (
    ("namespace", ""),
    ("operation", "the command"),
    ("plan", "plan summaries seen; COLLSCAN marked"),
    ("count", "slow runs logged"),
    ("total s", "sum of the runs' durations"),
    ("p50 ms", ""),
    ("p95 ms", ""),
    ("p99 ms", ""),
    ("max ms", ""),
    ("keys / returned", "index keys examined per document returned"),
    ("docs / returned", "documents examined per document returned"),
    ("clients", "application names that ran it"),
)
WORKING_HEADERS = (
    ("working s", "8.0 workingMillis summed: time not waiting"),
    ("queued s", "time queued for an execution ticket"),
)


def _per(numerator, denominator) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def _query_row(row: dict, working: bool) -> str:
    collscan = "<span class=collscan>COLLSCAN</span> " if (row["collscan_share"] or 0) > 0 else ""
    plan_cell = f"<td>{collscan}{escape(plan_text(row))}</td>"
    keys = _per(row["keys_examined"], row["nreturned"])
    docs = row["docs_examined_per_returned"]
    cells = [
        _text(row["ns"]),
        _text(row["command"]),
        plan_cell,
        _num(row["count"]),
        _num(row["total_ms"] / 1000, f"{row['total_ms'] / 1000:,.1f}"),
        # A shape whose runs logged no duration a number can hold has no percentile.
        *(_num(row[k], f"{row[k]:,.0f}" if row[k] is not None else None) for k in ("p50_ms", "p95_ms", "p99_ms")),
        _num(row["max_ms"]),
        _num(keys, f"{keys:,.1f}" if keys is not None else None),
        _num(docs, f"{docs:,.1f}" if docs is not None else None),
        _text(apps_text(row["apps"])),
    ]
    if working:
        runs = row["working_runs"]
        cells += [
            _num(row["working_ms"] / 1000 if runs else None, f"{row['working_ms'] / 1000:,.1f}" if runs else None),
            _num(row["queued_ms"] / 1000 if runs else None, f"{row['queued_ms'] / 1000:,.1f}" if runs else None),
        ]
    shape, code = shape_text(row["shape"], row["query_hash"], row["command"])
    shown = f"<code>{escape(shape)}</code>" if code else escape(shape)
    return "<tr>" + "".join(cells) + f"<td class=shape>{shown}</td></tr>"


def slow_operations(workload: Workload, slug: str) -> str:
    frame = workload.queries
    if frame.is_empty():
        return f"<p>{NO_SLOW_OPERATIONS}</p>"
    working = bool(frame["working_runs"].sum())
    headers = (
        QUERY_HEADERS
        + (WORKING_HEADERS if working else ())
        + (("shape", "the query's shape: field names and operators, no value"),)
    )
    rows = [_query_row(row, working) for row in frame.iter_rows(named=True)]
    beyond = (
        f" (the {frame.height:,} with the most total time of {workload.shapes:,}; the JSON report holds the same)"
        if workload.shapes > frame.height
        else ""
    )
    note = (
        f"<p class=window>Every query shape the log holds for the report's span{beyond}, most total time first; click a header to sort. "
        "Counts and percentiles are those the logs command gives (per-statement WRITE lines counted once, by their command)."
        + (" Working and queued: 8.0's workingMillis and ticket queueing, summed." if working else "")
        + "</p>"
    )
    return note + sortable(f"{slug}-slow-ops", headers, rows, TOP_SHAPES, "shapes")


def _frame_table(
    table_id: str, frame: pl.DataFrame, headers: Sequence[tuple[str, str]], cell: Callable[[dict], str], top: int, noun: str
) -> str:
    return sortable(table_id, headers, ["<tr>" + cell(row) + "</tr>" for row in frame.iter_rows(named=True)], top, noun)


def connections(workload: Workload, slug: str) -> str:
    if workload.connections.is_empty():
        return "<p>The log holds no client metadata line (mongod logs one per connection that sends it, 4.4+ JSON logs).</p>"
    return _frame_table(
        f"{slug}-clients",
        workload.connections,
        (
            ("application", ""),
            ("driver", "driver name and version"),
            ("connections", "client metadata lines"),
            ("first", ""),
            ("last", ""),
        ),
        lambda r: _text(r["app"]) + _text(r["driver"]) + _num(r["connections"]) + _time(r["first"]) + _time(r["last"]),
        10,
        "clients",
    )


SEVERITY_NAMES = {"F": "fatal", "E": "error", "W": "warning"}


def messages(workload: Workload, slug: str) -> str:
    if workload.messages.is_empty():
        return "<p>No warning or error in the log.</p>"
    return _frame_table(
        f"{slug}-messages",
        workload.messages,
        (("severity", ""), ("id", "the log message id"), ("message", ""), ("count", ""), ("first", ""), ("last", "")),
        lambda r: (
            _text(SEVERITY_NAMES.get(r["severity"], r["severity"]))
            + _num(r["id"], str(r["id"]) if r["id"] is not None else None)
            + _text(r["msg"])
            + _num(r["count"])
            + _time(r["first"])
            + _time(r["last"])
        ),
        10,
        "messages",
    )


def system_notes(view: SystemView) -> str:
    unread = (
        f"<p class=window>Recorded in Windows' layout, which this version does not read: {escape(', '.join(view.unread))}.</p>"
        if view.unread
        else ""
    )
    return (f"<p class=window>Not recorded by this node: {escape(view.missing_said)}.</p>" if view.missing else "") + unread


def _badge(item: AuditItem) -> str:
    return item.severity if item.recorded or item.severity == "warning" else "unrecorded"


def _said(item: AuditItem) -> str:
    return item.severity if _badge(item) != "unrecorded" else "not recorded"


def audit(items: list[AuditItem]) -> str:
    if not items:
        return "<p>No configuration recorded.</p>"
    # An item the node's files do not record reads "not recorded" in its own badge, never the grey "info" of an item
    # that was checked and passed.
    rows = "".join(
        f"<tr><td><span class='badge {_badge(i)}'>{_said(i)}</span>{escape(i.title)}</td><td>{escape(i.has)}</td>"
        f"<td>{escape(i.recommended or '-')}</td><td>{escape(i.why)}</td><td>{escape(i.change or '-')}</td>"
        f"<td>{escape(i.source)}</td></tr>"
        for i in items
    )
    return (
        "<p class=window>Advice on the node's set-up, from its own files; none of it is an incident. "
        "What each item checks and the production notes behind it are in the Configuration audit page of ftdc-analyze's documentation.</p>"
        "<div class=wide><table class=audit><thead><tr><th>item</th><th>this node</th><th>recommended</th><th>why it matters</th>"
        "<th>what to change</th>"
        f"<th>from</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
