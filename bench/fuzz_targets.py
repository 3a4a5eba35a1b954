"""Fuzz targets over real files (issue 19 §6), a bounded run in CI (`tests/test_fuzz_targets.py`);
`python -m bench.campaign` runs the same mutators (`bench/mutators.py`) for a million inputs.

Each target takes a real file, applies mutations (hypothesis draws their `random.Random`), and checks what a
user relies on, end to end, not just "no crash":

- FTDC: the catalog, the reader and the lazy scan agree on the columns (a chunk the reader
  skips lends no metric to the catalog), every value can be written out (CSV: no Date
  outside the calendar), and the analysis runs; only `FTDCError` may end a read.
- Log lines: `read_logs` returns frames or raises `NotALog`; every line is a row or a
  problem row; the summary, the `logs` table's description and the problem listing render.
"""

from __future__ import annotations

import io
import random
import warnings
from pathlib import Path

import polars as pl

import analysis
import ftdc
from bench.mutators import mutate_ftdc, split_ftdc
from ftdc import FTDCError
from ftdc.logs import report
from ftdc.logs.sources import NotALog

ROOT = Path(__file__).resolve().parents[1]
DEMO_FTDC = ROOT / "samples" / "diagnostic.data" / "metrics.2024-05-14T09-00-00Z-00000"
DEMO_LOG = ROOT / "samples" / "mongod.log"


def ftdc_seeds(samples: Path) -> dict[str, bytes]:  # samples: ../shared/samples/ftdc
    """Real files: a 4.2.1 archive file (several schemas), the 7.0 interim file, the demo node."""
    return {
        "mongod-4.2.1": (samples / "mongod-4.2.1" / "diagnostic.data" / "metrics.2021-07-13T01-43-32Z-00000").read_bytes(),
        "mongod-7.0-interim": (samples / "mongod-7.0" / "diagnostic.data" / "metrics.interim").read_bytes(),
        "demo": DEMO_FTDC.read_bytes(),
    }


def log_seeds(samples: Path) -> dict[str, list[bytes]]:  # samples: ../shared/samples/logs
    """Real log lines: the demo's JSON log and a 4.2.11 text log."""
    return {
        "json": DEMO_LOG.read_bytes().splitlines(),
        "text": (samples / "legacy-text" / "mongod_4.2.11.log").read_bytes().splitlines()[:200],
    }


def mutated_ftdc(seed: bytes, rng: random.Random) -> bytes:
    """`seed` with edits that know the format (`bench/mutators.py`): envelope, compression,
    reference document, counts and varints."""
    return mutate_ftdc(split_ftdc(seed), rng)


def check_ftdc(path: Path) -> None:
    """What a user relies on when one FTDC file is damaged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            catalog = ftdc.read_catalog(path)
            frame = ftdc.read_ftdc(path)
        except FTDCError:
            return
        assert set(frame.columns) == set(catalog.schema()), "the catalog and the reader disagree on the metrics"
        assert ftdc.scan_ftdc(path).collect().columns == list(catalog.schema())
        frame.write_csv(io.BytesIO())  # every time within the calendar
        frame.to_arrow().cast(pl.DataFrame(schema={c: _micro(t) for c, t in frame.schema.items()}).to_arrow().schema)
        try:
            analysis.analyze(path)
        except FTDCError:
            pass


def _micro(dtype: pl.DataType) -> pl.DataType:
    """The dataset's types: times in microseconds, as Spark reads them."""
    return pl.Datetime("us", "UTC") if isinstance(dtype, pl.Datetime) else dtype


def check_log(path: Path) -> None:
    """What a user relies on when a log is damaged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            frames = ftdc.read_logs(path, workers=1)
        except NotALog:
            return
    lines = path.read_bytes().count(b"\n")
    seen = pl.concat([frames.slow_ops["line"], frames.events["line"], frames.problems["line"]]).drop_nulls().unique()
    assert set(seen.to_list()) == set(range(1, lines + 1)), "a line is neither a row nor a problem"
    ftdc.summarize_queries(frames.slow_ops)
    report.describe(frames, 100)
    report.render_problems_table(frames.problems)
    report.render_problems_text(frames.problems, "csv")
