"""Benchmark of the latency baselines (issue 22): the median and quartiles of the 10 minutes before each sample, for
the three operation classes of a busy node at 1 s, by the native core (`analysis.series.rolling.quantiles_before`,
what the spike test uses) and by polars' `rolling_median_by` / `rolling_quantile_by(closed="left")` (what it used
before), side by side in one process, alternating rounds, the load average around each. Both give the same values
to the bit (checked here on every round's first class, and by tests/test_rolling.py).

    python -m bench.bench_baselines [--days 1 7] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time

import numpy as np
import polars as pl

from analysis.series.rolling import quantiles_before
from analysis.series.spikes import BASELINE, OP_CLASSES

QUANTILES = {"median": (0.5, "linear"), "q1": (0.25, "nearest"), "q3": (0.75, "nearest")}


def busy_node(days: float) -> pl.DataFrame:
    """Sample times at 1 s with a few milliseconds of jitter, and each class's mean latency (ms) varying around
    half a millisecond, a few samples null (too few operations), as a busy node's derived series has them."""
    rng = np.random.default_rng(7)
    n = int(days * 86_400)
    epoch_ms = int(dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc).timestamp() * 1000)
    ms = epoch_ms + np.arange(n, dtype=np.int64) * 1000 + rng.integers(-3, 4, n)
    latencies = {op: rng.gamma(4.0, 0.125, n) for op in OP_CLASSES}
    frame = pl.DataFrame({"start": pl.Series(ms).cast(pl.Datetime("ms")).dt.replace_time_zone("UTC")})
    return frame.with_columns(
        pl.Series(op, np.where(rng.random(n) < 0.01, np.nan, latencies[op])).fill_nan(None) for op in OP_CLASSES
    )


def native(frame: pl.DataFrame) -> list[pl.DataFrame]:
    return [r.frame() for r in quantiles_before(frame["start"], [frame[op] for op in OP_CLASSES], BASELINE, QUANTILES)]


def with_polars(frame: pl.DataFrame) -> list[pl.DataFrame]:
    window = f"{BASELINE // dt.timedelta(seconds=1)}s"
    return [
        frame.select(
            count=pl.col(op).is_not_null().cast(pl.UInt32).rolling_sum_by("start", window, closed="left").fill_null(0),
            median=pl.col(op).rolling_median_by("start", window, closed="left"),
            q1=pl.col(op).rolling_quantile_by("start", window, quantile=0.25, closed="left"),
            q3=pl.col(op).rolling_quantile_by("start", window, quantile=0.75, closed="left"),
        )
        for op in OP_CLASSES
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, nargs="+", default=[1, 7])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    out = {}
    for days in args.days:
        frame = busy_node(days)
        ratios, natives, polars_s, loads = [], [], [], []
        for _ in range(args.rounds):
            load = os.getloadavg()[0]
            start = time.perf_counter()
            ours = native(frame)
            natives.append(time.perf_counter() - start)
            start = time.perf_counter()
            theirs = with_polars(frame)
            polars_s.append(time.perf_counter() - start)
            assert ours[0].equals(theirs[0]), "the native windows differ from polars'"
            ratios.append(natives[-1] / polars_s[-1])
            loads.append(round((load + os.getloadavg()[0]) / 2, 1))
            print(
                f"  {days:g} d: native {natives[-1]:.3f} s, polars {polars_s[-1]:.3f} s (x {ratios[-1]:.2f}), load {loads[-1]}",
                file=sys.stderr,
            )
        out[f"{days:g}d"] = {
            "samples": frame.height,
            "native_s": round(statistics.median(natives), 3),
            "polars_s": round(statistics.median(polars_s), 3),
            "native_over_polars": round(statistics.median(ratios), 3),
            "load_average": loads,
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
