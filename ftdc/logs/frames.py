"""The container `read_logs` returns."""

import datetime as dt
from dataclasses import dataclass

import polars as pl

from ftdc.timeutil import LogOffsets


@dataclass(frozen=True)
class LogFrames:
    """Frames of one or more mongod logs (columns: schema.SLOW_OPS, EVENTS, PROBLEMS).

    slow_ops: one row per slow operation (id 51803 or the legacy text line);
        `write_statement` marks the per-statement WRITE lines that repeat a
        write command's COMMAND line (a WRITE line no command line covers counts).
    events: every other log line, typed where analyses need it (`kind`).
    problems: lines that could not be read, with file, line and reason.
    utc_offset: the offset most of the log's timestamps are written in (the host's local time: reports give a time in
        it beside UTC, as the customer reads their log); None when unknown. The frames' times are UTC.
    utc_offsets: every offset the log is written in over time (a host's clock changing at daylight saving), so a time
        is given in the offset of the log's lines around it; None when unknown.
    """

    slow_ops: pl.DataFrame
    events: pl.DataFrame
    problems: pl.DataFrame
    utc_offset: dt.timedelta | None = None
    utc_offsets: LogOffsets | None = None

    def compact(self, slow_columns: list[str], event_columns: list[str]) -> "LogFrames":
        """Only these columns, a column no row fills held as one null.

        The decoders hand each column over in buffers of its own (a string column
        holds its own text: tests/test_logs_sources.py), and a narrowed read has
        copied them into polars' memory block by block (`narrow.narrowed`), so a
        long job that holds the frames (analysis) keeps the columns it uses and the
        rest go, with no copy of the whole frames beside them. Gathered into one
        chunk a column: the analyses' steps over 60 chunks of a 1 GB log's took 9x
        as long.
        """
        return LogFrames(
            _nulls_held_once(self.slow_ops.select(slow_columns)),
            _nulls_held_once(self.events.select(event_columns)),
            self.problems,
            self.utc_offset,
            self.utc_offsets,
        )


def _nulls_held_once(frame: pl.DataFrame) -> pl.DataFrame:
    # A column no row fills (a field this version of mongod does not log) is held as one null, not a value a row: a
    # 1 GB log's six empty columns took 80 MB, a string's view alone 16 bytes a row.
    empty = (
        [name for name, nulls in zip(frame.columns, frame.null_count().row(0)) if nulls == frame.height] if frame.height else []
    )
    nulls = [pl.repeat(None, frame.height, dtype=frame.schema[name]).alias(name) for name in empty]
    kept = frame.drop(empty).with_columns(nulls).select(frame.columns) if empty else frame
    return kept.rechunk()
