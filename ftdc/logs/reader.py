"""`read_logs`: mongod logs (JSON 4.4+ and legacy text) as polars frames.

JSON logs are cut into line-aligned blocks. The native decoder parses a block's
lines on every core with the GIL released, so `workers` threads decoding blocks
side by side overlap one block's parsing with the polars work on the next.
Text logs are cut into blocks too, decoded one after the other (each on every
core), since ctime years depend on the lines before.
Blocks are numbered from line 1 and shifted as results are collected in
order, so no block waits for the one before it to be counted.
Joins that need every file (node names, client drivers) come last.
"""

import datetime as dt
import functools
import os
import warnings
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import polars as pl

from ..memory import release_free_memory
from ..timeutil import LogOffsets, time_range
from . import columns, json_lines, legacy_text, shapes, sources
from .frames import LogFrames
from .narrow import EVERYTHING, PLAN_COLUMNS, Commands, Narrowing, longest_runs, narrowed
from .problems import ProblemLog
from .schema import EVENTS, PROBLEMS, RAW_EVENTS, SLOW_OPS, empty

# (file, slow ops, events, problems, lines): one block's results, its lines numbered from 1.
BlockResult = tuple[str, pl.DataFrame, pl.DataFrame, pl.DataFrame, int]


# How a block's finished slow ops are narrowed (narrow.narrowed, bound to the caller's Narrowing and window).
Narrow = Callable[[pl.DataFrame], pl.DataFrame]


def _whole(slow: pl.DataFrame) -> pl.DataFrame:
    return slow


def decode_json_block(file: str, data: bytes, end: int, narrow: Narrow = _whole, held: list[str] | None = None) -> BlockResult:
    """Slow ops, events and problems of one block (data[:end]) of a JSON log; of the slow ops, only the
    columns `held` (None: all) are taken out of the native block, and `narrow` makes what is kept."""
    problems = ProblemLog(file)
    slow, evts, lines = json_lines.decode_block(data, end, 1, problems, held)
    slow = columns.drop_implausible_durations(slow, problems)
    slow = narrow(shapes.with_sort_directions(columns.finish_slow_ops(slow, file)))
    return file, slow, columns.finish_events(evts, file), problems.frame(), lines


def decode_text_block(file: str, data: bytes, end: int, years: legacy_text.Years, narrow: Narrow = _whole) -> BlockResult:
    """One block (data[:end]) of a legacy text log; JSON lines in it (4.4+ appended after an
    in-place upgrade) go to the JSON decoder and keep their own line numbers."""
    problem_log = ProblemLog(file)
    slow, evts, lines, json_at = legacy_text.decode_block(data, end, problem_log, years)
    if slow.height or evts.height:
        slow = columns.finish_slow_ops(columns.drop_implausible_durations(slow, problem_log), file)
        evts = columns.finish_events(evts, file)
    else:  # no log line: a file of junk costs its problems, not a dozen polars steps (20,000 of them took 88 s)
        slow, evts = _no_slow_ops(), _no_events()
    problems = problem_log.frame()
    if json_at:
        block = b"\n".join(data[start:stop] for _, start, stop in json_at)
        _, json_slow, json_evts, json_problems, _ = decode_json_block(file, block, len(block))
        original = pl.lit(pl.Series("line", [n for n, _, _ in json_at], dtype=pl.Int64)).gather(pl.col("line") - 1)
        by_line = lambda frames: pl.concat(frames, how="vertical_relaxed").sort("line", nulls_last=True)  # noqa: E731
        slow = by_line([slow, json_slow.with_columns(original)])
        evts = by_line([evts, json_evts.with_columns(original)])
        problems = by_line([problems, json_problems.with_columns(original)])
    slow = narrow(shapes.with_sort_directions(slow) if slow.height else slow)
    return file, slow, evts, problems, lines


