"""Crafted archives (issue 15 §2, §4): many members, bombs and cut files end in output, a
warning or one line with exit 2, with bounded memory, one pass over the archive, and no
unpacked file left behind."""

import io
import os
import subprocess
import sys
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftdc
from ftdc.logs import sources

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "samples" / "mongod.log"
LINE = LOG.read_bytes().split(b"\n", 1)[0] + b"\n"


def log_archive(path: Path, members: int, data: bytes = LINE) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for i in range(members):
            info = tarfile.TarInfo(f"node{i % 3}/mongod.log.{i}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def run_child(code: str, *args, tmpdir: Path) -> tuple[subprocess.CompletedProcess, int]:
    """`code` in a fresh interpreter with TMPDIR=tmpdir; its peak RSS (VmHWM) in MB."""
    code += "\nimport sys; print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmpdir), "COLUMNS": "100"},
        cwd=ROOT,
    )
    *lines, peak = result.stderr.strip().splitlines()
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout, "\n".join(lines) + "\n" * bool(lines)), int(
        peak
    ) // 1024


def cli_code(*settings_: str) -> str:
    """Run the CLI on sys.argv[1:], after `settings_` (e.g. a lowered cap), keeping the exit code."""
    return "\n".join(
        [
            "import sys, cli",
            "from ftdc import inputs",
            "from ftdc.logs import sources",
            *settings_,
            "sys.argv = ['ftdc-analyze', *sys.argv[1:]]",
            "code = 0",
            "try:\n    cli.main()\nexcept SystemExit as e:\n    code = e.code",
            "print('exit', code)",
        ]
    )


# --- the logs command reads an archive in one pass ---------------------------------------


@settings(max_examples=12)
@given(members=st.integers(1, 60))
def test_logs_of_an_archive_open_it_a_fixed_number_of_times(tmp_path_factory, members):
    archive = log_archive(tmp_path_factory.mktemp("a") / "logs.tar.gz", members)
    opened = []
    real_open = tarfile.open

    def counting(*args, **kwargs):
        opened.append(args)
        return real_open(*args, **kwargs)

    tarfile.open = counting
    try:
        frames = ftdc.read_logs(archive)
    finally:
        tarfile.open = real_open
    assert len(opened) <= 2  # is_tarfile's look, then one open for every member
    assert frames.events["file"].n_unique() == members


def test_too_many_members_stop_while_listing_with_bounded_memory(tmp_path):
    archive = tmp_path / "many.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for i in range(2_001):
            info = tarfile.TarInfo(f"n/m{i}.log")
            tar.addfile(info)
    for command in (["logs"], []):
        result, peak = run_child(cli_code("inputs.MAX_MEMBERS = sources.MAX_MEMBERS = 2_000"), *command, archive, tmpdir=tmp_path)
        assert result.stdout == "exit 2\n", result.stderr
        assert (
            result.stderr
            == f"error: {archive}: more than 2,000 members, more than a support bundle holds; unpack it yourself and point at a directory\n"
        )
        assert peak < 400, peak
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.tar.gz"]


def test_a_cut_archive_keeps_the_members_before_the_cut(tmp_path):
    whole = log_archive(tmp_path / "logs.tar.gz", 40).read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.warns(ftdc.LogWarning, match="archive damaged after"):
        frames = ftdc.read_logs(cut)
    assert 0 < frames.events["file"].n_unique() < 40


