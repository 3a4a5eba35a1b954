"""Untrusted logs stay bounded: a line past the limit is skipped as one problem row (the
lines after it keep their numbers), gzip inflates a step at a time whatever its ratio,
and the regrouping into blocks loses and invents nothing."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ftdc.logs import NotALog, read_logs, sources

ROOT = Path(__file__).resolve().parents[1]


def _slow(i: int) -> bytes:
    return (
        json.dumps(
            {
                "t": {"$date": f"2024-01-02T03:{i // 60:02d}:{i % 60:02d}.000Z"},
                "s": "I",
                "c": "COMMAND",
                "id": 51803,
                "ctx": "conn7",
                "msg": "Slow query",
                "attr": {
                    "type": "command",
                    "ns": "db.c",
                    "command": {"find": "c", "filter": {"n": i}},
                    "planSummary": "COLLSCAN",
                    "durationMillis": 100 + i,
                },
            }
        ).encode()
        + b"\n"
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(sources, "_READ_BYTES", 1024)  # gzip's pieces, small next to the limit as 1 MiB is to 64
    monkeypatch.setattr(sources, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 16384)


@pytest.mark.parametrize("name", ["mongod.log", "mongod.log.gz"])
def test_a_line_past_the_limit_is_one_problem_and_the_numbers_after_it_hold(tmp_path, small_limits, name):
    # 60 slow queries, one of them longer than a block but within the limit, then a
    # 100 KB line, then 60 more.
    long_but_fine = _slow(30).replace(b'"n": 30', b'"n": "' + b"v" * 10000 + b'"')
    before = [_slow(i) for i in range(60)]
    before[30] = long_but_fine
    data = b"".join(before) + b"x" * 100_000 + b"\n" + b"".join(_slow(i) for i in range(60, 120))
    frames = read_logs(_write(tmp_path / name, data))
    assert frames.slow_ops.height == 120
    assert frames.slow_ops["line"].to_list() == [*range(1, 61), *range(62, 122)]
    assert frames.slow_ops.filter(frames.slow_ops["line"] == 31)["command_json"][0].count("v") == 10000
    [problem] = frames.problems.rows(named=True)
    assert (problem["line"], problem["reason"]) == (61, "line longer than 16384 bytes: skipped")
    assert problem["text"].startswith("xxxx")


@pytest.mark.parametrize("name", ["mongod.log", "mongod.log.gz"])
def test_an_endless_last_line_is_skipped_and_what_came_before_kept(tmp_path, small_limits, name):
    data = b"".join(_slow(i) for i in range(10)) + b"{" * 50_000
    frames = read_logs(_write(tmp_path / name, data))
    assert frames.slow_ops.height == 10
    assert [(r["line"], r["reason"]) for r in frames.problems.rows(named=True)] == [(11, "line longer than 16384 bytes: skipped")]


def test_a_file_of_one_endless_line_is_not_a_log(tmp_path, small_limits):
    with pytest.raises(NotALog, match="no mongod log line"):
        read_logs(_write(tmp_path / "mongod.log", b"a" * 100_000))


def test_the_cli_says_so_in_one_line_at_the_real_limit(tmp_path):
    path = tmp_path / "mongod.log"
    path.write_bytes(b"A" * (sources.MAX_LINE_BYTES + 1))
    result = subprocess.run([sys.executable, "-m", "cli", "logs", str(path)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "no mongod log line" in result.stderr and str(path) in result.stderr


def test_gzip_inflates_a_step_at_a_time_whatever_the_ratio(tmp_path):
    # 64 MB of one byte compress to 64 KB: one call to inflate it all would hold 64 MB at once.
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(b"a" * (64 << 20), compresslevel=9) + gzip.compress(b"tail\n"))
    [source] = sources.expand(bomb)
    sizes = [len(piece) for piece in sources.read_chunks(source)]
    assert sum(sizes) == (64 << 20) + 5 and max(sizes) <= sources._READ_BYTES


def test_a_gzipped_endless_line_is_read_in_bounded_memory(tmp_path):
    """A gzip of a 512 MiB line (0.5 MB on disk) costs about a limit (64 MiB), not the line."""
    path = tmp_path / "mongod.log.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"".join(_slow(i) for i in range(10)))
        piece = b"z" * (1 << 20)
        for _ in range(512):
            out.write(piece)
        out.write(b"\n" + _slow(11))
    code = (
        "import sys, ftdc\n"
        "frames = ftdc.read_logs(sys.argv[1])\n"
        "status = open('/proc/self/status').read()\n"
        "print(frames.slow_ops.height, frames.problems.height, int(status.split('VmHWM:')[1].split()[0]) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True, check=True)
    slow, problems, peak_mb = map(int, out.stdout.split())
    assert (slow, problems) == (11, 1)
    assert peak_mb < 400, peak_mb


lines = st.lists(st.binary(max_size=700).map(lambda b: b.replace(b"\n", b" ")), max_size=40)


@settings(max_examples=200, deadline=None)
@given(lines, st.lists(st.integers(1, 300), min_size=1, max_size=20), st.booleans())
# A chunk that crosses the block size past a newline: the block carries the bytes after
# that newline (data[end:], documented in line_blocks) and the next block starts with
# them again. Asserting end == len(block) failed here, and with any seed drawing such a chunk.
@example([b"a" * 100] * 10, [150], False)
def test_line_blocks_keep_every_line_within_the_limit_and_skip_the_rest(lines, chunk_sizes, last_ended):
    data = b"\n".join(lines) + (b"\n" if last_ended and lines else b"")
    cuts, chunks, at = iter(chunk_sizes * (len(data) // sum(chunk_sizes) + 1)), [], 0
    while at < len(data):
        step = next(cuts)
        chunks.append(data[at : at + step])
        at += step
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sources, "BLOCK_BYTES", 256)
        patch.setattr(sources, "MAX_LINE_BYTES", 400)
        out = list(sources.line_blocks(iter(chunks)))
    seen, carried = [], None
    for k, item in enumerate(out):
        if isinstance(item, sources.LongLine):
            seen.append(None)
            carried = None
            continue
        whole, end = item
        assert 0 < end <= len(whole)
        if carried is not None:  # the bytes a block carried past its end open the next one
            assert whole.startswith(carried)
        block, carried = whole[:end], whole[end:]
        assert block.endswith(b"\n") or k == len(out) - 1  # only the last may be cut
        seen.extend(block.removesuffix(b"\n").split(b"\n"))
    assert not carried  # the last block ends at its data's end
    # Lines within the limit arrive whole; lines more than a chunk past it never do
    # (a newline found in the chunk that crosses the limit still ends the line).
    expected = data.removesuffix(b"\n").split(b"\n") if data else []
    assert len(seen) == len(expected)
    for line, got in zip(expected, seen):
        if len(line) <= 400:
            assert got == line
        elif len(line) > 400 + max(chunk_sizes):
            assert got is None
        else:
            assert got in (line, None)


def test_frames_do_not_keep_the_native_block_alive(tmp_path, monkeypatch):
    """The native block lays out every column for every row (~650 bytes a row however short
    the line); frames holding their own copies let it go, which halves the peak of a log of
    short slow queries (bench/bench_logs.py: 2.4 GB -> 1.05 GB for 1 GB)."""
    from ftdc import _native
    from ftdc.logs import json_lines

    blocks = []
    decode = _native.decode_log_block

    def keep(*args):
        blocks.append(decode(*args))
        return blocks[-1]

    monkeypatch.setattr(json_lines._native, "decode_log_block", keep)
    frames = read_logs(_write(tmp_path / "mongod.log", b"".join(_slow(i) for i in range(200))), workers=1)
    assert frames.slow_ops.height == 200 and frames.slow_ops["duration_ms"].to_list() == [100 + i for i in range(200)]
    references = sys.getrefcount(blocks[0])  # outside the assert: pytest's rewriting keeps its operands
    assert len(blocks) == 1 and references == 2  # the list's and the call's: no buffer holds the block
