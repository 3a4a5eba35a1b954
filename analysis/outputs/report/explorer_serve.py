"""`ftdc-analyze explore --serve`: the explorer's page from a local server that also gives the real samples of a
range the page zooms into below its columns, read from the FTDC files it was given and nothing else.

The server listens on 127.0.0.1 only and answers two requests: `GET /`, the page, and
`GET /samples?node=N&metric=NAME&from=MS&to=MS`, the samples of one metric the page holds (looked up among the
node's metrics by name, never taken as a path), counters as the same per-second rates the page draws, at most
MAX_SAMPLES. A request naming another host (a name an attacker's DNS points at 127.0.0.1) is refused, and
every parameter is checked before anything is read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import polars as pl

from analysis.observe import Analysis
from analysis.outputs.report import explorer_page
from analysis.outputs.report.explorer import Explorer, identity_paths
from analysis.series import derived as series_module
from analysis.series.metrics import Resolved
from analysis.series.metrics import resolve as resolve_metrics
from ftdc.frames import TIME_COLUMN
from ftdc.reader import read_ftdc

# Samples one answer holds at most: the page asks only when the range on screen holds fewer than its pixels.
MAX_SAMPLES = 20_000
EPOCH_MS = re.compile(r"-?[0-9]{1,15}")


@dataclass(frozen=True)
class Node:
    """What the server may read of one node: its files, the metrics the page holds and how each is drawn."""

    files: tuple[Path, ...]
    resolved: Resolved
    values: frozenset[str]  # recorded metrics drawn as recorded
    rates: frozenset[str]  # recorded metrics drawn as per-second rates
    period_ms: int


def node_of(explorer: Explorer, analysis: Analysis) -> Node:
    recorded = [s for s in explorer.series if s.source == "ftdc"]
    return Node(
        tuple(f.path for f in analysis.evidence.catalog.files),
        resolve_metrics(analysis.evidence.catalog.schema()),
        frozenset(s.name for s in recorded if s.unit != "/s"),
        frozenset(s.name for s in recorded if s.unit == "/s"),
        explorer.period_ms,
    )


def samples(node: Node, name: str, from_ms: int, to_ms: int) -> dict[str, list]:
    """The samples of `name` from `from_ms` to `to_ms` (epoch ms, inclusive): times in epoch seconds, values (a
    counter's per-second rate over the interval before each sample, none across a restart or gap), null where none."""
    identity = identity_paths(node.resolved)
    # One sample before the range too: the first rate in it needs the interval before it.
    frame = read_ftdc(list(node.files), list(dict.fromkeys([name, *identity])), from_ms - 2 * node.period_ms, to_ms)
    if frame.height == 0 or name not in frame.columns:
        return {"t": [], "v": []}
    if name in node.rates:
        book = series_module.prepare(frame.select(TIME_COLUMN, *identity), node.resolved).select("interval_s", "valid")
        value = series_module.recorded_rate(name)
        frame = frame.sort(TIME_COLUMN).with_columns(book)
    else:
        value = pl.col(name)
    ms = pl.col(TIME_COLUMN).dt.epoch("ms")
    out = frame.select(ms.alias("t"), value.cast(pl.Float64).alias("v")).filter(pl.col("t").is_between(from_ms, to_ms))
    return {
        "t": [t / 1000 for t in out["t"].to_list()],
        "v": [v if v is not None and math.isfinite(v) else None for v in out["v"].to_list()],
    }


def _answer(nodes: Sequence[Node], query: str) -> tuple[int, dict]:
    """(status, JSON body) of a `/samples` request."""
    try:
        asked = parse_qs(query, strict_parsing=True, max_num_fields=8)
    except ValueError:
        return 400, {"error": "a malformed query"}
    one = {k: v[0] for k, v in asked.items() if len(v) == 1}
    if set(one) != {"node", "metric", "from", "to"} or len(asked) != 4:
        return 400, {"error": "node, metric, from and to, once each"}
    if not re.fullmatch(r"[0-9]{1,4}", one["node"]) or int(one["node"]) >= len(nodes):
        return 404, {"error": "no such node"}
    node = nodes[int(one["node"])]
    if one["metric"] not in node.values | node.rates:
        return 404, {"error": "no such metric"}
    if not (EPOCH_MS.fullmatch(one["from"]) and EPOCH_MS.fullmatch(one["to"])):
        return 400, {"error": "from and to are epoch milliseconds"}
    lo, hi = int(one["from"]), int(one["to"])
    if not lo < hi or (hi - lo) // max(node.period_ms, 1) > MAX_SAMPLES:
        return 400, {"error": f"a range of at most {MAX_SAMPLES:,} samples"}
    return 200, samples(node, one["metric"], lo, hi)


def server(explorers: Sequence[Explorer], nodes: Sequence[Node], port: int = 0) -> ThreadingHTTPServer:
    """A server of the page of `explorers` and of their `nodes`' samples, bound to 127.0.0.1 (`port` 0: any free
    one, `server.server_address` says which); `serve_forever()` runs it, `shutdown()` stops it."""
    page = explorer_page.page(list(explorers), served=True).encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            if self.headers.get("Host", "") not in hosts:
                return self._send(403, b"this server answers only 127.0.0.1 and localhost", "text/plain")
            url = urlsplit(self.path)
            if url.path == "/":
                return self._send(200, page, "text/html; charset=utf-8")
            if url.path == "/samples":
                try:
                    status, body = _answer(nodes, url.query)
                except Exception as e:  # files changed or damaged since the page was made: the page keeps its columns
                    status, body = 500, {"error": f"could not read the samples: {type(e).__name__}"}
                return self._send(status, json.dumps(body, separators=(",", ":")).encode("ascii"), "application/json")
            return self._send(404, b"not found", "text/plain")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", explorer_page.SERVED_CSP)
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's name)
            pass  # a request is no news; errors reach the page

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    bound = httpd.server_address[1]
    hosts = {f"127.0.0.1:{bound}", f"localhost:{bound}"}
    return httpd
