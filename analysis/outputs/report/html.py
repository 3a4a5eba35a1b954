"""The report as one self-contained HTML file: CSS, SVG figures and scripts inline (the tables' sorting, the metric
explorer's uPlot and code), each pinned by its hash in the Content-Security-Policy, no request to any network.

The first screen holds the nodes, the incidents' headlines and a table of contents; the incident
cards follow, then each node's findings, and its workbench one click away (`<details>`): the slow
operations of the whole span, the system panels, the configuration audit, the timeline, the node's
facts. The finding and incident cards are also what Jupyter shows (`_repr_html_`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from html import escape

from analysis.advice import wording
from analysis.advice.recommendation import Recommendation
from analysis.findings.finding import Culprit, Finding
from analysis.incidents.incident import Incident
from analysis.outputs import words
from analysis.outputs.report import explorer_page
from analysis.outputs.report import workbench_html as workbench
from analysis.outputs.report.content import Figure, IncidentCard, NodeSection, Report, node_slug, window
from analysis.outputs.report.culprit_table import HEADERS, NOTE, cells
from analysis.text import counted, duration, plural
from ftdc.timeutil import Offset, say_time, say_window

CSS = (
    """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1140px;padding:0 16px 40px;color:#1d1d1f}
h1{font-size:22px;margin:24px 0 6px}h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:0 0 6px}
.headline{font-size:16px;background:#f6f8fa;border-left:4px solid #444;padding:10px 14px 10px 34px;margin:10px 0}
.headline li{margin:4px 0}.headline li.incident-line{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.incident{border:1px solid #ddd;border-radius:6px;padding:12px 14px;margin:14px 0;background:#fffdfa}
.rootcause{background:#f6f8fa;padding:6px 10px;margin:8px 0}
.chain li{margin:3px 0}.ids{color:#555;font-size:12px}
.finding{border:1px solid #ddd;border-radius:6px;padding:12px 14px;margin:14px 0}
.critical{border-left:6px solid #c62828}.warning{border-left:6px solid #ef8f00}.info{border-left:6px solid #9e9e9e}
.badge{display:inline-block;font-size:11px;font-weight:600;text-transform:uppercase;padding:1px 6px;border-radius:3px;color:#fff;margin-right:6px}
.badge.critical{background:#c62828}.badge.warning{background:#ef8f00}.badge.info{background:#757575}
.window{color:#555;font-size:12px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;white-space:nowrap}
code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f3f3f3;padding:0 3px;border-radius:3px;word-break:break-word}
div.plot{margin:8px 0}div.plot svg{width:100%;height:auto;display:block}
@media (max-width:1000px){div.plot svg text{font-size:15px}}
.incident,.finding{overflow-wrap:anywhere}table.culprits{width:100%}table.culprits th,table.culprits td{overflow-wrap:normal}table.culprits th{min-width:6.5em}table.culprits td:last-child{overflow-wrap:anywhere;min-width:8em}table.evidence th{min-width:13em}
nav.toc{columns:3 220px;background:#f6f8fa;padding:6px 14px;margin:10px 0;font-size:13px}nav.toc ul{margin:2px 0;padding-left:18px}
table.nodes{width:100%}table.nodes td,table.nodes th{font-size:13px}
details.section>summary{margin:14px 0 4px}summary h2,summary h3{display:inline;border:0}details.section{border-bottom:1px solid #ddd;margin:8px 0}
details{margin:6px 0}summary{cursor:pointer;color:#444}
pre{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f6f8fa;padding:8px;overflow-x:auto;white-space:pre-wrap}
.methods dt{font-weight:600;margin-top:8px}.methods dd{margin:2px 0 0 16px;white-space:pre-wrap}
"""
    + workbench.CSS
)


# Sortable headers from the keyboard: each in the Tab order, Enter or Space sorts as a click does (aria-sort says how).
# What the report's explorer holds, and where the rest is: every metric would make the report several times larger.
EXPLORER_HOLDS = (
    "<p>The series the analysis reasoned on, with its thresholds. Every metric the node recorded, and each sample "
    "when zoomed in, is in the page <code>ftdc-analyze explore</code> writes from the same diagnostic.data "
    "(with <code>--serve</code>).</p>"
)

KEYS = """
(() => {
  document.querySelectorAll('table.sortable thead th').forEach(th => { th.tabIndex = 0; });
  document.addEventListener('keydown', (event) => {
    const th = event.target.closest && event.target.closest('table.sortable thead th');
    if (th && (event.key === 'Enter' || event.key === ' ')) { event.preventDefault(); th.click(); }
  });
})();
"""


def _img(figure: Figure | None) -> str:
    """The figure's SVG inline (its text escaped when drawn), named by its caption for a screen reader."""
    if figure is None:
        return ""
    return f'<div class="plot" role="img" aria-label="{escape(figure.caption)}">{figure.svg}</div>'


def _culprits(culprits: list[Culprit]) -> str:
    if not culprits:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    rows = "".join(
        "<tr>"
        + "".join(f"<td class=num>{escape(v)}</td>" if numeric else f"<td>{escape(v)}</td>" for v, numeric in cells(c))
        + "</tr>"
        for c in culprits
    )
    example = next((c.example for c in culprits if c.example), None)
    example_html = (
        f"<details><summary>example command of the top culprit</summary><pre>{escape(example)}</pre></details>" if example else ""
    )
    return f"<div class=wide><table class=culprits><tr>{head}</tr>{rows}</table></div><p class=window>{escape(NOTE)}</p>{example_html}"


def finding_html(finding: Finding, figure: Figure | None = None, offset: Offset = None) -> str:
    """One finding: severity, id (as incidents and their chains name it), title, window, explanation, plot, culprits, what to do,
    evidence; `offset`: the log's, whose time is given beside UTC."""
    prefix = f"{escape(finding.id)}. " if finding.id else ""
    when = window(finding.start, finding.end, offset) if finding.start else ""
    return (
        f'<div class="finding {finding.severity}" data-kind="{escape(finding.kind)}">'
        f'<h3><span class="badge {finding.severity}">{finding.severity}</span>{prefix}{escape(finding.title)}</h3>'
        f'<div class="window">{escape(words.kind_heading(finding.kind, finding.resource))} · {escape(when)}</div>'
        f"<p>{escape(finding.explanation)}</p>{_img(figure)}{_culprits(finding.culprits)}{_what_to_do(finding.recommendations)}"
        + f"<details><summary>evidence</summary>{_evidence(finding.evidence, offset)}</details>"
        "</div>"
    )


def _what_to_do(recommendations: list[Recommendation]) -> str:
    """The first fixes in order (a handful), the rest folded under how many they are."""
    shown, folded = wording.handful(recommendations)
    items = "".join(f"<li>{escape(wording.text(r))}</li>" for r in shown)
    more = "".join(f"<li>{escape(wording.text(r))}</li>" for r in folded)
    return (
        f"<p><b>What to do</b></p><ul>{items}</ul>"
        + (f"<details class=more-fixes><summary>{len(folded)} more</summary><ul>{more}</ul></details>" if folded else "")
        if items
        else ""
    )


def _evidence(evidence: dict, offset: Offset = None) -> str:
    return _rows(words.evidence_rows(evidence, offset))


def _rows(rows: list[tuple[str, str]]) -> str:
    return _table(rows) if rows else ""


def _considered(incident: Incident) -> str:
    """The contributing causes and the others considered, beside the root cause."""
    return "".join(
        f"<p class=considered><b>{escape(heading)}</b>: {escape(cause)}</p>" for heading, cause in words.considered(incident)
    )


def incident_html(incident: Incident, node: str = "", figure: Figure | None = None, offset: Offset = None) -> str:
    """One incident: title (cause → effect), window, root cause with its evidence and the other causes weighed, its plot,
    the chain (each step naming its findings), one list of what to do."""
    root = incident.root_cause
    where = f"{escape(node)} · " if node else ""
    chain = "".join(
        f"<li>{escape(step.text)} <span class=ids>({escape(', '.join(step.findings))}"
        + (f"; {escape(say_window(step.start, step.end, offset))}" if step.start and step.end else "")
        + ")</span></li>"
        for step in incident.chain
    )
    return (
        f'<div class="incident {incident.severity}" id="{escape(card_anchor(node, incident))}" data-id="{escape(incident.id)}">'
        f'<h3><span class="badge {incident.severity}">{incident.severity}</span>{where}{escape(incident.id)}. {escape(incident.title)}</h3>'
        f'<div class="window">{escape(window(incident.start, incident.end, offset))}'
        f" · findings {escape(', '.join(incident.finding_ids))}</div>"
        f'<div class="rootcause"><b>Root cause ({escape(words.cause_kind(root))})</b>: {escape(root.summary)}'
        f"<details><summary>its evidence</summary>{_rows(words.cause_rows(root, offset))}</details></div>{_considered(incident)}"
        f"{_img(figure)}<p><b>Chain</b></p><ol class=chain>{chain}</ol>{_what_to_do(incident.recommendations)}</div>"
    )


def card_anchor(node: str, incident: Incident) -> str:
    """The incident card's id in the page, which its headline links to (I1 of two nodes are two cards)."""
    return f"{node_slug(node)}-{incident.id.lower()}" if node else incident.id.lower()


def short_title(title: str) -> str:
    """An incident's title for its headline, one line: the cause without its details (in parentheses or after a colon),
    the first effect without its "with ..." and how many more ("COLLSCAN aggregate on shop.orders → a 2 min 20 s
    checkpoint longer than the 60 s interval and 2 more"); the card says the whole."""
    cause, _, effect = re.sub(r" \([^()]*\)", "", title).partition(" → ")
    cause = cause.split(": ")[0]
    if not effect:
        return cause
    effects = effect.split("; ")
    more = f" and {len(effects) - 1} more" if len(effects) > 1 else ""
    return f"{cause} → {effects[0].split(', with ')[0]}{more}"


def _breakable(name: str) -> str:
    """A host name escaped, free to wrap after each dot and before its port: a long one wraps in a narrow table."""
    return "<wbr>".join(escape(part) for part in re.split(r"(?<=\.)|(?=:)", name))


def _headline(line: str, cards: list[IncidentCard], several: bool) -> str:
    """One headline: an incident's on one line, its severity in words, its id (and node, of several), cause → effect, a
    link to its card (where its window and first fix are; the whole sentence is the line's tooltip); any other line as
    it is."""
    card = next((c for c in cards if c.headline == line), None)
    if card is None:
        return f"<li>{escape(line)}</li>"
    i = card.incident
    return (
        f'<li class=incident-line title="{escape(line)}"><span class="badge {i.severity}">{i.severity}</span>'
        f'<a href="#{escape(card_anchor(card.node, i))}">{escape(card.node) + ", " if several else ""}{escape(i.id)}</a>: '
        f"{escape(short_title(i.title))}</li>"
    )


def _incidents(cards: list[IncidentCard], more: list[tuple[str, Incident]]) -> str:
    rows = "".join(
        f"<tr><td>{i.severity}</td><td>{escape(node)}</td><td>{escape(say_time(i.start))}</td><td>{escape(duration(i.seconds))}</td>"
        f"<td>{escape(i.id)}. {escape(i.title)}</td></tr>"
        for node, i in more
    )
    table = (
        (
            f"<p>{len(more)} more, less severe {plural(len(more), 'incident')} (all of them, in full, are in the JSON report):</p><table class=more>"
            f"<tr><th>severity</th><th>node</th><th>start</th><th>for</th><th>incident</th></tr>{rows}</table>"
        )
        if more
        else ""
    )
    return "".join(incident_html(c.incident, c.node, c.figure, c.offset) for c in cards) + table


def _table(rows: list[tuple[str, str]]) -> str:
    return "<table class=evidence>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows) + "</table>"


def _section(anchor: str, title: str, content: str, h: str, open_: bool = False) -> str:
    """A part of the report one click away: a <details> the table of contents links to (the script opens it)."""
    return (
        f"<details class=section id='{escape(anchor)}'{' open' if open_ else ''}><summary><{h}>{escape(title)}</{h}></summary>"
        f"{content}</details>"
    )


def _parts(section: NodeSection) -> list[tuple[str, str]]:
    """(anchor, title) of a node's parts, in page order: what the table of contents lists."""
    key = node_slug(section.name)
    warnings = sum(i.severity == "warning" for i in section.analysis.result.audit)
    parts = [(f"{key}-findings", section.findings_heading)]
    if section.workload is not None:
        parts.append(
            (f"{key}-workload", f"Slow operations of the whole span ({section.workload.shapes:,} shapes), clients, log messages")
        )
    parts += [
        (f"{key}-system", "System panels: CPU, memory, disks, network, connections, operations, replication"),
        (f"{key}-audit", f"Configuration audit ({counted(warnings, 'warning')})"),
        (f"{key}-timeline", "Timeline"),
        (f"{key}-node", "Node and data coverage"),
    ]
    if section.explorer is not None:
        parts.append((f"explorer-{key}", "Metric explorer: the analysis's series on one zoomable time axis"))
    return parts


def _node(section: NodeSection, several: bool) -> str:
    h = "h3" if several else "h2"
    key = node_slug(section.name)
    titles = dict(_parts(section))
    parts = [f"<h2 id='{escape(key)}'>{escape(section.name)}</h2>"] if several else []
    context = [(i, f) for i, f in enumerate(section.findings) if f.severity == "info"]
    parts.append(f"<{h} id='{escape(key)}-findings'>{section.findings_heading}</{h}>")
    if not section.carded:
        parts.append(f"<p>{escape(section.headlines[0])}</p>" if several else "<p>No warning or critical finding.</p>")
    parts += [finding_html(section.findings[i], section.evidence.get(i), section.offset) for i in section.carded]
    if section.listed:
        rows = "".join(
            f"<tr><td>{f.severity}</td><td>{escape(say_time(f.start))}</td><td>{escape(duration(f.seconds))}</td><td>{escape(words.kind(f.kind, f.resource))}</td>"
            f"<td>{escape(f.title)}</td></tr>"
            for f in section.listed
        )
        parts.append(
            f"<p>{len(section.listed)} more {plural(len(section.listed), 'finding')}, each like one above (all of them, in full, are in the JSON report):</p>"
            f"<div class=wide><table class=more><tr><th>severity</th><th>start</th><th>for</th><th>kind</th><th>what happened</th></tr>{rows}</table></div>"
        )
    if context:
        parts.append(
            "<details><summary>context and what could not be checked "
            f"({len(context)})</summary>"
            + "".join(finding_html(f, section.evidence.get(i), section.offset) for i, f in context)
            + "</details>"
        )
    if section.workload is not None:
        sub = "h4" if several else "h3"
        parts.append(
            _section(
                f"{key}-workload",
                titles[f"{key}-workload"],
                f"<{sub}>Query shapes</{sub}>{workbench.slow_operations(section.workload, key)}"
                f"<{sub}>Connections by application and driver</{sub}>{workbench.connections(section.workload, key)}"
                f"<{sub}>Warnings and errors by message</{sub}>{workbench.messages(section.workload, key)}",
                h,
            )
        )
    parts += [
        _section(
            f"{key}-system",
            titles[f"{key}-system"],
            (_img(section.system_figure) or "<p>The node recorded none of these metrics.</p>")
            + (workbench.system_notes(section.system) if section.system else ""),
            h,
        ),
        _section(f"{key}-audit", titles[f"{key}-audit"], workbench.audit(section.analysis.result.audit), h),
        _section(f"{key}-timeline", "Timeline", _img(section.timeline), h),
        _section(f"{key}-node", "Node and data coverage", _table(section.facts) + _table(section.coverage), h),
    ]
    if section.explorer is not None:
        # Open, not in a <details>: uPlot sizes its panels to the width it is given when the page loads.
        parts += [
            f"<{h}>{escape(titles[f'explorer-{key}'])}</{h}>",
            EXPLORER_HOLDS,
            explorer_page.section(section.explorer, f"explorer-{key}"),
        ]
    return "".join(parts)


def _first_screen(report: Report) -> str:
    """The nodes in one table, the headlines, the table of contents."""
    rows = "".join(
        f"<tr><td>{_breakable(s.name)}</td><td>{escape(dict(s.facts).get('version', ''))}</td><td>{escape(dict(s.facts).get('replica set', ''))}</td>"
        f"<td>{escape(dict(s.facts).get('host', ''))}</td><td>{escape(dict(s.coverage).get('time range', ''))}</td>"
        f"<td class=num>{len(s.analysis.result.incidents)}</td></tr>"
        for s in report.nodes
    )
    nodes = (
        "<div class=wide><table class=nodes><tr><th>node</th><th>version</th><th>replica set</th><th>host</th><th>span (UTC)</th><th>incidents</th></tr>"
        f"{rows}</table></div>"
    )
    headlines = "".join(_headline(h, report.incidents, len(report.nodes) > 1) for h in report.headlines)
    if report.no_log:
        headlines += f"<li>{escape(words.sentence(report.no_log))}</li>"
    toc = []
    if report.incidents:
        toc.append(f"<li><a href='#incidents'>Incidents ({len(report.incidents) + len(report.more_incidents)})</a></li>")
    if len(report.nodes) > 1:
        toc.append("<li><a href='#replica-set'>Replica set</a></li>")
    for section in report.nodes:
        links = "".join(f"<li><a href='#{escape(anchor)}'>{escape(title)}</a></li>" for anchor, title in _parts(section))
        toc.append(f"<li>{escape(section.name)}<ul>{links}</ul></li>")
    toc.append("<li><a href='#methods'>Methods: how each detector decides</a></li>")
    return f'{nodes}<ul class="headline">{headlines}</ul><nav class=toc><b>Contents</b><ul>{"".join(toc)}</ul></nav>'


def render(report: Report) -> str:
    several = len(report.nodes) > 1
    body = [
        f"<h1>{escape(report.title)}</h1>",
        _first_screen(report),
        f'<p class="window">generated {say_time(report.generated)}{" · redacted" if report.redacted else ""}</p>',
        f"<h2 id=incidents>Incidents</h2>{_incidents(report.incidents, report.more_incidents)}" if report.incidents else "",
    ]
    if several:
        body.append("<h2 id=replica-set>Replica set</h2>" + _img(report.members) + "".join(map(finding_html, report.cross_node)))
    body += [_node(section, several) for section in report.nodes]
    body.append(
        _section(
            "methods",
            "Methods",
            "<dl class=methods>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in report.methods) + "</dl>",
            "h2",
        )
    )
    explorer = any(section.explorer is not None for section in report.nodes)
    return page(
        report.title,
        "".join(body),
        [workbench.SCRIPT, KEYS, *(explorer_page.scripts() if explorer else [])],
        explorer_page.styles() if explorer else "",
    )


def page(title: str, body: str, scripts: list[str], styles: str = "") -> str:
    """The document: `scripts` inline, each allowed by its hash and nothing else (no request can leave the page)."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode('utf-8')).digest()).decode('ascii')}'" for s in scripts)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        # Nothing on this page may reach a network: no fonts, no remote images, only the scripts below (by hash).
        f"<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; script-src {hashes}\">"
        f'<meta name=viewport content="width=device-width,initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{CSS}{styles}</style></head><body>{body}{''.join(f'<script>{s}</script>' for s in scripts)}</body></html>\n"
    )
