"""The native decoder's one call: what a read asks of it (`read_arguments`), and that call started ahead of the reader
that takes its answer (`decode_ahead`).

A small node's decode fits in the time Python takes to load polars and the analyses: the 7.0 sample's decode takes
0.1 s on one core, the imports after it 0.2 s on the other. The decoder lets go of the GIL, so started
on a thread of its own before those imports, it is done when they are, and `reader.read_with_catalog` takes its answer
instead of decoding (docs/performance.md). This module loads neither polars nor the analyses: nothing but the paths
has to come before the start.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field

from . import _native
from .errors import FTDCError
from .paths import FtdcFile, PathArg, resolve
from .timeutil import TimeArg, to_ms

Metrics = str | Iterable[str] | None
# The root `start` the decoder sorts by: every frame's time column.
TIME_COLUMN = "start"
# `_native.read`'s positional arguments: paths, interim flags, metrics, start and end in ms, time field, max values.
ReadArguments = tuple[list[str], list[bool], list[str] | None, int | None, int | None, str, int | None]
# A node's files decoded ahead at most. On one core the decoder takes 9 - 21 ms a MB (a day of the bench's node, the 7.0
# sample), so 16 MB take 0.34 s at most: less than the imports it overlaps and a decode on two cores after them take
# together (0.2 s and 0.2 s). Its frame (the 7.0 sample's 4.8 MB make 35 MB, 7.3 times; a day's 2.8 times) is all it
# holds beside a log read meanwhile. A larger node is decoded after its log on both cores, as before: the bench's week
# (202 MB) would take longer on one core than the imports save, and its frame beside the log's reader would raise the
# run's peak.
AHEAD_BYTES = 16 << 20
# The decode ahead's workers: the one core the imports leave idle. With the shared pool's two, it took the imports'
# core from them in turns: the 7.0 sample's summary took 0.51 s against 0.55 s without the decode ahead; with one,
# 0.46 s against 0.51 s (docs/performance.md).
AHEAD_THREADS = 1


def metric_list(metrics: Metrics) -> list[str] | None:
    if metrics is None:
        return None
    return [metrics] if isinstance(metrics, str) else list(metrics)


def read_arguments(
    files: list[FtdcFile], metrics: Metrics, start: TimeArg, end: TimeArg, time_field: str, max_values: int | None
) -> ReadArguments:
    return (
        [str(f.path) for f in files],
        [f.interim for f in files],
        metric_list(metrics),
        to_ms(start),
        to_ms(end),
        time_field,
        max_values,
    )


@dataclass(frozen=True)
class Decoding:
    """`_native.read(*arguments, catalog=True, keep=keep)` under way on a thread of its own (`decode_ahead`)."""

    arguments: ReadArguments
    keep: bool
    answer: Future[_native.DecodedFrame] = field(repr=False, compare=False)

    def answers(self, arguments: ReadArguments, keep: bool) -> bool:
        """Whether this is the read of `arguments` (with the catalog, keeping every metric if `keep`)."""
        return self.arguments == arguments and self.keep == keep

    def result(self) -> _native.DecodedFrame:
        """The decoded frame, once the decode is done; what it raised, raised here."""
        return self.answer.result()


def decode_ahead(path: PathArg, metrics: Metrics, start: TimeArg, end: TimeArg, *, keep: bool) -> Decoding | None:
    """The catalog and `metrics` of the FTDC at `path` within [start, end], as `reader.read_with_catalog` reads them,
    decoding on a thread of its own from now; None (nothing started) for files over AHEAD_BYTES, and for a path the
    reader would warn of or refuse, which it then does in its turn, once."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            files = resolve(path)
            size = sum(f.path.stat().st_size for f in files)
        except (FTDCError, OSError):
            return None
    if warned or size > AHEAD_BYTES:
        return None
    arguments = read_arguments(files, metrics, start, end, TIME_COLUMN, None)
    answer: Future[_native.DecodedFrame] = Future()

    def decode() -> None:
        try:
            answer.set_result(_native.read(*arguments, catalog=True, keep=keep, threads=AHEAD_THREADS))
        except Exception as exc:  # a decode that failed says why when its answer is asked for
            answer.set_exception(exc)

    # A daemon: a run that stops before it takes the answer (an error in a log) does not wait for it.
    threading.Thread(target=decode, name="decode-ahead", daemon=True).start()
    return Decoding(arguments, keep, answer)
