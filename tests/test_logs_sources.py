"""Inputs: multi-member gzip, rotated sets, directories, tar archives of several nodes."""

import bz2
import gzip
import json
import tarfile

import polars as pl
import pytest

from ftdc.logs import NotALog, SourceError, read_logs
from ftdc.logs.sources import plain_bytes

SAMPLE = "mongod-6.0.11/sample-mongod.log.gz"


@pytest.fixture(scope="module")
def sample_lines(log_samples):
    return gzip.decompress((log_samples / SAMPLE).read_bytes()).splitlines(keepends=True)


def test_multi_member_gzip_equals_plain(tmp_path, sample_lines):
    half = len(sample_lines) // 2
    members = gzip.compress(b"".join(sample_lines[:half])) + gzip.compress(b"".join(sample_lines[half:]))
    (tmp_path / "multi.log.gz").write_bytes(members)
    (tmp_path / "plain.log").write_bytes(b"".join(sample_lines))
    multi, plain = read_logs(tmp_path / "multi.log.gz"), read_logs(tmp_path / "plain.log")
    assert multi.slow_ops.height == plain.slow_ops.height == 27429
    assert multi.slow_ops.drop("file").equals(plain.slow_ops.drop("file"))


def test_rotated_set_in_directory(tmp_path, sample_lines):
    # The live file holds the later lines; its node comes from the rotated file's start-up line.
    half = len(sample_lines) // 2
    (tmp_path / "mongod.log.2023-09-23T20-26-00").write_bytes(b"".join(sample_lines[:half]))
    (tmp_path / "mongod.log").write_bytes(b"".join(sample_lines[half:]))
    frames = read_logs(tmp_path)
    files = frames.slow_ops["file"].unique(maintain_order=True).to_list()
    assert [f.rsplit("/", 1)[1] for f in files] == ["mongod.log.2023-09-23T20-26-00", "mongod.log"]
    assert frames.slow_ops.height == 27429
    assert frames.slow_ops["node"].unique().to_list() == ["demo.simagix.com:27017"]
    live = frames.slow_ops.filter(pl.col("file").str.ends_with("/mongod.log"))
    assert live["line"].min() == 1


def test_tar_of_two_nodes(tmp_path, log_samples):
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(log_samples / SAMPLE, arcname="node1/mongod.log.gz")
        atlas = next((log_samples / "atlas-8.0.12").glob("*.gz"))
        tar.add(atlas, arcname="node2/mongod.log.gz")
    frames = read_logs(archive)
    counts = dict(frames.slow_ops.group_by("node").len().iter_rows())
    assert counts == {"demo.simagix.com:27017": 27429, "atlas-o3y5yd-shard-00-00.ufghn.mongodb.net:27017": 43}
    assert all("!node" in f for f in frames.slow_ops["file"].unique())


