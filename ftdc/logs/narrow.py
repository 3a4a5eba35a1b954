"""What `read_logs` keeps of each block as it is decoded: the slow-op columns a caller
reads and, when it shows one example command per group of runs (the longest run's), the
commands packed away until the whole log says which runs those are.

A slow operation decodes into ~50 columns, and its command text is most of its bytes;
a caller that reads a dozen columns and shows one example command per query shape
would otherwise hold every column of every line until the whole log is read (a 1 GB
log peaked at 1.46 GB in the `logs` command). Each block is narrowed on its worker.

Which run is a group's longest cannot be told block by block: the reader's joins over
every file decide whether a WRITE line is an operation of its own and fill a write
command's empty plan columns from its statements, which moves runs between groups. So
each block's commands are compressed (zstd: the sample's to 3 % of their size) and only
the longest runs' are unpacked once the frames are joined (`Commands.unpacked`).
"""

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from .columns import SLOW_OPS_BEFORE_JOINS
from .schema import SLOW_OPS

# Plan columns a write command takes from its statements where its own line says nothing.
PLAN_COLUMNS = ("plan_summary", "plan_kind", "shape", "keys_examined", "docs_examined")
# The slow-op columns the reader's joins over every file read (statements, plans, node names).
JOINED = ("ts", "started", "duration_ms", "write_statement", "command", "ns", "connection", "file", "line", *PLAN_COLUMNS)


@dataclass(frozen=True)
class Longest:
    """Keep `command_json` only on the runs `longest_runs` gives: `key` (expressions of a
    slow-op row, `node` too) groups runs; `among` (None: every row) says which rows the
    caller picks the longest from (a summary: the queries)."""

    key: tuple[pl.Expr, ...]
    among: pl.Expr | None = None


@dataclass(frozen=True)
class Narrowing:
    """The slow-op columns to return (schema.SLOW_OPS order), optionally which commands to keep, and whether each
    block's columns are `copied` into polars' memory as it is read: frames held through a long job beside other large
    reads (an analysis) are, at some cost in time (`narrowed`). A copied read holds its text columns named in
    `categories` (of a handful of values each) as categories, a number a row."""

    slow_columns: tuple[str, ...] = tuple(SLOW_OPS)
    longest: Longest | None = None
    copied: bool = False
    categories: tuple[str, ...] = ()

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


def narrowed(slow: pl.DataFrame, narrowing: Narrowing, commands: "Commands | None" = None) -> pl.DataFrame:
    """One block's finished slow ops (SLOW_OPS_BEFORE_JOINS) as `narrowing` holds them, in polars' own memory: with
    `commands`, `command_json` is packed into it and replaced by `command_at`, where it lies there."""
    slow = slow.select(narrowing.held)
    slow = slow if commands is None else commands.packed(slow)
    if not narrowing.copied:
        return slow
    # The columns kept are copied out of the decoder's buffers (the C library's heap) into polars' allocator here, on
    # the block's worker, so the decoder's go back at once: copied at the end of the read instead, the whole frames
    # were held twice (the analyses' read of a 1 GB log peaked at 1.22 GB; 0.92 GB this way), and held as the decoder
    # left them, block after block, they kept the C library's heap too scattered to give back under the FTDC's decode.
    # A read whose frames are used and let go (the `logs` command, a caller's `read_logs`) is spared the copy: 1.07 -
    # 1.23x the time. Concatenation writes new strings, an addition new integers (a cast to the same type would keep
    # the buffers); times and flags are few (tests/test_analysis_memory.py). The columns held as categories are cast
    # here too: cast once the frames were whole, the text beside them peaked the analyses' read of a 1 GB log at 0.88 GB.
    # The plan columns stay text until the frames are whole: a command takes its statements' plans then
    # (`reader._with_statement_plans`), and their ranking by kind would map every category polars holds.
    categories = [c for c in narrowing.categories if c not in PLAN_COLUMNS and slow.schema.get(c) == pl.String]
    return slow.with_columns(
        pl.col(categories).cast(pl.Categorical), pl.col(pl.String).exclude(categories) + "", pl.col(pl.Int64) + 0
    )


# zstd's fastest level: a block's commands (2.4 MB of the sample's) pack to 3 % in about a millisecond.
_CODEC = pa.Codec("zstd", compression_level=1)


class Commands:
    """The command text of a log's slow ops, compressed block by block as it is read (workers
    add blocks side by side), then unpacked for the rows that need it."""

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[bytes, np.ndarray]] = {}
        self._numbers = itertools.count()

    def packed(self, slow: pl.DataFrame) -> pl.DataFrame:
        """`slow` with `command_json` replaced by `command_at` (block << 32 | row; null where there is none)."""
        number = next(self._numbers)
        text = slow["command_json"].to_arrow(compat_level=pl.CompatLevel.oldest())  # large_string: offsets and one buffer
        offsets = np.frombuffer(text.buffers()[1], np.int64)[text.offset : text.offset + len(text) + 1]
        data = text.buffers()[2] or pa.py_buffer(b"")
        first, last = int(offsets[0]), int(offsets[-1])
        self._blocks[number] = (_CODEC.compress(data[first:last], asbytes=True), offsets - first)
        at = pl.int_range(pl.len(), dtype=pl.Int64) + (number << 32)
        return slow.with_columns(command_at=pl.when(pl.col("command_json").is_not_null()).then(at)).drop("command_json")

    def unpacked(self, slow: pl.DataFrame, keep: pl.Series) -> pl.Series:
        """`command_json` of `slow` (which holds `command_at`) for the rows `keep` marks, null elsewhere."""
        wanted = slow.select(row=pl.int_range(pl.len(), dtype=pl.Int64), at="command_at").filter(
            keep & pl.col("at").is_not_null()
        )
        rows, texts = [], []
        for (number,), group in wanted.group_by(pl.col("at") // (1 << 32)):
            packed, offsets = self._blocks[number]
            data = _CODEC.decompress(packed, decompressed_size=int(offsets[-1]), asbytes=True)
            for row, at in group.iter_rows():
                index = at & 0xFFFFFFFF
                rows.append(row)
                texts.append(data[offsets[index] : offsets[index + 1]].decode())
        column = pl.repeat(None, slow.height, dtype=pl.String, eager=True).alias("command_json")
        if rows:
            column = column.scatter(rows, pl.Series(texts, dtype=pl.String))
        return column


def longest_runs(slow: pl.DataFrame, longest: Longest) -> pl.Series:
    """The runs whose command a caller with `longest` may show: among its rows, each group's
    longest (every tie, as the caller picks one by its own rule) and, in a group where no
    run logged a duration, its first. Text keys are grouped as categories (a number a row):
    grouping by the text itself encodes every row's keys anew (120 MB on a 1 GB log)."""
    among = pl.lit(True) if longest.among is None else longest.among.fill_null(False)
    keys = slow.select(*(k.alias(f"key{n}") for n, k in enumerate(longest.key)), among=among)
    keys = keys.with_columns(pl.col(pl.String).cast(pl.Categorical), duration=slow["duration_ms"])
    group = [c for c in keys.columns if c != "duration"]
    duration = pl.col("duration")
    longest_run = (duration == duration.max().over(group)).fill_null(False)
    first = (pl.int_range(pl.len()).over(group) == 0) & duration.max().over(group).is_null()
    return keys.select(pl.col("among") & (longest_run | first)).to_series()
