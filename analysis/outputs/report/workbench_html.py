"""The report's workbench sections as HTML: the slow-operation table (sortable in the page, the top
TOP_SHAPES shown, the rest one click away), connections by client, the log's warnings and errors,
the system panels, the configuration audit. Every string from input is escaped; numbers sort by
their `data-v` value, not their text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

import polars as pl

from analysis.outputs.report import slow_chart
from analysis.outputs.system import SystemView
from analysis.text import ms as duration_text
from analysis.workbench.audit import AuditItem
from analysis.workbench.log_overview import (
    LATENCIES,
    NO_SLOW_OPERATIONS,
    NOT_LOGGED,
    NOT_QUOTED,
    TOP_SHAPES,
    Workload,
    apps_text,
    plans_text,
    ratios_text,
    shape_text,
    size_text,
)
from ftdc.timeutil import say_time
from ftdc.untrusted import printable

# Sorting, filtering and the "show all" buttons. Pinned by its hash in the page's Content-Security-Policy:
# no other script runs, and it requests nothing. A table of class `groups` sorts and filters its row groups (a
# <tbody> each: the slow-operation table's figures and, beneath, the shape's plan, shape and log lines).
SCRIPT = """
(() => {
  const items = (table) => table.classList.contains('groups') ? [...table.tBodies] : [...table.tBodies[0].rows];
  const first = (item) => item.rows ? item.rows[0] : item;
  const key = (item, i) => { const c = first(item).cells[i], v = c.dataset.v; return v === undefined ? c.textContent.trim() : v === '' ? -Infinity : +v; };
  const filters = (table) => [...document.querySelectorAll('[data-filter][data-table="' + table.id + '"]')];
  const matches = (item, table) => filters(table).every(f => f.type === 'checkbox' ? !f.checked || item.dataset[f.dataset.filter] === '1'
    : f.value === '' || item.dataset[f.dataset.filter] === f.value);
  const show = (table) => { const top = +(table.dataset.top || 0), all = !table.classList.contains('collapsed');
    let n = 0, total = 0;
    items(table).forEach(item => { const ok = matches(item, table); total++;
      item.hidden = !ok || (!all && top > 0 && n >= top); if (ok) n++; });
    const said = document.querySelector('[data-shown="' + table.id + '"]');
    if (said) said.textContent = n === total ? '' : n + ' of ' + total + ' match'; };
  const sort = (th) => {
    const table = th.closest('table'), i = [...th.parentNode.children].indexOf(th);
    const descending = th.getAttribute('aria-sort') !== 'descending';
    table.querySelectorAll('th[aria-sort]').forEach(h => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
    const sorted = items(table).sort((a, b) => { const x = key(a, i), y = key(b, i);
      const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return descending ? -order : order; });
    sorted.forEach(item => item.parentNode.appendChild(item));
    show(table);
  };
  document.addEventListener('click', (event) => {
    const th = event.target.closest('table.sortable thead th');
    if (th) { sort(th); return; }
    const button = event.target.closest('button.all');
    if (button) { const table = document.getElementById(button.dataset.table); table.classList.toggle('collapsed');
      show(table); button.textContent = table.classList.contains('collapsed') ? button.dataset.more : button.dataset.less; }
  });
  document.addEventListener('change', (event) => {
    const filter = event.target.closest('[data-filter]');
    if (filter) show(document.getElementById(filter.dataset.table));
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
table.slowops{width:100%;font-size:12px}table.slowops td,table.slowops th{padding:3px 5px}
table.slowops thead th{white-space:normal;vertical-align:bottom}
table.slowops td.name{overflow-wrap:anywhere;min-width:7em}
table.slowops tbody{border-top:2px solid #ccc}
table.slowops .per{display:block;color:#555;font-size:11px}
table.slowops tr.detail td{background:#fbfbfb;overflow-wrap:anywhere}
table.slowops tr.detail td>div{position:sticky;left:6px;max-width:calc(100vw - 90px)}
table.slowops tr.detail code{word-break:break-all}
table.slowops .label{color:#555;margin-right:4px}table.slowops .fact{display:inline-block;margin:1px 18px 1px 0}
table.slowops pre{margin:4px 0 8px;max-height:16em;overflow:auto;word-break:break-all}
.filters{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin:6px 0;font-size:13px}
.filters select{font:inherit;max-width:22em}
div.plot.slow svg{max-height:260px}
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


def sortable(
    table_id: str,
    headers: Sequence[tuple[str, str]],
    rows: list[str],
    top: int = 0,
    noun: str = "rows",
    groups: bool = False,
    cls: str = "",
) -> str:
    """A table sorted by a click on a header (`headers`: text, title), its first `top` rows shown and a button for the
    rest. With `groups`, each of `rows` is a <tbody> of rows that sort, filter and show together."""
    head = "".join(f"<th title='{escape(title)}'>{escape(text)}</th>" for text, title in headers)
    hidden = top > 0 and len(rows) > top
    tag = "<tbody" if groups else "<tr"
    body = "".join(row.replace(tag, tag + " hidden", 1) if hidden and n >= top else row for n, row in enumerate(rows))
    button = (
        (
            f"<button class=all type=button data-table='{table_id}' data-more='show all {len(rows)} {noun}' data-less='show the top {top}'>"
            f"show all {len(rows)} {noun}</button>"
        )
        if hidden
        else ""
    )
    classes = " ".join(["sortable", *(["collapsed"] if hidden else []), *(["groups"] if groups else []), *([cls] if cls else [])])
    body = body if groups else f"<tbody>{body}</tbody>"
    return (
        f"<div class=wide><table id='{table_id}' class='{classes}' data-top='{top if hidden else 0}'><thead><tr>{head}</tr></thead>"
        f"{body}</table></div>{button}"
    )


QUERY_HEADERS = (
    ("namespace", ""),
    ("operation", "the command; COLLSCAN marks a shape some of whose runs scanned a whole collection"),
    ("count", "slow runs logged"),
    ("total s", "sum of the runs' durations"),
    ("min ms", "the fastest slow run"),
    ("mean ms", ""),
    ("p50 ms", ""),
    ("p95 ms", ""),
    ("p99 ms", ""),
    ("max ms", ""),
    ("keys examined", "index keys examined: in all the runs, and per run beneath"),
    ("docs examined", "documents examined: in all the runs, and per run beneath"),
    ("returned", "documents returned: in all the runs, and per run beneath"),
    ("response", "the size of the replies (reslen): in all the runs, and per run beneath"),
)
WORKING_HEADERS = (
    ("working s", "8.0 workingMillis summed: time not waiting"),
    ("queued s", "time queued for an execution ticket"),
)


def _total_and_per_run(total, per_run, say=lambda v, spec: format(v, spec)) -> str:
    """A cell of a total (sorted by it) with its value per run beneath."""
    if total is None:
        return "<td class=num data-v=''>-</td>"
    return (
        f"<td class=num data-v='{float(total)!r}'>{escape(say(total, ',.0f'))}"
        f"<span class=per>{escape(say(per_run, ',.1f'))} a run</span></td>"
    )


def _bytes(value: float, spec: str) -> str:
    return size_text(value)


def _fact(label: str, html: str) -> str:
    return f"<span class=fact><span class=label>{escape(label)}:</span>{html}</span>"


def _shape_fact(row: dict) -> str:
    shape, code = shape_text(row["shape"], row["query_hash"], row["command"])
    if not row["shape"] and not row["query_hash"] and row["command_shape"]:
        return _fact(
            "command", f"<code>{escape(printable(row['command_shape']))}</code> (the slowest run's, its values left out)"
        )
    return _fact("shape", f"<code>{escape(printable(shape))}</code>" if code else escape(shape))


def _lines(row: dict) -> str:
    """The shape's longest runs as the log has them, one click away; each line escaped (it is the customer's)."""
    runs = row["slowest"]
    if not runs:
        return ""
    quoted = "".join(
        f"<p class=window>{escape(say_time(run['at']))} · {escape(duration_text(run['duration_ms']))} · "
        f"{escape(printable(run['file'] or 'the log'))} line {run['line']}</p>"
        + (
            f"<pre class=logline>{escape(printable(run['log_line']))}</pre>"
            if run["log_line"] is not None
            else f"<p>{escape(NOT_QUOTED)}</p>"
        )
        for run in runs
    )
    said = "its slowest line" if len(runs) == 1 else f"its {len(runs)} slowest lines"
    return f"<details><summary>{said} of the log</summary>{quoted}</details>"


def _query_group(row: dict, working: bool, columns: int) -> str:
    collscan = (row["collscan_share"] or 0) > 0
    badge = " <span class=collscan>COLLSCAN</span>" if collscan else ""
    runs = row["count"]
    cells = [
        f"<td class=name>{escape(printable(row['ns'] or ''))}</td>",
        f"<td class=name>{escape(printable(row['command'] or NOT_LOGGED))}{badge}</td>",
        _num(runs),
        _num(row["total_ms"] / 1000, f"{row['total_ms'] / 1000:,.1f}"),
        # A shape whose runs logged no duration a number can hold has no percentile.
        *(_num(row[k], f"{row[k]:,.0f}" if row[k] is not None else None) for k in LATENCIES),
        _total_and_per_run(row["keys_examined"], row["keys_examined_per_run"]),
        _total_and_per_run(row["docs_examined"], row["docs_examined_per_run"]),
        _total_and_per_run(row["nreturned"], row["nreturned_per_run"]),
        _total_and_per_run(row["reslen_bytes"], row["reslen_bytes_per_run"], _bytes),
    ]
    if working:
        said = row["working_runs"]
        cells += [
            _num(row["working_ms"] / 1000 if said else None, f"{row['working_ms'] / 1000:,.1f}" if said else None),
            _num(row["queued_ms"] / 1000 if said else None, f"{row['queued_ms'] / 1000:,.1f}" if said else None),
        ]
    facts = [
        _fact("plan", escape(printable(plans_text(row)))),
        _shape_fact(row),
        *([_fact("examined per document returned", escape(ratio))] if (ratio := ratios_text(row)) else []),
        _fact("clients", escape(printable(apps_text(row["apps"])))),
    ]
    attributes = (
        f" data-ns='{escape(row['ns'] or '', quote=True)}' data-op='{escape(row['command'] or '', quote=True)}'"
        f" data-collscan='{int(collscan)}'"
    )
    return (
        f"<tbody{attributes}><tr>{''.join(cells)}</tr>"
        f"<tr class=detail><td colspan={columns}><div>{''.join(facts)}{_lines(row)}</div></td></tr></tbody>"
    )


def _select(table_id: str, name: str, label: str, values: list[str]) -> str:
    options = "".join(f"<option value='{escape(v, quote=True)}'>{escape(printable(v))}</option>" for v in values)
    return (
        f"<label>{escape(label)} <select data-filter={name} data-table='{table_id}'>"
        f"<option value=''>all</option>{options}</select></label>"
    )


def _filters(table_id: str, frame: pl.DataFrame) -> str:
    """Filters by namespace, operation and COLLSCAN: native controls, so the keyboard reaches and works them."""
    values = lambda column: sorted(frame[column].drop_nulls().unique().to_list())  # noqa: E731
    return (
        f"<div class=filters role=group aria-label='filter the slow operations'>"
        f"{_select(table_id, 'ns', 'namespace', values('ns'))}{_select(table_id, 'op', 'operation', values('command'))}"
        f"<label><input type=checkbox data-filter=collscan data-table='{table_id}'> COLLSCAN only</label>"
        f"<span class=window data-shown='{table_id}' aria-live=polite></span></div>"
    )


def slow_operations(workload: Workload, slug: str) -> str:
    frame = workload.queries
    if frame.is_empty():
        return f"<p>{NO_SLOW_OPERATIONS}</p>"
    working = bool(frame["working_runs"].sum())
    headers = QUERY_HEADERS + (WORKING_HEADERS if working else ())
    table_id = f"{slug}-slow-ops"
    groups = [_query_group(row, working, len(headers)) for row in frame.iter_rows(named=True)]
    beyond = (
        f" (the {frame.height:,} with the most total time of {workload.shapes:,}; the JSON report holds the same)"
        if workload.shapes > frame.height
        else ""
    )
    note = (
        f"<p class=window>Every slow operation the log holds for the report's span, index builds included, by query "
        f"shape{beyond}, most total time first; click a header to sort. Each write command is counted once, by its own "
        "line, not again by the lines of its statements. Beneath each row: the plan (the index by its key pattern), the "
        "shape (a command without a filter by what its slowest run asked for), the clients, and the slowest lines of "
        "the log, one click away."
        + (" Working and queued: 8.0's workingMillis and ticket queueing, summed." if working else "")
        + "</p>"
    )
    chart = slow_chart.svg(workload)
    figure = f"<div class='plot slow' role=img aria-label='slow operations over time'>{chart}</div>" if chart is not None else ""
    return figure + note + _filters(table_id, frame) + sortable(table_id, headers, groups, TOP_SHAPES, "shapes", True, "slowops")


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
