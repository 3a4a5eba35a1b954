"""What quoting the slowest lines costs an analysis's log reading (the slow-operation table's three longest runs of
each shape, read again by their line numbers: `observe.with_slowest_lines`).

Side by side in one process, alternating rounds in turn (ABBA; medians; the load average printed beside), on the
6.0.11 sample repeated to --gb (bench_logs.build_log), plain and gzipped:
  compact   read_compact_logs as the analysis reads a log (the lines quoted)
  without   the same with the lines not quoted (with_slowest_lines replaced by the frame itself)
  lines     with_slowest_lines alone on the frames read (choosing the runs, reading their lines again)
  pass      the worst case of the reading again: the file's last line asked for, so every byte is read once more
            (the repeated sample's slowest runs all lie in its first copy, where the reading stops)
and the lines quoted, their count and the bytes of the `line_text` column. Then the table's own grouping on the
plain log's frames: `log_overview.queries` (its columns of this round: minimum, response size, plans, slowest runs,
per-run figures, a command's shape) against `summarize_queries` with the columns the table had before them.

    python -m bench.bench_slowest_lines [--gb 0.25] [--rounds 3]
"""

import argparse
import gzip
import os
import shutil
import statistics
import time
from pathlib import Path

from analysis import observe
from bench.bench_logs import build_log
from ftdc.logs.lines import line_texts


def build_gzip(plain: Path) -> Path:
    target = plain.with_suffix(".log.gz")
    if not target.exists():
        partial = target.with_suffix(".partial")
        with open(plain, "rb") as source, gzip.open(partial, "wb", compresslevel=1) as out:
            shutil.copyfileobj(source, out, 1 << 20)
        partial.rename(target)
    return target


def timed(path: Path, quote: bool) -> tuple[float, object]:
    original = observe.with_slowest_lines
    if not quote:
        observe.with_slowest_lines = lambda slow_ops, logs: slow_ops
    try:
        start = time.perf_counter()
        frames = observe.read_compact_logs(path)
        return time.perf_counter() - start, frames
    finally:
        observe.with_slowest_lines = original


def _clock(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=0.25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    plain = build_log(args.gb)
    for path in (plain, build_gzip(plain)):
        times: dict[str, list[float]] = {"compact": [], "without": [], "lines": [], "pass": []}
        for n in range(args.rounds):
            for quote in (True, False) if n % 2 == 0 else (False, True):
                seconds, frames = timed(path, quote)
                times["compact" if quote else "without"].append(seconds)
                if quote:
                    quoted = frames.slow_ops["line_text"]
                else:
                    slow = frames.slow_ops
                    times["lines"].append(_clock(observe.with_slowest_lines, slow, path))
                    file, last = slow["file"][-1], int(slow["line"].max())
                    times["pass"].append(_clock(line_texts, path, {file: [last]}))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{path.name} ({path.stat().st_size / 1e6:,.0f} MB): compact {med['compact']:.2f} s, without the lines "
            f"{med['without']:.2f} s (ratio {med['compact'] / med['without']:.3f}); the lines step {med['lines']:.2f} s "
            f"({med['lines'] / med['without']:.1%} of the read), a whole pass {med['pass']:.2f} s "
            f"({med['pass'] / med['without']:.1%}); rounds: { {k: [round(t, 2) for t in v] for k, v in times.items()} }; "
            f"{quoted.is_not_null().sum():,} lines quoted of {quoted.len():,} slow operations, "
            f"line_text {quoted.estimated_size() / 1e6:.1f} MB; load {os.getloadavg()[0]:.1f}"
        )
    table_cost(plain, args.rounds)


# The table's columns before this round's: who ran each shape, 8.0's working and queued time, its failures.
BEFORE = ("apps", "working_ms", "working_runs", "queued_ms", "failed", "errors")


def table_cost(path: Path, rounds: int) -> None:
    from analysis.workbench import log_overview
    from ftdc.logs.summary import summarize_queries

    frames = observe.read_compact_logs(path)
    before = {k: v for k, v in log_overview.QUERY_EXTRAS.items() if k in BEFORE}
    times: dict[str, list[float]] = {"now": [], "before": []}
    for n in range(rounds):
        for now in (True, False) if n % 2 == 0 else (False, True):
            if now:
                times["now"].append(_clock(log_overview.queries, frames))
            else:
                times["before"].append(_clock(summarize_queries, frames.slow_ops, "total", extra=before))
    now, was = statistics.median(times["now"]), statistics.median(times["before"])
    print(
        f"the table's grouping of {frames.slow_ops.height:,} slow operations: {now:.3f} s now, {was:.3f} s with the "
        f"columns before; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