@settings(max_examples=40)
@given(data=st.data())
def test_an_archive_cut_anywhere_is_read_or_refused_in_one_line(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("cut")
    whole = folder / "whole.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        tar.add(LOG, arcname="node/mongod.log")
        tar.add(LOG, arcname="node/mongod.log.1")
    blob = whole.read_bytes()
    cut = folder / "cut.tar.gz"
    cut.write_bytes(blob[: data.draw(st.integers(0, len(blob) - 1))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.LogWarning)
        try:
            frames = ftdc.read_logs(cut)
        except (ftdc.NotALog, sources.SourceError) as exc:
            assert "\n" not in str(exc)
        else:
            assert frames.slow_ops.height <= 2 * 27


# --- bombs: the budget is checked on bytes written, and nothing is left behind ------------


def zip_bomb(path: Path, size: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("node/mongod.log", "w", force_zip64=True) as member:
            for _ in range(size >> 20):
                member.write(bytes(1 << 20))
    return path


def tar_bomb(path: Path, size: int) -> Path:
    class Zeros(io.RawIOBase):
        def __init__(self):
            self.left = size

        def readable(self):
            return True

        def readinto(self, buffer):
            n = min(len(buffer), self.left)
            buffer[:n] = bytes(n)
            self.left -= n
            return n

    with tarfile.open(path, "w:gz", compresslevel=9) as tar:
        info = tarfile.TarInfo("node/diagnostic.data/metrics.2024-01-01T00-00-00Z-00000")
        info.size = size
        tar.addfile(info, io.BufferedReader(Zeros()))
    return path


@pytest.mark.parametrize("make", [zip_bomb, tar_bomb])
def test_a_decompression_bomb_stops_at_the_budget(tmp_path, make):
    bomb = make(tmp_path / ("bomb.zip" if make is zip_bomb else "bomb.tar.gz"), 160 << 20)
    assert bomb.stat().st_size < 1 << 20
    result, peak = run_child(cli_code(), bomb, tmpdir=tmp_path)
    assert result.stdout == "exit 2\n", result.stderr
    assert result.stderr == (
        f"error: {bomb}: unpacks to more than 64 MB (100x its size, at most 64.0 GB), "
        "more than a support bundle holds; unpack it yourself\n"
    )
    assert peak < 400, peak
    assert [p.name for p in tmp_path.iterdir()] == [bomb.name]  # the partial unpacking is gone


def test_a_zip_declaring_too_many_entries_is_refused_before_listing(tmp_path, monkeypatch):
    from ftdc import inputs

    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(30):
            zf.writestr(f"d/diagnostic.data/metrics.{i}", b"x")
    listed = []
    monkeypatch.setattr(zipfile.ZipFile, "infolist", lambda self: listed.append(1) or [])
    monkeypatch.setattr(inputs, "MAX_MEMBERS", 20)
    with pytest.raises(ftdc.FTDCError, match="more than 20 members"):
        inputs.unpack(archive)
    assert listed == []


# --- a sparse or huge metrics file is not read whole -------------------------------------


@pytest.mark.parametrize(
    "size, reason",
    [(2 << 30, "2.0 GB, larger than any FTDC file mongod writes"), (512 << 20, "a sparse file, 0 MB of its 512 MB ever written")],
)
def test_a_sparse_or_huge_file_is_skipped_without_reading_it(tmp_path, size, reason):
    node = tmp_path / "node" / "diagnostic.data"
    node.mkdir(parents=True)
    bogus = node / "metrics.2024-01-01T00-00-00Z-00000"
    with open(bogus, "wb") as f:
        f.truncate(size)
    result, peak = run_child(cli_code(), node, tmpdir=tmp_path)
    assert result.stdout == "exit 2\n" and peak < 400, (result.stderr, peak)
    assert result.stderr.splitlines()[0].startswith(f"warning: {bogus}: {reason}")
    (node / "metrics.2024-05-14T09-00-00Z-00000").write_bytes(
        (ROOT / "samples" / "diagnostic.data" / "metrics.2024-05-14T09-00-00Z-00000").read_bytes()
    )
    result, peak = run_child(cli_code(), node, "--json", tmpdir=tmp_path)
    assert result.stdout.endswith("exit 0\n") and peak < 600, (result.stderr, peak)
    assert result.stderr.startswith(f"warning: {bogus}: {reason}")


def test_many_small_logs_cost_memory_by_their_rows_not_their_count(tmp_path):
    archive = log_archive(tmp_path / "logs.tar.gz", 1_500)
    code = "import sys, ftdc\nframes = ftdc.read_logs(sys.argv[1])\nprint(frames.events['file'].n_unique())"
    result, peak = run_child(code, archive, tmpdir=tmp_path)
    assert result.stdout == "1500\n", result.stderr
    assert peak < 300, peak  # ~0.4 MB a member before: 700 MB here
