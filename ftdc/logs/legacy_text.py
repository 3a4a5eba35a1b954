"""Decode a block of legacy text log lines (mongod/mongos 2.2 to 4.2) into raw frames.

The native decoder (`_native.decode_text_log_block`, native/src/logs/text.rs)
parses the lines as it does JSON lines, in parallel and with the GIL released,
into Arrow buffers: slow operations into the columns JSON slow queries have
(finished the same way), every other line into the event columns with its kind
and typed values read from its words. Grammar: docs/log-format.md §6.
"""

import polars as pl

from .. import _native
from . import columns
from .json_lines import native_frame
from .problems import ProblemLog


class Years:
    """What the years of ctime stamps (≤ 2.4, which print none) depend on, carried
    from block to block of one file: its modification year, the last stamp's year and month."""

    def __init__(self, hint: int):
        self.hint = hint
        self.state: tuple[int | None, int] | None = None


def decode_block(
    data: bytes, end: int, problems: ProblemLog, years: Years
) -> tuple[pl.DataFrame, pl.DataFrame, int, list[tuple[int, int, int]]]:
    """Slow ops (as json_lines.decode_block gives them), raw events (schema.RAW_EVENTS),
    the number of lines of the block data[:end], and (line, start, end) of the JSON
    lines in it, which are the JSON decoder's."""
    block = _native.decode_text_log_block(data, end, 1, years.hint, years.state)
    years.state = block.years
    for line, reason, text in block.problems:
        problems.add(line, reason, text)
    problems.count_unlisted(block.unlisted)
    slow = columns.drop_unreadable_ts(native_frame(block.slow_ops()), problems)
    evts = columns.drop_unreadable_ts(native_frame(block.events()), problems)
    # `text` comes null where it is the whole message: msg's strings, shared, not copied twice.
    return slow, evts.with_columns(text=pl.coalesce("text", "msg")), block.lines, block.json_lines
