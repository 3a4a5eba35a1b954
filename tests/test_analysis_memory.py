"""What the analysis of a long recording holds at its peak: a stage that reads a few columns of a frame copies those,
not the frame (a week of FTDC and a 1 GB log with `--report` peaked at 2.2 GB, docs/performance.md). Each stage runs in
a child whose peak RSS is reset (`/proc/self/clear_refs`) once its inputs are built, so the peak is the stage's own."""

from __future__ import annotations

import os
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


def _addresses(frame) -> set[int]:
    """Where the buffers of `frame`'s columns lie (their Arrow buffers' addresses)."""
    return {
        buffer.address for column in frame.to_arrow().columns for chunk in column.chunks for buffer in chunk.buffers() if buffer
    }


def _mapping_rss_kb(address: int) -> int:
    """The resident kB of the memory mapping `address` lies in (/proc/self/smaps)."""
    inside = False
    for line in open("/proc/self/smaps"):
        head = line.split()[0]
        if "-" in head and ":" not in head:
            low, high = (int(part, 16) for part in head.split("-"))
            inside = low <= address < high
        elif inside and head == "Rss:":
            return int(line.split()[1])
    raise AssertionError(f"no mapping holds {address:#x}")


def test_a_decoded_column_no_longer_held_gives_its_memory_back_when_asked_while_another_is_held():
    # The decoder puts every column of a read in one mapping: a week's analysis held all 376 MB of it while any
    # column lived (or copied the columns it kept). Each column's pages now go back once nothing holds it, when the
    # process asks (between a derivation's plans, `release_free_memory`); a read dropped whole keeps its pages for the
    # next read to reuse.
    import gc

    import polars as pl

    from ftdc import _native, read_ftdc
    from ftdc.memory import release_dropped_columns

    _native.release_spare()  # a mapping of this read's own, not a larger one an earlier read left for reuse
    frame = read_ftdc(ROOT / "samples" / "diagnostic.data")
    stored = [name for name, dtype in frame.schema.items() if dtype == pl.Int64 and frame[name].n_unique() > 1]
    kept = frame.select(stored[0])
    copy = kept.clone().with_columns(pl.col(stored[0]) + 0)  # its values, in memory of its own
    address = kept[stored[0]].to_arrow().buffers()[1].address
    column_kb = frame.height * 8 / 1024
    before = _mapping_rss_kb(address)
    del frame
    gc.collect()
    assert _mapping_rss_kb(address) == before  # not yet asked
    release_dropped_columns()
    # Every other column that changes went back, less the pages the kept one shares at its ends (the kernel may have
    # merged the mapping with a neighbour, so only what went is counted).
    assert before - _mapping_rss_kb(address) >= (len(stored) - 1) * column_kb - 8
    assert kept.equals(copy)  # the column held is as it was


def test_columns_equal_to_the_bit_hold_one_memory_and_no_value_changes():
    import numpy as np
    import polars as pl
    from polars.testing import assert_frame_equal

    from analysis.series.derived import Held

    zeros = pl.Series([0.0, None, 0.0, 0.0])
    frame = pl.DataFrame(
        {
            "a": zeros,
            "b": zeros + 0,  # equal, in memory of its own
            "negative": pl.Series([-0.0, None, 0.0, 0.0]),  # equal to `a` as `equals` has it, not to the bit
            "nan": pl.Series([0.0, float("nan"), 0.0, 0.0]),  # NaN where `a` is null
            "other_nulls": pl.Series([None, 0.0, 0.0, 0.0]),
            "n": pl.Series([4, 4, 4, 4]),
            "a32": zeros.cast(pl.Float32),  # the type is part of the key: not `a`'s memory
            "negative32": pl.Series([-0.0, None, 0.0, 0.0], dtype=pl.Float32),  # to the bit in 32 bits too
        }
    )
    held = Held()
    shared = held.shared(frame)
    assert_frame_equal(shared, frame, check_exact=True)
    assert np.signbit(shared["negative"].to_numpy()[0])
    assert _addresses(shared.select("b")) == _addresses(shared.select("a"))
    for other in ("negative", "nan", "other_nulls", "n", "a32"):
        assert not _addresses(shared.select(other)) & _addresses(shared.select("a")), other
    assert np.signbit(shared["negative32"].to_numpy()[0])
    assert not _addresses(shared.select("negative32")) & _addresses(shared.select("a32"))
    # A later frame's equal column holds the memory of the first frame's.
    later = held.shared(pl.DataFrame({"c": zeros * 1, "m": pl.Series([4, 4, 4, 4])}))
    assert _addresses(later.select("c")) == _addresses(shared.select("a"))
    assert _addresses(later.select("m")) == _addresses(shared.select("n"))
    # A frame held without comparing (one shared already): a later frame's equal column holds its memory.
    holding = Held()
    holding.hold(shared)
    again = holding.shared(pl.DataFrame({"d": zeros * 1, "o": pl.Series([5, 5, 5, 5])}))
    assert _addresses(again.select("d")) == _addresses(shared.select("a"))
    assert not _addresses(again.select("o")) & _addresses(shared)