class _LineNumbers:
    """Shifts each block's line numbers past the lines of its file's earlier blocks."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, result: BlockResult) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        file, slow, evts, problems, lines = result
        offset = self.seen.get(file, 0)
        self.seen[file] = offset + lines
        if offset:
            shift = pl.col("line") + offset
            slow, evts, problems = slow.with_columns(shift), evts.with_columns(shift), problems.with_columns(shift)
        return slow, evts, problems


class _InProcess:
    """The executor interface, running each call at once (small inputs, tests)."""

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self) -> None:
        pass


def _executor(workers: int):
    if workers <= 1:
        return _InProcess()
    return ThreadPoolExecutor(workers)


# Input from which read_logs hands freed memory back before its joins: below it a full
# collection (~15 ms) costs more than reading the log.
RELEASE_FROM_BYTES = 16 << 20


def read_logs(
    paths,
    start=None,
    end=None,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    narrowing: Narrowing = EVERYTHING,
) -> LogFrames:
    """Read mongod logs into `LogFrames` (slow_ops, events, problems).

    `paths`: files, directories or archives (one or a list). `start`/`end`
    (datetime or ISO text; naive means UTC) keep operations that overlap the
    window and events inside it. `progress(done_bytes, total_bytes)` is called
    as input is read. `workers`: threads decoding blocks side by side (None: one
    per CPU; 1: one block at a time). `narrowing`: the slow-op columns to return and
    which commands to keep, applied to each block as it is decoded (narrow.Narrowing).
    Raises sources.SourceError for a missing path, sources.NotALog when no file
    holds a log line, ValueError for a bad time or a start after the end.
    """
    lower, upper = time_range(start, end)
    commands = None if narrowing.longest is None else Commands()
    narrow = functools.partial(narrowed, narrowing=narrowing, commands=commands)
    held = narrowing.held
    found = sources.expand(paths)
    total = sum(s.size for s in found)
    if workers is None:
        workers = os.cpu_count() or 1
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    executor = _executor(workers)
    pending: deque[Future] = deque()
    results = []
    numbered = _LineNumbers()
    stamps: list[tuple[dt.datetime, dt.timedelta]] = []  # each block's offsets, with when (sources.stamp_offsets)
    try:
        for source in found:
            for future in _submit_source(source, executor, advance, stamps, narrow, held):
                pending.append(future)
                # Bound the blocks in flight, so memory stays flat on large inputs: one a worker (each block is
                # decoded on every core already; twice as many held 30 MB more of a 0.25 GB log, no faster).
                while len(pending) > max(workers, 1):
                    results.append(numbered(pending.popleft().result()))
                    results = _compacted(results)
        results.extend(numbered(f.result()) for f in pending)
    finally:
        executor.shutdown()
    # The joins over every file allocate anew: what the blocks' steps freed goes back first.
    if total >= RELEASE_FROM_BYTES:
        release_free_memory()
    frames = _assemble(found, results, lower, upper, sources.offsets(stamps), narrowing, commands)
    _require_log_lines(paths, found, results)
    return frames


# Results held as separate frames before they are merged: each small file's block is a
# set of frames of ~50 columns costing far more than its rows (an archive of 4,000 one-line
# logs peaked at 1.4 GB), so a run of this many small results is merged into one. Large
# blocks are left alone (merging would copy them), and the order of rows is kept.
_MERGE_EVERY = 256
_SMALL_ROWS = 10_000


def _compacted(results: list) -> list:
    run = results[-_MERGE_EVERY:]
    if len(run) < _MERGE_EVERY or any(slow.height + evts.height + problems.height > _SMALL_ROWS for slow, evts, problems in run):
        return results
    return [*results[:-_MERGE_EVERY], tuple(pl.concat(parts, how="vertical_relaxed", rechunk=True) for parts in zip(*run))]


def _require_log_lines(paths, found: list[sources.LogSource], results) -> None:
    """A file that yields no log line at all is not a log: an error when none of the input
    is one (never an empty answer), a warning naming the files when only some are not."""
    with_lines = set()
    for slow, evts, _ in results:
        with_lines.update(slow["file"].unique().to_list())
        with_lines.update(evts["file"].unique().to_list())
    names = [s.name for s in found]
    empty = [n for n in names if n not in with_lines]
    if not names:
        raise sources.NotALog(f"{_shown(paths)}: no mongod log line in it (no file inside it holds one)")
    if len(empty) == len(names):
        raise sources.NotALog(f"{_shown(paths)}: no mongod log line in it (not a JSON 4.4+ or text log)")
    if empty:
        listed = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
        warnings.warn(f"{len(empty)} file(s) hold no mongod log line: {listed}", sources.LogWarning, stacklevel=3)


def _shown(paths) -> str:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    return ", ".join(str(p) for p in items[:3]) + (" ..." if len(items) > 3 else "")


def _submit_source(source: sources.LogSource, executor, advance, stamps: list, narrow: Narrow, held: list[str] | None):
    problems = ProblemLog(source.name)
    cuts: list[str] = []
    decode = None
    # A cut stream's problem is on the line after the last whole one, which
    # is the unterminated last line when there is one (relative line 0).
    after_last = 1
    try:
        for item in sources.blocks(source, advance, cuts.append):
            if isinstance(item, sources.LongLine):
                # One problem row, counted as one line so the lines after it keep their numbers.
                yield _InProcess().submit(_skipped_line, source.name, item, narrow)
                after_last = int(item.ended)
                continue
            block, end = item
            stamps += sources.stamp_offsets(block, end)
            if decode is None:
                decode = _decoder(source, block, end, executor, narrow, held)
            yield decode(block, end)
            after_last = int(block[end - 1] == 0x0A)
            del item, block
    except OSError as exc:
        problems.add(None, f"cannot read: {exc}", None)
    for cut in cuts:
        problems.add(after_last, cut, None)
    if problems.lines:
        yield executor.submit(_only_problems, problems, narrow)


def _decoder(source: sources.LogSource, block: bytes, end: int, executor, narrow: Narrow, held: list[str] | None):
    """How this source's blocks decode, told from its first block."""
    if sources.is_json_log(block[: min(end, 65536)]):
        return lambda block, end: executor.submit(decode_json_block, source.name, block, end, narrow, held)
    # Text blocks decode in order here (each on every core): ctime years carry from block to block.
    years = legacy_text.Years(sources.year_of(source))
    return lambda block, end: _InProcess().submit(decode_text_block, source.name, block, end, years, narrow)


