"""The container `read_logs` returns."""

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class LogFrames:
    """Frames of one or more mongod logs (columns: schema.SLOW_OPS, EVENTS, PROBLEMS).

    slow_ops: one row per slow operation (id 51803 or the legacy text line);
        `write_statement` marks the per-statement WRITE lines that repeat a
        write command's COMMAND line.
    events: every other log line, typed where analyses need it (`kind`).
    problems: lines that could not be read, with file, line and reason.
    """

    slow_ops: pl.DataFrame
    events: pl.DataFrame
    problems: pl.DataFrame