def test_the_derivation_takes_the_prepared_frame_over_and_leaves_it_what_the_shown_columns_need():
    from pathlib import Path

    from polars.testing import assert_frame_equal

    from analysis.series.derived import BOOKKEEPING, Derived, derive, prepare
    from analysis.series.metrics import candidates, resolve
    from analysis.series.thresholds import effective_thresholds
    from ftdc.frames import TIME_COLUMN
    from ftdc.metadata import catalog_metadata
    from ftdc.paths import resolve as files_of
    from ftdc.reader import read_with_catalog

    catalog, raw, _ = read_with_catalog(files_of(Path(__file__).parents[1] / "samples" / "diagnostic.data"), candidates())
    resolved = resolve(catalog.schema())
    thresholds = effective_thresholds(catalog_metadata(catalog))
    whole = derive(prepare(raw, resolved), resolved, thresholds)
    prepared = prepare(raw, resolved)
    recorded = prepared.width - 1 - len(BOOKKEEPING)
    derived = Derived(prepared, resolved, thresholds)
    assert derived._sources is not None
    left = [c for c in prepared.columns if c != TIME_COLUMN and c not in BOOKKEEPING]
    assert 0 < len(left) < recorded / 4
    assert left == [c for c in derived._sources.columns if c != TIME_COLUMN and c not in BOOKKEEPING]
    assert_frame_equal(derived.full(), whole, check_exact=True)


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
        from analysis.observe import SLOW_OP_COLUMNS
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
    from pathlib import Path

    from analysis import observe
    from analysis.series import derived
    from ftdc import memory

    stages: list[str] = []

    def recorded(name, function):
        def run(*args, **kwargs):
            stages.append(name)
            return function(*args, **kwargs)

        return run

    monkeypatch.setattr(observe, "read_with_catalog", recorded("decode", observe.read_with_catalog))
    monkeypatch.setattr(observe, "release_free_memory", recorded("given back", observe.release_free_memory))
    monkeypatch.setattr(derived.Derived, "__init__", recorded("derive", derived.Derived.__init__))
    monkeypatch.setattr(observe, "detect", recorded("detect", observe.detect))
    demo = Path(__file__).parents[1] / "samples" / "diagnostic.data"
    bar = memory.WORTH_HANDING_BACK
    # A read as large as a week's (the bar lowered to the demo's): handed back after each stage.
    monkeypatch.setattr(memory, "WORTH_HANDING_BACK", 0)
    observe.observe(demo)
    assert stages == ["decode", "given back", "derive", "given back", "detect"]
    # A small run's read gives back too little to move a peak: nothing is handed back, which would cost it a tenth of
    # its time (a full collection, the spare block faulted in again, the arenas trimmed).
    monkeypatch.setattr(memory, "WORTH_HANDING_BACK", bar)
    stages.clear()
    observe.observe(demo, Path(__file__).parents[1] / "samples" / "mongod.log")
    assert stages == ["decode", "derive", "detect"]


@pytest.mark.parametrize(("hands_back", "kept_at_least", "kept_at_most"), [(True, 0, 6), (False, 16, None)])
def test_a_run_that_hands_pages_back_gives_back_what_is_freed_atop_the_c_librarys_heap(hands_back, kept_at_least, kept_at_most):
    """After a buffer of 16 MB is freed, glibc serves buffers of up to that size from its heap and keeps up to twice
    that freed atop it: a run that reads a large log then kept what its later stages freed until it trimmed. A run
    that hands freed pages back sets the threshold, which turns the keeping off."""
    code = textwrap.dedent(
        f"""
        from ftdc import memory
        if {hands_back}:
            memory.hand_back_freed_pages()
        import numpy as np
        rss = lambda: int(open('/proc/self/status').read().split('RssAnon:')[1].split()[0]) / 1024
        big = np.ones(2 << 20); del big  # 16 MB mapped and unmapped
        before = rss()
        arrays = [np.ones(1 << 20) for _ in range(3)]  # 24 MB in three buffers, written
        del arrays
        print(rss() - before)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    kept = float(out.stdout)
    assert kept >= kept_at_least and (kept_at_most is None or kept <= kept_at_most), kept


@pytest.mark.parametrize("users", [None, "65536"])
def test_the_c_librarys_threshold_is_set_unless_the_user_set_it(monkeypatch, users):
    from ftdc import memory

    calls = []

    class Libc:
        def mallopt(self, setting, value):
            calls.append((setting, value))

    monkeypatch.setattr(memory, "_libc", Libc)
    monkeypatch.setenv(memory.POLARS_ALLOCATOR, "")  # restored after: polars has read it already
    if users is None:
        monkeypatch.delenv(memory.C_ALLOCATOR, raising=False)
    else:
        monkeypatch.setenv(memory.C_ALLOCATOR, users)
    memory.hand_back_freed_pages()
    assert calls == ([(memory.M_MMAP_THRESHOLD, memory.C_LARGE_BUFFER)] if users is None else [])
