"""What `read_logs` keeps of each block as it is decoded: the slow-op columns a caller
reads, and the command text only of the runs that may be the longest of their kind.

A slow operation decodes into ~50 columns, and its command text is most of its bytes;
a caller that reads a dozen columns and shows one example command per query shape
would otherwise hold every column of every line until the whole log is read (a 1 GB
log peaked at 1.46 GB in the `logs` command). Each block is narrowed on its worker,
so what stays is a fraction of the log's size.

Narrowing a block must not change what the whole log's frames give the caller. The
reader's joins over every file rewrite two things of a row: `write_statement` (a WRITE
line no command covers becomes an operation of its own) and, for a write command
covering statements, the plan columns its own line leaves empty. Rows those joins may
rewrite keep their command; of the others, each group's longest runs (every tie) and
its first row (the example when no run logged a duration) keep theirs, so the longest
of a group over the whole log, which is the longest of some block's part of it, keeps
its command. A block holds one file, so one node: grouping by node adds nothing here.
"""

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from .columns import SLOW_OPS_BEFORE_JOINS
from .schema import SLOW_OPS

# Write commands whose statements mongod may also log one by one (WRITE lines).
WRITE_COMMANDS = ("insert", "update", "delete", "findAndModify", "findandmodify")
# Plan columns a write command takes from its statements where its own line says nothing.
PLAN_COLUMNS = ("plan_summary", "plan_kind", "shape", "keys_examined", "docs_examined")
# The slow-op columns the reader's joins over every file read (statements, plans, node names).
JOINED = ("ts", "started", "duration_ms", "write_statement", "command", "ns", "connection", "file", "line", *PLAN_COLUMNS)


@dataclass(frozen=True)
class Longest:
    """Keep `command_json` only where a run may be the longest of its group: `key`
    (expressions of a slow-op row) groups runs; `among` (None: every row) says which
    rows the caller picks the longest from (a summary: the queries)."""

    key: tuple[pl.Expr, ...]
    among: pl.Expr | None = None


@dataclass(frozen=True)
class Narrowing:
    """The slow-op columns to return (schema.SLOW_OPS order) and, optionally, which commands to keep."""

    slow_columns: tuple[str, ...] = tuple(SLOW_OPS)
    longest: Longest | None = None

    def __post_init__(self) -> None:
        unknown = [c for c in self.slow_columns if c not in SLOW_OPS]
        if unknown:
            raise ValueError(f"not slow-op columns: {', '.join(unknown)}")

    @property
    def returned(self) -> list[str]:
        return [c for c in SLOW_OPS if c in self.slow_columns]

    @property
    def held(self) -> list[str]:
        """The columns kept of each block: those returned, those the joins read, and
        those a `Longest` groups by (SLOW_OPS_BEFORE_JOINS order)."""
        wanted = set(self.slow_columns) | set(JOINED)
        if self.longest is not None:
            wanted |= {
                "command_json",
                *(c for e in (*self.longest.key, self.longest.among) if e is not None for c in e.meta.root_names()),
            }
        return [c for c in SLOW_OPS_BEFORE_JOINS if c in wanted]


EVERYTHING = Narrowing()


def narrowed(slow: pl.DataFrame, narrowing: Narrowing, start: dt.datetime | None, end: dt.datetime | None) -> pl.DataFrame:
    """One block's finished slow ops (SLOW_OPS_BEFORE_JOINS) as `narrowing` holds them. Rows
    outside [start, end] are dropped after the joins; here they keep no command."""
    slow = slow.select(narrowing.held)
    if narrowing.longest is None or slow.is_empty():
        return slow
    # The kept commands are copied after the others are dropped, into a buffer holding only them.
    kept = slow.with_columns(command_json=pl.when(_may_be_longest(narrowing.longest, start, end)).then(pl.col("command_json")))
    return kept.with_columns(pl.col("command_json") + "")


def _may_be_longest(longest: Longest, start: dt.datetime | None, end: dt.datetime | None) -> pl.Expr:
    rewritable = pl.col("write_statement") | pl.col("command").is_in(WRITE_COMMANDS)
    inside = _inside(start, end)
    settled = ~rewritable & inside & (pl.lit(True) if longest.among is None else longest.among.fill_null(False))
    group: Sequence[pl.Expr] = (*longest.key, settled)
    longest_run = pl.col("duration_ms") == pl.col("duration_ms").max().over(group)
    first = pl.int_range(pl.len()).over(group) == 0
    return (rewritable & inside) | (settled & (longest_run.fill_null(False) | first))


def _inside(start: dt.datetime | None, end: dt.datetime | None) -> pl.Expr:
    inside = pl.lit(True)
    if start is not None:
        inside &= pl.col("ts") >= start
    if end is not None:
        inside &= pl.col("started") <= end
    return inside.fill_null(False)