def _skipped_line(file: str, line: sources.LongLine, narrow: Narrow) -> BlockResult:
    problems = ProblemLog(file)
    problems.add(1, line.reason, line.head)
    return file, narrow(_no_slow_ops()), _no_events(), problems.frame(), 1


def _only_problems(problems: ProblemLog, narrow: Narrow) -> BlockResult:
    return problems.file, narrow(_no_slow_ops()), _no_events(), problems.frame(), 0


@functools.cache
def _no_slow_ops() -> pl.DataFrame:
    return empty({name: SLOW_OPS[name] for name in columns.SLOW_OPS_BEFORE_JOINS})


@functools.cache
def _no_events() -> pl.DataFrame:
    return columns.finish_events(empty(RAW_EVENTS), "")


def _assemble(
    found, results, start, end, offsets: LogOffsets | None, narrowing: Narrowing, commands: Commands | None
) -> LogFrames:
    groups = {s.name: s.group for s in found}
    in_group = pl.col("file").replace_strict(groups, default=None, return_dtype=pl.String)
    slow = pl.concat([r[0] for r in results] or [narrowed(_no_slow_ops(), narrowing, commands)], rechunk=False)
    evts = pl.concat([r[1] for r in results] or [_no_events()], rechunk=False)
    problems = pl.concat([r[2] for r in results] or [empty(PROBLEMS)])
    slow, evts = slow.with_columns(group=in_group), evts.with_columns(group=in_group)
    by_file, by_group = _node_names(evts)
    apart = _groups_apart(by_group, slow, evts)
    node = pl.coalesce(
        pl.col("group").replace_strict(apart, default=None, return_dtype=pl.String),
        pl.col("file").replace_strict(by_file, default=None, return_dtype=pl.String),
        pl.col("group").replace_strict(by_group, default=None, return_dtype=pl.String),
    )
    evts = evts.with_columns(node=node)
    slow = _mark_repeated_statements(slow.with_columns(node=node))
    slow = _with_clients(slow, evts) if "client" in narrowing.slow_columns else slow
    if start is not None:
        slow = slow.filter(pl.col("ts") >= start)
        evts = evts.filter(pl.col("ts") >= start)
    if end is not None:
        slow = slow.filter(pl.col("started") <= end)
        evts = evts.filter(pl.col("ts") <= end)
    if commands is not None and narrowing.longest is not None:
        command_json = commands.unpacked(slow, longest_runs(slow, narrowing.longest))
        slow = slow.with_columns(command_json=_chunked_like(command_json, slow["ts"])).drop("command_at")
    # Rows stay in input order (file by file, line by line): sorting the wide
    # frame by time would copy it, and callers that merge nodes can sort.
    return LogFrames(
        slow_ops=slow.select(narrowing.returned),
        events=evts.select(list(EVENTS)),
        problems=problems.sort("file", "line", nulls_last=True),
        utc_offset=sources.usual_offset(offsets),
        utc_offsets=offsets,
    )


# Write commands whose statements mongod may also log one by one (WRITE lines).
WRITE_COMMANDS = ("insert", "update", "delete", "findAndModify", "findandmodify")
# Two durations truncated to whole milliseconds.
TRUNCATION = dt.timedelta(milliseconds=2)


