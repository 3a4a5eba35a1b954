"""Decode a block of JSON (4.4+) log lines into raw frames.

The native decoder (`_native.decode_log_block`, native/src/logs/) parses each
line once, in parallel and with the GIL released, into Arrow buffers; each
column is handed over as an Arrow array owning its own buffers (the PyCapsule
interface, `native_frame`), which polars adopts without a copy. Slow-query lines
(id 51803) come back fully typed and finished (UTC times, command names, db and
collection, plan kinds, shapes), with problems for lines that are not JSON and
for values of unexpected types. Other lines come back with their envelope and,
for the ids that get typed event columns, their attributes as JSON text, which
are typed here: events are few next to slow queries.
"""

from typing import cast

import msgspec
import polars as pl
import pyarrow as pa

from .. import _native
from . import columns, events
from .json_records import EventAttr, coerce
from .problems import ProblemLog
from .schema import RAW_EVENTS

_TYPED_IDS = sorted(events.TYPED_IDS)
_TYPED_SCHEMA = {name: RAW_EVENTS[name] for name in events.TYPED_COLUMNS}
_decode_event_attr = msgspec.json.Decoder(EventAttr).decode
# The slow-op columns the finishing steps read (times, durations, problems' lines, shapes' sort keys).
FINISHING = ("t", "ts", "duration_ms", "line", "shape", "command_json", "originating_command_json")


def decode_block(
    data: bytes, end: int, first_line: int, problems: ProblemLog, slow_columns: list[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Slow ops (columns.SLOW_OPS_BEFORE_JOINS but `started` and `file`, plus
    the timestamp text `t` where it was not read natively; only `slow_columns` and
    those the finishing steps read when given), raw events (schema.RAW_EVENTS) and
    the number of lines of the block data[:end]."""
    block = _native.decode_log_block(data, end, first_line, _TYPED_IDS)
    for line, reason, text in block.problems:
        problems.add(line, reason, text)
    problems.count_unlisted(block.unlisted)
    chunks = block.slow_ops()
    if slow_columns is not None:
        taken = {*slow_columns, *FINISHING}
        chunks = [(rows, [c for c in chunk if c[0] in taken]) for rows, chunk in chunks]
    slow = columns.drop_unreadable_ts(native_frame(chunks), problems)
    evts = columns.drop_unreadable_ts(native_frame(block.events()), problems)
    return slow, _conform(_with_typed_event_columns(evts, problems), RAW_EVENTS), block.lines


def native_frame(chunks: list) -> pl.DataFrame:
    """A frame of a native block's columns, one Arrow chunk per line range.

    Each column comes as an Arrow array (the PyCapsule interface) owning its own buffers, and is adopted as it is:
    a column not asked for is freed with its object, one that is all null shares one buffer of zeros, and the rest
    live as long as the frame does, never the whole block (it lays out every column for every row, ~650 bytes a slow
    query, most of them null). A 1 GB log of short slow queries peaks at about a third of what holding the block
    would cost (bench/bench_logs.py).
    """
    batches = [
        pa.RecordBatch.from_arrays([pa.array(c) for _, c in columns], names=[n for n, _ in columns]) for _, columns in chunks
    ]
    return cast(pl.DataFrame, pl.from_arrow(pa.Table.from_batches(batches), rechunk=False))  # a table: a frame


def _conform(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """`schema`'s columns in order; the ones JSON lines never fill are null."""
    missing = [pl.lit(None, dtype).alias(name) for name, dtype in schema.items() if name not in frame.columns]
    return frame.with_columns(missing).select(list(schema))


def _with_typed_event_columns(raw: pl.DataFrame, problems: ProblemLog) -> pl.DataFrame:
    """events.TYPED_COLUMNS: typed from the attributes for the ids that have them, else kind "other"."""
    rows = raw.with_row_index("row")
    typed_rows = rows.filter(pl.col("id").is_in(_TYPED_IDS))
    values = [
        _typed_values(event_id, component, msg, attr, line, problems)
        for event_id, component, msg, attr, line in typed_rows.select("id", "component", "msg", "attr", "line").iter_rows()
    ]
    typed = pl.DataFrame(values, schema=_TYPED_SCHEMA, orient="row").with_columns(row=typed_rows["row"])
    return rows.join(typed, on="row", how="left", maintain_order="left").with_columns(pl.col("kind").fill_null("other"))


def _typed_values(event_id: int, component: str, msg: str, text: str | None, line: int, problems: ProblemLog) -> tuple:
    dropped: list[str] = []
    values = events.typed_values(event_id, component, msg, _event_attr(text, line, problems), dropped)
    if dropped:
        problems.add(line, "nested too deep, dropped: attr." + ", attr.".join(dropped), None)
    return values


def _event_attr(text: str | None, line: int, problems: ProblemLog) -> EventAttr | None:
    """The typed attributes; a value of an unexpected type costs that value and
    is reported. Attributes that cannot be decoded at all are reported too."""
    if text is None:
        return None
    try:
        return _decode_event_attr(text)
    except msgspec.MsgspecError:
        pass
    except RecursionError:  # msgspec recurses per nesting level, even to skip a value
        problems.add(line, "nested too deep, dropped: attr", None)
        return None
    try:
        coerced, dropped = coerce(EventAttr, msgspec.json.decode(text))
        attr = cast(EventAttr, coerced)
    except (msgspec.DecodeError, TypeError, RecursionError) as exc:
        problems.add(line, f"attributes not read: {exc}", None)
        return None
    problems.add(line, "unexpected types, dropped: attr." + ", attr.".join(dropped), None)
    return attr
