"""Decode a block of JSON (4.4+) log lines into raw frames.

The native decoder (`_native.decode_log_block`, native/src/logs/) parses each
line once, in parallel and with the GIL released, into Arrow buffers; each
column is copied once out of them into a buffer of its own (see `_batch`)
before polars adopts it. Slow-query lines
(id 51803) come back fully typed and finished (UTC times, command names, db and
collection, plan kinds, shapes), with problems for lines that are not JSON and
for values of unexpected types. Other lines come back with their envelope and,
for the ids that get typed event columns, their attributes as JSON text, which
are typed here: events are few next to slow queries.
"""

from typing import cast

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa

from .. import _native
from . import columns, events
from .json_records import EventAttr, coerce
from .problems import ProblemLog
from .schema import RAW_EVENTS

_ARROW_TYPES = {
    _native.COLUMN_INT64: pa.int64(),
    _native.COLUMN_BOOL: pa.bool_(),
    _native.COLUMN_STRING_VIEW: pa.string_view(),
}
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
        chunks = [(rows, [b for b in buffers if b[0] in taken]) for rows, buffers in chunks]
    slow = columns.drop_unreadable_ts(native_frame(block, chunks), problems)
    evts = columns.drop_unreadable_ts(native_frame(block, block.events()), problems)
    return slow, _conform(_with_typed_event_columns(evts, problems), RAW_EVENTS), block.lines


def _buffer(owner, address: int, size: int) -> pa.Buffer:
    # An empty Rust Vec has a dangling address: never hand that to pyarrow.
    return pa.foreign_buffer(address, size, base=owner) if size else pa.py_buffer(b"")


def native_frame(owner, chunks: list) -> pl.DataFrame:
    """A frame of the native columns (one Arrow chunk per line range), in buffers of its own."""
    table = pa.Table.from_batches([_batch(owner, rows, buffers) for rows, buffers in chunks])
    return cast(pl.DataFrame, pl.from_arrow(table, rechunk=False))  # a table: a frame


def _batch(owner, rows: int, buffers: list) -> pa.RecordBatch:
    """The columns of one line range, copied out of `owner`, the native block.

    Any buffer of the block keeps the whole block alive, and it lays out every
    column of the schema for every row (~650 bytes a slow query, most of them
    null: a short slow `hello` line fills a third of its columns). So a column
    that is all null points at one shared zero buffer, and the others are
    copied (a memcpy), letting the block go as soon as its frames are made:
    a 1 GB log of short slow queries peaks at 1.05 GB instead of 2.4 GB, for
    0-7 % more time (bench/bench_logs.py).
    """
    names, arrays = [], []
    bitmap_bytes = (rows + 7) // 8
    for name, kind, validity, values, data in buffers:
        arrow_type = _ARROW_TYPES[kind]
        if kind == _native.COLUMN_STRING_VIEW:
            value_parts = [(values, rows * 16), *data]
        else:
            value_parts = [(values, rows * 8 if kind == _native.COLUMN_INT64 else bitmap_bytes)]
        if validity is not None and _all_zero(_buffer(owner, validity, bitmap_bytes)):
            zeros = _zeros(value_parts[0][1])
            array = pa.Array.from_buffers(arrow_type, rows, [zeros, zeros])
        else:
            bits = None if validity is None else _copied(owner, validity, bitmap_bytes)
            array = pa.Array.from_buffers(arrow_type, rows, [bits, *(_copied(owner, a, size) for a, size in value_parts)])
        names.append(name)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _copied(owner, address: int, size: int) -> pa.Buffer:
    # numpy copies with the GIL released, beside the other workers' polars steps.
    return pa.py_buffer(np.frombuffer(_buffer(owner, address, size), np.uint8).copy())


def _all_zero(bits: pa.Buffer) -> bool:
    """Whether a validity bitmap marks every row null (bits past the last row are zero too)."""
    return bits.equals(_zeros(bits.size).slice(0, bits.size))


# One zero-filled buffer that every all-null column shares (as validity and values):
# the largest any range has needed, grown as needed. Replacing it races harmlessly.
_ZEROS = [pa.py_buffer(bytes(1 << 16))]


def _zeros(size: int) -> pa.Buffer:
    zeros = _ZEROS[0]
    if zeros.size < size:
        zeros = pa.py_buffer(bytes(max(size, 2 * zeros.size)))
        _ZEROS[0] = zeros
    return zeros


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
