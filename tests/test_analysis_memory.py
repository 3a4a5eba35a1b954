"""What the analysis of a long recording holds at its peak: a stage that reads a few columns of a frame copies those,
not the frame (a week of FTDC and a 1 GB log with `--report` peaked at 2.2 GB, docs/performance.md). Each stage runs in
a child whose peak RSS is reset (`/proc/self/clear_refs`) once its inputs are built, so the peak is the stage's own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")

PEAK = """
def _kb(field):
    return int(open('/proc/self/status').read().split(field + ':')[1].split()[0])

def stage_peak_mb(run):
    open('/proc/self/clear_refs', 'w').write('5')  # the peak RSS (VmHWM) from here
    before = _kb('VmRSS')
    run()
    return (_kb('VmHWM') - before) / 1024
"""


def stage_peak_mb(setup: str, stage: str) -> float:
    """MB the peak RSS of a child rose by while `stage` (an expression) ran, after `setup` built its inputs."""
    code = PEAK + textwrap.dedent(setup) + f"\nprint(stage_peak_mb(lambda: {stage}))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.split()[-1])


def test_the_completions_test_sorts_the_columns_it_reads_not_the_series_and_the_log():
    # 2 M samples with 30 other series (480 MB) and 2 M slow operations with 10 other columns (160 MB): sorted whole (a
    # copy of each), as they were, they are most of the peak; the columns it reads are 6 of each.
    setup = """
    import datetime as dt
    import numpy as np
    import polars as pl
    from analysis.series.completions import stalls
    from analysis.series.spikes import Spike

    n = 2_000_000
    t0 = dt.datetime(2024, 5, 6, tzinfo=dt.timezone.utc)
    # Times as a decoded frame holds them: in order, but not flagged sorted (so sorting them is no free step).
    at = pl.Series(np.arange(n) * 1000 + 1_715_000_000_000).cast(pl.Datetime("ms", "UTC"))
    other = {f"other_{i}": np.random.default_rng(i).random(n) for i in range(30)}
    series = pl.DataFrame({"start": at, "interval_s": 1.0, "reads_per_s": 2000.0, "reads_latency_ms": 0.3, **other})
    ops = pl.DataFrame(
        {
            "ts": at.reverse(), "started": at.reverse(), "duration_ms": 10, "command": "find", "op_type": "query", "write_statement": False,
            **{f"other_{i}": np.arange(n) for i in range(10)},
        }
    )
    spikes = [Spike("reads", at[n // 2 + k * 10], at[n // 2 + k * 10 + 1], 150.0, 0.3, at[n // 2 + k * 10 + 1]) for k in range(5)]
    """
    assert stage_peak_mb(setup, "stalls(spikes, series, ops)") < 300  # 785 MB before, 174 MB now
