"""What the analysis of a long recording holds at its peak: a stage that reads a few columns of a frame copies those,
not the frame (a week of FTDC and a 1 GB log with `--report` peaked at 2.2 GB, docs/performance.md). Each stage runs in
a child whose peak RSS is reset (`/proc/self/clear_refs`) once its inputs are built, so the peak is the stage's own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")

PEAK = """
from ftdc.memory import hand_back_freed_pages, release_free_memory

hand_back_freed_pages()  # as the command line runs: what polars frees goes back, so the peak is what is held


def _kb(field):
    return int(open('/proc/self/status').read().split(field + ':')[1].split()[0])

def stage_peak_mb(run):
    release_free_memory()
    open('/proc/self/clear_refs', 'w').write('5')  # the peak RSS (VmHWM) from here
    before = _kb('VmRSS')
    run()
    return (_kb('VmHWM') - before) / 1024
"""


def stage_peak_mb(setup: str, stage: str) -> float:
    """MB the peak RSS of a child rose by while `stage` (an expression) ran, after `setup` built its inputs."""
    code = PEAK + textwrap.dedent(setup) + f"\nprint(stage_peak_mb(lambda: {stage}))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
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


def test_owning_copies_the_columns_that_lie_in_another_frames_buffers_and_keeps_their_values():
    import polars as pl
    from polars.testing import assert_frame_equal

    from ftdc.frames import buffer_addresses, owning

    decoded = pl.DataFrame(
        {
            "n": pl.Series([1, None, 3], dtype=pl.Int64).set_sorted(),
            "t": pl.Series([1, 2, None], dtype=pl.Datetime("ms", "UTC")),
            "b": [True, None, False],
            "x": [0.5, -0.0, float("nan")],
        }
    )
    frame = decoded.select("n", "t", "b", "x", own=pl.int_range(pl.len()))
    other = decoded.select(n_again="n", x_again="x")
    owned, owned_other = owning([frame, other], buffer_addresses(decoded))
    assert_frame_equal(owned, frame, check_exact=True)
    assert_frame_equal(owned_other, other, check_exact=True)
    assert [c.flags for c in owned.get_columns()] == [c.flags for c in frame.get_columns()]
    assert not buffer_addresses(owned.drop("own")) & buffer_addresses(decoded)
    assert buffer_addresses(owned.select("own")) == buffer_addresses(frame.select("own"))  # its own already: not copied
    # A column both pass on is copied once.
    assert buffer_addresses(owned_other) == buffer_addresses(owned.select("n", "x"))


def test_the_derived_series_hold_no_buffer_of_the_decoded_frame(monkeypatch):
    # The decoder's columns are one allocation, freed only once none of them lives: the series passed through
    # unchanged and the recorded columns kept for the columns only shown are copies, where the read is large enough to
    # set a peak (the bar lowered to the demo's here); a small read's are kept as they are (copies would cost more).
    from pathlib import Path

    from analysis.series.derived import BOOKKEEPING, Derived, prepare
    from analysis.series.metrics import candidates, resolve
    from analysis.series.thresholds import effective_thresholds
    from ftdc import memory
    from ftdc.frames import buffer_addresses
    from ftdc.metadata import catalog_metadata
    from ftdc.paths import resolve as files_of
    from ftdc.reader import read_with_catalog

    catalog, raw, _ = read_with_catalog(files_of(Path(__file__).parents[1] / "samples" / "diagnostic.data"), candidates())
    resolved = resolve(catalog.schema())
    prepared = prepare(raw, resolved)
    decoded = buffer_addresses(prepared.drop(*BOOKKEEPING))
    thresholds = effective_thresholds(catalog_metadata(catalog))
    assert buffer_addresses(Derived(prepared, resolved, thresholds).analysed) & decoded  # small: not copied
    monkeypatch.setattr(memory, "WORTH_HANDING_BACK", 0)
    derived = Derived(prepared, resolved, thresholds)
    assert derived._sources is not None and derived._sources.width > 1
    for frame in (derived.analysed, derived._sources, derived.full()):
        assert not buffer_addresses(frame) & decoded
        assert frame["start"].flags["SORTED_ASC"]  # in time order, as polars knew of the decoded frame's


def test_a_log_column_no_row_fills_is_held_as_one_null_and_those_kept_are_not_copied():
    # Fields a version of mongod does not log (8.0's queryShapeHash and workingMillis in a 6.0 log) are null in every
    # row: compacting the frames copied each as a value a row (a string's view is 16 bytes), 80 MB of a 1 GB log's.
    import datetime as dt

    import polars as pl
    from polars.testing import assert_frame_equal

    from ftdc.logs.frames import LogFrames

    t0 = dt.datetime(2024, 5, 6, tzinfo=dt.timezone.utc)
    slow = pl.DataFrame(
        {
            "ts": [t0, None, t0],
            "ns": ["a.b", None, "a.c"],
            "query_shape_hash": pl.Series([None] * 3, dtype=pl.String),
            "working_ms": pl.Series([None] * 3, dtype=pl.Int64),
            "started": pl.Series([None] * 3, dtype=pl.Datetime("ms", "UTC")),
            "ok": pl.Series([None] * 3, dtype=pl.Boolean),
        }
    )
    frames = LogFrames(slow, slow.head(0), pl.DataFrame())
    compact = frames.compact(slow.columns, slow.columns)
    assert_frame_equal(compact.slow_ops, slow, check_exact=True)
    assert_frame_equal(compact.events, slow.head(0), check_exact=True)

    setup = """
    import polars as pl
    from ftdc.logs.frames import LogFrames

    n = 2_000_000
    empty = {f"empty_{i}": pl.Series([None], dtype=pl.String).extend_constant(None, n - 1).rechunk() for i in range(3)}
    slow = pl.DataFrame({"line": range(n), "ns": ["a.b"] * n, **empty})
    frames = LogFrames(slow, slow.head(0), pl.DataFrame())
    """
    assert stage_peak_mb(setup, "frames.compact(slow.columns, slow.columns)") < 80  # three empty columns copied: 96 MB

    # Columns kept are not copied: the decoders hand each over in buffers of its own
    # (tests/test_logs_sources.py::test_each_string_column_holds_its_own_text_and_no_more).
    strings = """
    import polars as pl
    from ftdc.logs.frames import LogFrames

    n = 2_000_000
    slow = pl.DataFrame({"line": range(n), "command_json": pl.int_range(n, eager=True).cast(pl.String) + "-a-command-of-its-own"})
    frames = LogFrames(slow, slow.head(0), pl.DataFrame())
    """
    assert stage_peak_mb(strings, "frames.compact(slow.columns, slow.columns)") < 30  # its strings copied: 86 MB


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallinfo2")
def test_a_narrowed_reads_columns_are_held_in_polars_memory_not_the_c_librarys_heap(log_samples, tmp_path):
    """For an analysis, each block's columns are copied out of the decoder's buffers on its worker (`narrow.narrowed`,
    `Narrowing.copied`): held block after block until the read ended, they left the C library's heap too scattered to
    give back, and the whole frames copied at the end of the read doubled them (a 1 GB log: 1.22 GB peak, now
    0.92)."""
    import gzip

    log = tmp_path / "four.log"
    log.write_bytes(gzip.decompress((log_samples / "mongod-6.0.11" / "sample-mongod.log.gz").read_bytes()) * 4)
    code = textwrap.dedent(
        """
        import ctypes, sys
        from ftdc.memory import hand_back_freed_pages, release_free_memory
        hand_back_freed_pages()
        from analysis.analyze import SLOW_OP_COLUMNS
        from ftdc.logs.narrow import Narrowing
        from ftdc.logs.reader import read_logs

        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Info
        in_use = lambda: (libc.mallinfo2().uordblks + libc.mallinfo2().hblkhd) / 2**20
        release_free_memory()
        before = in_use()
        frames = read_logs(sys.argv[1], narrowing=Narrowing(tuple(SLOW_OP_COLUMNS), copied=sys.argv[2] == 'copied'))
        release_free_memory()
        print(frames.slow_ops.height, in_use() - before)
        """
    )
    held = {}
    for how in ("copied", "as decoded"):
        out = subprocess.run([sys.executable, "-c", code, str(log), how], capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        rows, held[how] = out.stdout.split()
        assert int(rows) == 4 * 27429
    assert float(held["copied"]) < 8 < 20 < float(held["as decoded"]), held  # the columns in the C library's heap: 37 MB


def test_the_series_are_derived_in_plans_that_each_let_their_increases_go():
    # 600 k samples (a week at 1 s) of the demo node: one plan of every column held each counter's increase beside them
    # all, 435 MB; three plans 340 MB.
    setup = """
    from pathlib import Path

    import polars as pl

    from analysis.series.derived import derive, prepare
    from analysis.series.metrics import candidates, resolve
    from analysis.series.thresholds import effective_thresholds
    from ftdc.metadata import catalog_metadata
    from ftdc.paths import resolve as files_of
    from ftdc.reader import read_with_catalog

    catalog, raw, _ = read_with_catalog(files_of(Path("samples/diagnostic.data")), candidates())
    resolved = resolve(catalog.schema())
    prepared = prepare(pl.concat([raw] * (600_000 // raw.height + 1)).rechunk(), resolved)
    thresholds = effective_thresholds(catalog_metadata(catalog))
    del raw
    """
    assert stage_peak_mb(setup, "derive(prepared, resolved, thresholds, shown=False)") < 390


def test_memory_goes_back_after_the_decode_and_after_the_derivation(monkeypatch):
    # After a large log the C library keeps what the decoder freed (its inflated chunks: 200 MB of a week), and the
    # decoded frame is kept for a next read once freed: both are handed back before the next stage adds its own.
    import importlib
    from pathlib import Path

    from analysis.series import derived
    from ftdc import memory

    analyze = importlib.import_module("analysis.analyze")  # the module: the package's `analyze` is the function

    stages: list[str] = []

    def recorded(name, function):
        def run(*args, **kwargs):
            stages.append(name)
            return function(*args, **kwargs)

        return run

    monkeypatch.setattr(analyze, "read_with_catalog", recorded("decode", analyze.read_with_catalog))
    monkeypatch.setattr(analyze, "release_free_memory", recorded("given back", analyze.release_free_memory))
    monkeypatch.setattr(derived.Derived, "__init__", recorded("derive", derived.Derived.__init__))
    monkeypatch.setattr(analyze, "detect", recorded("detect", analyze.detect))
    demo = Path(__file__).parents[1] / "samples" / "diagnostic.data"
    bar = memory.WORTH_HANDING_BACK
    # A read as large as a week's (the bar lowered to the demo's): handed back after each stage.
    monkeypatch.setattr(memory, "WORTH_HANDING_BACK", 0)
    analyze.observe(demo)
    assert stages == ["decode", "given back", "derive", "given back", "detect"]
    # A small run's read gives back too little to move a peak: nothing is handed back, which would cost it a tenth of
    # its time (a full collection, the spare block faulted in again, the arenas trimmed).
    monkeypatch.setattr(memory, "WORTH_HANDING_BACK", bar)
    stages.clear()
    analyze.observe(demo, Path(__file__).parents[1] / "samples" / "mongod.log")
    assert stages == ["decode", "derive", "detect"]
