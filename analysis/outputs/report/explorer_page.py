"""The metric explorer as HTML: a section to place in a page, or one self-contained page.

Scripts and styles are inline (uPlot, vendored with its licence in `vendor/uplot/`, and
`explorer.js`); the data is one `application/json` script block per section, with `<`, `>` and
`&` escaped, so no string from the input (a metric, host or namespace name) can close it, and the
script puts those strings on the page only as text. A page that holds a section must send CSP.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from functools import lru_cache
from html import escape
from pathlib import Path

import numpy as np

from analysis.outputs.report.explorer import EMPTY, Explorer, Series, axis_unit
from ftdc.atomic import replacing
from ftdc.timeutil import say_window, to_utc

HERE = Path(__file__).resolve().parent
UPLOT = HERE / "vendor" / "uplot"
# Inline scripts and styles, images from data: URLs; nothing else, so the page requests nothing.
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
# Served by `explore --serve`: the page may ask its own server (only) for the samples of a range.
SERVED_CSP = CSP + "; connect-src 'self'"
# The levels of one node's page, at most (base64): past it, recorded metrics that move in most columns are written at
# 8 bits, so a node whose every metric moves in every column (2,323 x 12.8 kB at 16 bits: 30 MB) still gives a page
# under 25 MB; a node's usual page (most metrics constant or flat rates, written as runs) is far below it.
LEVELS_BUDGET = 20_000_000
# The 8-bit level meaning "no sample in this column".
EMPTY8 = 0xFF
# Series whose levels are encoded in one pass (`encoded_levels`): their levels copied side by side and a flag per level,
# 3.5 MB for as many of 2,400 columns, not the 35 MB of a node's 2,400 series at once (a day's peak is 440 MB).
ENCODED_AT_ONCE = 256
CSS = """
section.explorer{margin:10px 0}
.explorer-bar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:6px 0}
.explorer-bar input{flex:1 1 260px;min-width:0;font:inherit;padding:4px 6px}
.explorer-bar button,.explorer-results button{font:inherit;font-size:12px;padding:2px 8px;cursor:pointer}
.explorer-range{color:#555;font-size:12px;margin:2px 0 6px}
.explorer-results{list-style:none;padding:0;margin:0 0 6px;max-height:260px;overflow-y:auto;font-size:12px}
.explorer-results li{padding:1px 0;overflow-wrap:anywhere}.explorer-other,.explorer-meaning,.explorer-unit{color:#666}
.explorer-panel{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:4px 0 0}
.explorer-head{font-size:12px;padding:0 6px;display:flex;gap:4px;align-items:baseline;overflow-wrap:anywhere}
.explorer-names{flex:1}.explorer-line{margin-right:10px}.explorer-node{color:#444}
.explorer-swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.explorer-more,.explorer-nodes{font:inherit;font-size:12px;padding:0 6px;cursor:pointer}
.explorer-remove{border:0;background:none;cursor:pointer;font-size:15px}.explorer-target{outline:2px solid #1565c0}
.explorer-incident.critical{border-color:#c62828}.explorer-incident.warning{border-color:#ef8f00}
.explorer-panel .u-legend{font-size:11px;text-align:right;padding:0 8px}.explorer-panel .u-legend th{font-weight:500}
.explorer-key{color:#555;font-size:12px}.explorer-key i{display:inline-block;width:14px;height:9px;margin:0 4px 0 10px;vertical-align:middle}
"""


@lru_cache(maxsize=1)
def scripts() -> tuple[str, str]:
    """uPlot and the explorer's code, as the page holds them (the report's CSP allows each by its hash)."""
    return (UPLOT / "uPlot.iife.min.js").read_text(encoding="utf-8"), (HERE / "explorer.js").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def styles() -> str:
    return (UPLOT / "uPlot.min.css").read_text(encoding="utf-8") + CSS


def assets() -> str:
    """uPlot, its style and the explorer's script: once per page, after the sections (or anywhere: they start on DOMContentLoaded)."""
    return f"<style>{styles()}</style>" + "".join(f"<script>{s}</script>" for s in scripts())


def script_json(value) -> str:
    """JSON that may sit inside a <script> element: no `<`, `>` or `&` to end it or open a comment."""
    return (
        json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def encoded_levels(many: Sequence[bytes]) -> list[dict[str, str]]:
    """Each series' levels for the page, the shorter way: as they are (`levels`), or as runs of one level (`runs`:
    level then count, uint16 each), which is how a constant series, a flat rate or a long gap costs a few bytes. The
    series of one length are taken ENCODED_AT_ONCE at a time (a page holds thousands, most of them runs)."""
    out: list[dict[str, str]] = [{} for _ in many]
    by_length: dict[int, list[int]] = {}
    for i, levels in enumerate(many):
        by_length.setdefault(len(levels), []).append(i)
    for length, alike in by_length.items():
        for k in range(0, len(alike), ENCODED_AT_ONCE):
            which = np.asarray(alike[k : k + ENCODED_AT_ONCE])
            n = length // 2
            q = np.frombuffer(b"".join(many[i] for i in which), dtype="<u2").reshape(len(which), n)
            # Where each run of one level starts: the first column, and each column whose level is not the one before.
            starts = np.ones((len(which), n), dtype=bool)
            np.not_equal(q[:, 1:], q[:, :-1], out=starts[:, 1:])
            runs = np.count_nonzero(starts, axis=1)
            # A count is a uint16: a series of more levels (the axis has 2 x COLUMNS at most) is written as it is.
            shorter = (4 * runs < length) & (n <= 0xFFFF)
            for i in which[~shorter]:
                out[i] = {"levels": base64.b64encode(many[i]).decode("ascii")}
            if not shorter.any():
                continue
            # Every run of every series, flattened in order: a run lasts to the next start, the last one of a series to
            # its end (the next series' first start); those of the series written as runs are kept.
            at = np.flatnonzero(starts)
            kept = np.repeat(shorter, runs)
            pairs = np.stack([q.reshape(-1)[at[kept]], np.diff(np.append(at, len(which) * n))[kept]], axis=1).astype("<u2")
            data = pairs.tobytes()
            ends = 4 * np.cumsum(runs[shorter])
            for i, end, count in zip(which[shorter], ends.tolist(), runs[shorter].tolist()):
                out[i] = {"runs": base64.b64encode(data[end - 4 * count : end]).decode("ascii")}
    return out


def coarse_levels(levels: bytes) -> dict[str, str]:
    """Levels at 8 bits (`levels8`: 1/254 of the series' range, under a pixel of a panel; EMPTY8 where no sample)."""
    q = np.frombuffer(levels, dtype="<u2")
    coarse = np.where(q == EMPTY, EMPTY8, np.rint(q * ((EMPTY8 - 1) / (EMPTY - 1)))).astype("u1")
    return {"levels8": base64.b64encode(coarse.tobytes()).decode("ascii")}


def _written(series: Sequence[Series]) -> list[dict[str, str]]:
    """Each series' levels, the shorter way; past LEVELS_BUDGET, recorded metrics written as they are at 8 bits instead,
    from the last of the page back, until the page is within it."""
    written = encoded_levels([s.levels for s in series])
    total = sum(len(text) for w in written for text in w.values())
    for i in reversed(range(len(series))):
        if total <= LEVELS_BUDGET:
            break
        if series[i].source == "ftdc" and "levels" in written[i]:
            coarse = coarse_levels(series[i].levels)
            total += len(coarse["levels8"]) - len(written[i]["levels"])
            written[i] = coarse
    return written


def _payload(explorer: Explorer, served: int | None = None) -> dict:
    axis = explorer.axis
    seconds = lambda ms: round(ms / 1000, 3)  # noqa: E731
    return {
        "node": explorer.node,
        "first": seconds(axis.first_ms),
        "step": seconds(axis.column_ms),
        "columns": axis.columns,
        "series": [
            {
                "name": s.name,
                "source": s.source,
                "unit": s.unit,
                "axis": axis_unit(s.name, s.unit),
                "meaning": s.meaning,
                "low": s.low,
                "high": s.high,
                **levels,
            }
            for s, levels in zip(explorer.series, _written(explorer.series))
        ],
        "others": list(explorer.others),
        "incidents": [
            {"label": i.label, "severity": i.severity, "title": i.title, "start": seconds(i.start_ms), "end": seconds(i.end_ms)}
            for i in explorer.incidents
        ],
        "checkpoints": [[seconds(s), seconds(e)] for s, e in explorer.checkpoints],
        "opening": list(explorer.opening),
        # On a served page: the node's number for the server, and its sampling period (when to ask for samples).
        **({"served": served, "period": seconds(explorer.period_ms)} if served is not None else {}),
    }


def section(explorer: Explorer, anchor: str = "explorer", served: int | None = None) -> str:
    """The explorer of one node as a <section> (give each one a distinct `anchor`); the page adds `assets()` once.
    `served`: the node's number on a page `explore --serve` serves, which asks the server for samples."""
    axis = explorer.axis
    first, last = to_utc(axis.first_ms), to_utc(axis.first_ms + axis.columns * axis.column_ms)
    recorded = sum(s.source == "ftdc" for s in explorer.series)
    return (
        f'<section class="explorer" id="{escape(anchor)}" data-node="{escape(explorer.node)}">'
        f'<p class="explorer-key">{len(explorer.series):,} series of {escape(explorer.node)} ({len(explorer.series) - recorded:,} derived, '
        f"{recorded:,} as recorded, counters as per-second rates), {escape(say_window(first, last))}, "
        f"each at its minimum and maximum per {axis.column_ms / 1000:g} s. Drag across a panel to zoom (or Ctrl + wheel), "
        "double-click for the whole range."
        '<i style="background:rgba(198,40,40,0.3)"></i>incident<i style="background:rgba(55,71,79,0.6);height:5px"></i>checkpoint</p>'
        '<div class="explorer-bar"><input class="explorer-search" type="search" placeholder="find a metric by name, e.g. dirty or opLatencies" '
        'aria-label="find a metric">'
        '<button type="button" class="explorer-in" title="zoom in">+</button><button type="button" class="explorer-out" title="zoom out">−</button>'
        '<button type="button" class="explorer-left" title="earlier">◀</button><button type="button" class="explorer-right" title="later">▶</button>'
        '<button type="button" class="explorer-whole">whole range</button><span class="explorer-incidents"></span></div>'
        '<ul class="explorer-results"></ul><div class="explorer-range"></div><div class="explorer-panels"></div>'
        f'<script type="application/json" class="explorer-data">{script_json(_payload(explorer, served))}</script></section>'
    )


def page(explorers: Explorer | Sequence[Explorer], served: bool = False) -> str:
    """One self-contained page, offline: the explorer of a node, or of several (a replica set), each in its section,
    where a panel can draw one metric of every node. `served`: the page `explore --serve` serves, which may ask
    its server for the samples of what it zooms into."""
    several = [explorers] if isinstance(explorers, Explorer) else list(explorers)
    title = f"ftdc-analyze explorer: {', '.join(e.node for e in several)}"
    anchors = ["explorer"] if len(several) == 1 else [f"explorer-{i}" for i in range(1, len(several) + 1)]
    headings = [""] * len(several) if len(several) == 1 else [f"<h2>{escape(e.node)}</h2>" for e in several]
    sections = "".join(h + section(e, a, i if served else None) for i, (h, e, a) in enumerate(zip(headings, several, anchors)))
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv=Content-Security-Policy content="{SERVED_CSP if served else CSP}">'
        f'<meta name=viewport content="width=device-width,initial-scale=1"><title>{escape(title)}</title>'
        '<style>body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1600px;padding:0 16px 30px;'
        "color:#1d1d1f}h1{font-size:20px;margin:18px 0 4px}h2{font-size:16px;margin:16px 0 2px}</style></head>"
        f"<body><h1>{escape(title)}</h1>{sections}{assets()}</body></html>\n"
    )


def write_explorer(explorer: Explorer | Sequence[Explorer], path: str | os.PathLike) -> Path:
    """Writes the explorer of a node, or of several nodes, as one self-contained HTML page."""
    path = Path(path)
    with replacing(path) as out:
        out.write(page(explorer).encode("utf-8"))
    return path