def test_missing_path_raises_source_error(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        read_logs(tmp_path / "absent.log")


def test_empty_inputs(tmp_path, sample_lines):
    (tmp_path / "empty.log").write_bytes(b"")
    with pytest.raises(NotALog, match="empty.log: no mongod log line"):
        read_logs(tmp_path / "empty.log")
    # A window with nothing in it is an empty answer, with the columns' types.
    (tmp_path / "mongod.log").write_bytes(b"".join(sample_lines))
    frames = read_logs(tmp_path / "mongod.log", start="2100-01-01")
    assert frames.slow_ops.is_empty() and frames.events.is_empty() and frames.problems.is_empty()
    assert frames.slow_ops.schema["ts"] == pl.Datetime("ms", "UTC")


def test_parallel_workers_match_in_process(tmp_path, sample_lines):
    path = tmp_path / "mongod.log"
    path.write_bytes(b"".join(sample_lines))
    from ftdc.logs import sources

    old = sources.BLOCK_BYTES
    sources.BLOCK_BYTES = 1 << 20  # several blocks from a small file
    try:
        one, two = read_logs(path, workers=1), read_logs(path, workers=2)
    finally:
        sources.BLOCK_BYTES = old
    assert one.slow_ops.equals(two.slow_ops) and one.events.equals(two.events)
    assert one.slow_ops["line"].is_sorted() and one.slow_ops["line"].max() > 20000


def test_compact_keeps_values_and_frees_the_log_text(log_samples, tmp_path):
    """Kept columns hold their own strings, so the blocks of text they were parsed from can go."""
    import gzip
    import subprocess
    import sys

    sample = gzip.decompress((log_samples / "mongod-6.0.11" / "sample-mongod.log.gz").read_bytes())
    log = tmp_path / "big.log"
    log.write_bytes(sample * 8)  # ~220 MB of text
    frames = read_logs(log_samples / "mongod-6.0.11" / "sample-mongod.log.gz")
    columns = ["ts", "ns", "command_json", "shape"]
    compact = frames.compact(columns, ["ts", "kind", "text"])
    assert compact.slow_ops.equals(frames.slow_ops.select(columns)) and compact.events.equals(
        frames.events.select("ts", "kind", "text")
    )
    code = (
        "import sys\nfrom ftdc.memory import hand_back_freed_pages, release_free_memory\nhand_back_freed_pages()\n"
        "import ftdc\nfrom ftdc.logs.narrow import Narrowing\n"
        "rss = lambda: int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) // 1024\n"
        "size = lambda f: (f.slow_ops.estimated_size() + f.events.estimated_size()) // 2**20\n"
        "f = ftdc.read_logs(sys.argv[1], narrowing=Narrowing(copied=True)); release_free_memory(); held, whole = rss(), size(f)\n"
        "f = f.compact(['ts', 'ns', 'command_json', 'shape'], ['ts', 'kind']); release_free_memory()\n"
        "print(held, rss(), whole - size(f))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True)
    held, compacted, dropped = map(int, out.stdout.split())
    # What the dropped columns held goes back (63 MB of this log's), read as the analyses read it
    # (each block's columns copied into polars' memory on its worker): strings left as views into
    # the blocks' text would keep all of it.
    assert dropped > 40 and held - compacted >= 0.8 * dropped, (held, compacted, dropped)


def _text_held(column: pl.Series) -> int:
    """Bytes of the data buffers a string column keeps alive (its strings of over 12 bytes live there; shorter ones
    in the views themselves), each buffer counted once."""
    import pyarrow as pa

    array = column.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    return sum({b.address: b.size for c in chunks for b in c.buffers()[2:] if b is not None}.values())


@pytest.mark.parametrize("log", [SAMPLE, "atlas-8.0.12", "legacy-text/mongod_4.2.11.log", "legacy-text/collscans.log"])
def test_each_string_column_holds_its_own_text_and_no_more(log_samples, log):
    """What lets `LogFrames.compact` keep columns without copying them: the decoders hand each string column over in
    buffers of its own, not as views into the block of text it was read from, so a column kept holds its own strings
    (a repeated value may be held once) and one dropped gives its text back."""
    frames = read_logs(log_samples / log)
    assert frames.events.height > 0 and (frames.slow_ops.height > 0 or log.endswith("4.2.11.log"))
    for frame in (frames.slow_ops, frames.events):
        for name, dtype in frame.schema.items():
            if dtype == pl.String:
                column = frame[name]
                lengths = column.str.len_bytes()
                own = int(lengths.filter(lengths > 12).sum() or 0)
                assert _text_held(column) <= own + (64 << 10), (log, name, _text_held(column), own)


def test_memory_goes_back_before_the_joins_of_large_input_only(tmp_path, sample_lines, monkeypatch):
    """A full collection costs more than reading a small log (fleet and `logs` read many):
    read_logs releases freed memory only from RELEASE_FROM_BYTES of input, and the frames are
    the same either way."""
    import ftdc.logs.reader as reader

    released = []
    monkeypatch.setattr(reader, "release_free_memory", lambda: released.append(True))
    log = tmp_path / "mongod.log"
    log.write_bytes(b"".join(sample_lines[:200]))
    small = read_logs(log)
    assert released == []
    monkeypatch.setattr(reader, "RELEASE_FROM_BYTES", log.stat().st_size)
    large = read_logs(log)
    assert released == [True]
    assert small.slow_ops.equals(large.slow_ops) and small.events.equals(large.events)


def test_the_c_library_is_looked_up_once(monkeypatch):
    import ctypes.util

    from ftdc import memory

    memory._libc.cache_clear()
    looked = []
    real = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: looked.append(name) or real(name))
    monkeypatch.setenv(memory.POLARS_ALLOCATOR, "")  # restored after: polars has read it already
    monkeypatch.setenv(memory.C_ALLOCATOR, "")  # as a user's: this process's C library is left as it is
    memory.hand_back_freed_pages()
    memory.release_free_memory()
    memory.release_free_memory()
    assert len(looked) <= 1


def test_write_lines_count_unless_their_batch_logged_itself(tmp_path):
    """A WRITE line repeats the COMMAND line of its batch (same connection and collection, logged
    after it, begun before it ended); one no command line covers is an operation of its own."""

    def line(t, c, ctx, attr):
        return json.dumps(
            {
                "t": {"$date": f"2024-05-14T09:00:{t}Z"},
                "s": "I",
                "c": c,
                "id": 51803,
                "ctx": ctx,
                "msg": "Slow query",
                "attr": attr,
            }
        )

    statement = {
        "type": "update",
        "ns": "shop.orders",
        "command": {"q": {"_id": 1}, "u": {"$set": {"a": 1}}},
        "planSummary": "IDHACK",
    }
    batch = {
        "type": "command",
        "ns": "shop.$cmd",
        "command": {"update": "orders", "updates": [], "$db": "shop"},
        "planSummary": "IDHACK",
    }
    path = tmp_path / "mongod.log"
    path.write_text(
        "\n".join(
            [
                line("01.500", "WRITE", "conn1", {**statement, "durationMillis": 500}),  # its batch follows: repeated
                line("01.501", "COMMAND", "conn1", {**batch, "durationMillis": 498}),
                line("05.000", "WRITE", "conn2", {**statement, "durationMillis": 900}),  # no batch line: counts
                line(
                    "07.000", "WRITE", "conn3", {**statement, "durationMillis": 300}
                ),  # the next batch began after it ended: counts
                line("09.000", "COMMAND", "conn3", {**batch, "durationMillis": 1000}),
            ]
        )
        + "\n"
    )
    slow = read_logs(path).slow_ops
    assert slow.select("connection", "component", "write_statement").rows() == [
        ("conn1", "WRITE", True),
        ("conn1", "COMMAND", False),
        ("conn2", "WRITE", False),
        ("conn3", "WRITE", False),
        ("conn3", "COMMAND", False),
    ]


def test_demo_slow_updates_are_counted():
    """The demo's 14 slow shop.orders updates (1.5-8.7 s) are WRITE lines with no COMMAND line."""
    from pathlib import Path

    from ftdc.logs import summarize_queries

    log = Path(__file__).resolve().parents[1] / "samples" / "mongod.log"
    summary = summarize_queries(read_logs(log).slow_ops)
    updates = summary.filter(pl.col("ns") == "shop.orders", pl.col("command") == "update").row(0, named=True)
    assert updates["count"] == 14 and 1500 <= updates["p50_ms"] and updates["max_ms"] <= 9000


def test_only_plain_log_files_say_what_passes_through_the_reader(tmp_path):
    plain, other = tmp_path / "a.log", tmp_path / "b.log"
    plain.write_bytes(b'{"t": 1}\n' * 100)
    other.write_bytes(b"\0" * 10 + b'{"t": 2}\n')  # copytruncate's NULs first: still plain text
    assert plain_bytes([plain, other]) == 900 + 19
    packed = tmp_path / "logs.tar"
    with tarfile.open(packed, "w") as archive:
        archive.add(plain, arcname="mongod.log")
    squeezed = tmp_path / "c.log.bz2"
    squeezed.write_bytes(bz2.compress(plain.read_bytes()))
    for unsaid in (packed, squeezed, tmp_path, tmp_path / "missing.log"):
        assert plain_bytes([plain, unsaid]) is None, unsaid
