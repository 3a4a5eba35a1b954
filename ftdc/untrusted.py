"""Strings from customer files, made safe for the place they are shown: a terminal, a
spreadsheet cell, a path. Every host name, version, namespace, metric name, log line
and file name is untrusted: a crafted file can carry terminal escapes (set the window
title, write the clipboard with OSC 52, clear the screen, hide text), spreadsheet
formulas (`=HYPERLINK(...)`) or path separators and NUL bytes. Each output calls the one
function here for its kind of place, so no output has its own idea of what is safe.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module to start; polars loads when a frame is made safe
    import polars as pl

# What a terminal acts on rather than shows: C0 controls (ESC starts every escape
# sequence, BEL ends an OSC), DEL, C1 controls (U+009B is CSI and U+009D OSC on
# terminals that take 8-bit controls), and the bidirectional overrides and isolates
# that make text read other than it is stored ("Trojan Source").
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, keep: str = "\n\t") -> str:
    """`text` with every control character but those in `keep` written as its escape
    (`\\x1b`, `\\u202e`): seen on the terminal, never acted on. A field of a one-line
    record (tab-separated output) keeps none."""
    return UNSAFE.sub(lambda m: m[0] if m[0] in keep else _escaped(m[0]), text)


def json_printable(text: str) -> str:
    """JSON text whose strings hold control characters raw (encoders escape C0 but pass C1
    and the bidirectional controls) with those written as JSON escapes (`\\u009d`): the same
    document, safe to print. They can only stand inside strings, so this changes no structure."""
    return UNSAFE.sub(lambda m: m[0] if m[0] in "\n\t" else f"\\u{ord(m[0]):04x}", text)


# A cell a spreadsheet reads as a formula: `=`, `+`, `-`, `@`, or a tab or carriage
# return before one (OWASP's list). A number keeps its sign.
FORMULA = re.compile(r"[=+\-@\t\r]")
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


# Markup characters in JSON text, written as JSON escapes: the document parses to the same values, and a page that
# embeds it (a `<script>` block, an attribute) cannot be closed or opened by a string from the input.
_MARKUP = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def json_embeddable(text: str) -> str:
    """JSON text with `<`, `>` and `&` written as JSON escapes (they can only stand inside strings)."""
    return re.sub("[<>&]", lambda m: _MARKUP[m[0]], text)


def cell(text: str) -> str:
    """`text` as a spreadsheet cell that is never a formula: one starting as a formula
    does gets a leading `'` (shown as text, the way spreadsheets mark it); numbers stay numbers."""
    if FORMULA.match(text) and not NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every text cell made a `cell`."""
    import polars as pl

    return frame.with_columns(pl.col(pl.String).map_elements(cell, return_dtype=pl.String))


def csv_header(names: Iterable[str]) -> str:
    """A CSV header line of input names (metric names): each a `cell`, on one line."""
    line = io.StringIO()
    csv.writer(line, lineterminator="\n").writerow(cell(printable(name, keep="")) for name in names)
    return line.getvalue()


def safe_name(text: str) -> str:
    """A path component that is also a clean hive value: letters, digits, `.`, `_` and `-`
    only (no separator, no NUL), never hidden or ignored by readers (`.x`, `_x`), never empty."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "node"