def _mark_repeated_statements(slow: pl.DataFrame) -> pl.DataFrame:
    """`write_statement` stays true only for WRITE lines that repeat a command's line, and
    that command takes its statements' plan, shape and scan counts.

    A batch logs its slow statements (WRITE) and then itself (COMMAND, on the same
    connection, after them); counting both counts the work twice (docs/log-format.md §4). But
    legacy text logs and some 4.4+ batches have no COMMAND line: there the WRITE line is
    the only record of the operation. A statement is repeated when the next write command
    of its node and connection, on the same collection, was logged at or after it and had
    begun by the time it finished: a connection runs one operation at a time, so a later
    batch cannot have begun before this statement ended. (Durations do not nest: 6.0 logs
    statements longer than their batch; and both are truncated to whole milliseconds, hence
    TRUNCATION of slack.) Done on a narrow copy so the wide frame is not sorted or copied, its
    text keys as categories (a number a row: joining by the text encodes each row's keys anew).

    The COMMAND line of an update or delete carries no plan (4.2 to 8.0 log it against
    <db>.$cmd with the statements' plans on their WRITE lines): the command and its
    statements are one operation, so the command is what `_with_statement_plans` completes.
    """
    keys = ["group", "connection"]
    rows = slow.select(pl.col(*keys, "ns").cast(pl.Categorical), "ts", "started", "write_statement", "command").with_row_index(
        "row"
    )
    statements = rows.filter(pl.col("write_statement")).drop_nulls(["ts", "started"]).sort("ts")
    if statements.is_empty():
        return slow
    commands = (
        rows.filter(~pl.col("write_statement") & pl.col("command").is_in(WRITE_COMMANDS))
        .drop_nulls(["ts", "started"])
        .select(
            *keys,
            pl.col("row").alias("command_row"),
            pl.col("ns").alias("command_ns"),
            pl.col("ts").alias("command_ts"),
            pl.col("started").alias("command_started"),
        )
        .sort("command_ts")
    )
    covered = (
        statements.join_asof(commands, left_on="ts", right_on="command_ts", by=keys, strategy="forward", check_sortedness=False)
        .filter((pl.col("command_started") <= pl.col("ts") + TRUNCATION) & (pl.col("command_ns") == pl.col("ns")))
        .select("row", "command_row")
    )
    if covered.is_empty():
        return slow.with_columns(write_statement=pl.lit(False))
    repeated = pl.int_range(slow.height, dtype=pl.UInt32, eager=True).is_in(covered["row"].implode())
    slow = slow.with_columns(
        write_statement=pl.col("write_statement") & _chunked_like(repeated.alias("write_statement"), slow["ts"])
    )
    return _with_statement_plans(slow, covered)


# Plans from worst to best: a statement's plan speaks for its command when it is the worst.
PLAN_RANK = {"COLLSCAN": 0}


def _with_statement_plans(slow: pl.DataFrame, covered: pl.DataFrame) -> pl.DataFrame:
    """Each command covering statements (`covered`: row, command_row) takes, where its own line
    says nothing, the plan and shape of its worst statement (COLLSCAN first, then the
    most documents examined) with the other plans listed after it, and the statements' scan counts
    summed. Only the blocks holding such commands are rewritten, and no hashes: whole new string
    columns, allocated while the log's own are alive, stay resident after it is compacted."""
    # The statements' rows gathered in the log's order: a join on the row number hashed every row of the log, 120 MB
    # above the frame on a 1 GB log and the `logs` command's peak (filtering the blocks by a mask of those rows took
    # 10 MB more than this). A line repeated word for word (the same statement logged twice) counts once.
    covered = covered.sort("row")
    plans = (
        slow.select(*PLAN_COLUMNS, "started", "ts")[covered["row"]]
        .with_columns(command_row=covered["command_row"])
        .unique(["command_row", *PLAN_COLUMNS, "started", "ts"], maintain_order=True)
    )
    worst_first = [
        pl.col("plan_kind").replace_strict(PLAN_RANK, default=1, return_dtype=pl.Int8).fill_null(2),
        -pl.col("docs_examined").fill_null(0),
    ]
    merged = (
        # Of equally bad statements, the first logged speaks first.
        plans.sort(worst_first, maintain_order=True)
        .group_by("command_row")
        .agg(
            *(pl.col(c).drop_nulls().first() for c in ("plan_kind", "shape")),
            plan_summary=pl.col("plan_summary").drop_nulls().unique(maintain_order=True).str.join("; also "),
            keys_examined=pl.col("keys_examined").sum(),
            docs_examined=pl.col("docs_examined").sum(),
        )
    )
    merged = merged.with_columns(pl.col("plan_summary").replace("", None))
    rows = merged["command_row"]
    own = slow.select(PLAN_COLUMNS)[rows]
    filled = own.select(pl.coalesce(own[c], merged[c]).alias(c) for c in PLAN_COLUMNS)
    return slow.with_columns(_patched(slow[c], rows, filled[c]) for c in PLAN_COLUMNS)


def _patched(column: pl.Series, rows: pl.Series, values: pl.Series) -> pl.Series:
    """`column` with `values` at `rows`, rewriting only the chunks (log blocks) that hold them."""
    pieces, offset = [], 0
    for length in column.chunk_lengths():
        piece = column.slice(offset, length)
        here = (rows >= offset) & (rows < offset + length)
        if here.any():
            piece = piece.scatter(rows.filter(here) - offset, values.filter(here))
        pieces.append(piece)
        offset += length
    return pl.concat(pieces, rechunk=False) if pieces else column


def _node_names(evts: pl.DataFrame) -> tuple[dict[str, str], dict[str, str]]:
    """host:port from start-up lines, per file and per group (a node's rotated files)."""
    started = evts.filter(pl.col("host").is_not_null())

    def by(key: str) -> dict[str, str]:
        return dict(started.group_by(key, maintain_order=True).agg(pl.col("host").first()).iter_rows())

    return by("file"), by("group")


def _groups_apart(by_group: dict[str, str], slow: pl.DataFrame, evts: pl.DataFrame) -> dict[str, str]:
    """Node names for groups (a folder's rotated files) that name the same host:port as an earlier
    group while their lines overlap in time: two nodes sharing an address (test rigs on
    localhost:27017), not one node's logs, which cover each moment once. Each is named
    `host:port (its folder)`, with a warning; groups of one address on different days stay one node."""
    span_rows = (
        pl.concat([slow.select("group", "ts"), evts.select("group", "ts")])
        .drop_nulls()
        .group_by("group")
        .agg(first=pl.col("ts").min(), last=pl.col("ts").max())
    )
    spans: dict[str, tuple[dt.datetime, dt.datetime]] = {g: (first, last) for g, first, last in span_rows.iter_rows()}
    kept: dict[str, list[tuple[str, tuple[dt.datetime, dt.datetime]]]] = {}
    apart: dict[str, str] = {}
    for group in sorted((g for g in by_group if g in spans), key=lambda g: spans[g]):
        host, (first, last) = by_group[group], spans[group]
        overlapping = [g for g, (kept_first, kept_last) in kept.get(host, []) if kept_first <= last and first <= kept_last]
        if overlapping:
            apart[group] = f"{host} ({group})"
            warnings.warn(
                f"{group}: another node at {host} than {overlapping[0]} (their lines overlap in time): named {apart[group]}",
                sources.LogWarning,
                stacklevel=4,
            )
        else:
            kept.setdefault(host, []).append((group, (first, last)))
    return apart


def _with_clients(slow: pl.DataFrame, evts: pl.DataFrame) -> pl.DataFrame:
    """`client`: the driver a connection announced (id 51800) before the operation.

    The as-of join runs on a narrow copy (row, ts, keys) so the wide frame is
    neither sorted nor copied.
    """
    metadata = (
        evts.filter(pl.col("kind") == "client_metadata", pl.col("driver").is_not_null())
        .select("group", pl.col("ctx").alias("connection"), pl.col("ts").alias("meta_ts"), pl.col("driver").alias("client"))
        .sort("meta_ts")
    )
    if metadata.is_empty() or slow.is_empty():
        return slow.with_columns(client=pl.lit(None, pl.String))
    keys = slow.select("ts", "group", "connection").with_row_index("row").sort("ts")
    clients = keys.join_asof(
        metadata,
        left_on="ts",
        right_on="meta_ts",
        by=["group", "connection"],
        strategy="backward",
        check_sortedness=False,  # sorted on ts just above; the check cannot see through `by`
    ).sort("row")["client"]
    return slow.with_columns(client=_chunked_like(clients, slow["ts"]))


def _chunked_like(values: pl.Series, like: pl.Series) -> pl.Series:
    """`values` cut into `like`'s chunks (zero-copy slices).

    A frame whose columns are chunked differently is copied whole to align them
    on the next select; the wide slow-op frame keeps the blocks' chunks.
    """
    pieces, offset = [], 0
    for length in like.chunk_lengths():
        pieces.append(values.slice(offset, length))
        offset += length
    return pl.concat(pieces, rechunk=False) if pieces else values
