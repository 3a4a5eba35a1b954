"""Issue 19 §4: a dataset write is visible whole or not at all. A new dataset appears complete
or not at all; a node added to an existing one comes with all its days and its facts, or none;
errors name the dataset, never a temporary `.partial` path."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from crafted_nodes import write_node

import ftdc
from ftdc import _native
from ftdc.dataset import read_nodes

ROOT = Path(__file__).resolve().parents[1]
DAYS = 3

# The CLI with its second day file about to start: the first day is whole (and, before
# issue 19, already moved into the dataset); the flag file says so, then it waits to be stopped.
PAUSED_CLI = """
import sys, time
from ftdc import _native
flag, args = sys.argv[1], sys.argv[2:]
opened = _native.ParquetWriter  # the samples' files (the native core's writer)
count = 0
def pausing(*a, **k):
    global count
    count += 1
    if count == 2:
        open(flag, "w").close()
        time.sleep(120)
    return opened(*a, **k)
_native.ParquetWriter = pausing
sys.argv = ["ftdc-analyze", *args]
import cli
cli.main()
"""


@pytest.fixture(scope="module")
def days_node(tmp_path_factory) -> Path:
    """A node with samples on three days."""
    return write_node(tmp_path_factory.mktemp("days") / "a" / "diagnostic.data", seconds=DAYS * 86400, period=120)


@pytest.fixture(scope="module")
def other_node(tmp_path_factory) -> Path:
    return write_node(tmp_path_factory.mktemp("other") / "b" / "diagnostic.data", hostname="db2.example.net", seconds=600)


def listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stopped_export(tmp_path: Path, node: Path, out: Path) -> subprocess.CompletedProcess:
    """`export --dataset out` sent SIGTERM once its first day is written."""
    flag = tmp_path / "flag"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_CLI, str(flag), "export", str(node), "--dataset", str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists(), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_sigterm_during_a_new_dataset_leaves_nothing_and_says_so(tmp_path, days_node):
    out = tmp_path / "NEW"
    result = stopped_export(tmp_path, days_node, out)
    assert result.returncode == 128 + signal.SIGTERM
    assert (
        result.stderr.strip().splitlines()[-1]
        == f"error: {out}: stopped by SIGTERM before it was complete; nothing half-written is left there"
    )
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flag"]  # no staging folder left beside it


def test_sigterm_while_adding_a_node_leaves_the_dataset_as_it_was(tmp_path, days_node, other_node):
    out = tmp_path / "dataset"
    ftdc.to_dataset([other_node], out)
    before = listing(out)
    result = stopped_export(tmp_path, days_node, out)
    assert result.returncode == 128 + signal.SIGTERM and str(out) in result.stderr
    assert listing(out) == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_a_new_dataset_is_complete_when_it_appears(tmp_path, days_node, other_node):
    out = tmp_path / "dataset"
    facts = ftdc.to_dataset([days_node, other_node], out)
    assert read_nodes(out).sort("node").equals(facts.sort("node"))
    samples = pl.scan_parquet(out / "samples", hive_partitioning=True).group_by("node").len().collect().sort("node")
    assert samples.rows() == [("db1.example.net_27017", DAYS * 86400 // 120), ("db2.example.net_27017", 600)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset"] and not list(out.rglob(".*"))


def file_too_large(limit: int):
    def preexec() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


def test_a_write_the_system_refuses_names_the_dataset_and_leaves_nothing(tmp_path, days_node):
    """A real refusal from the kernel (a file-size limit: EFBIG, as a full disk gives ENOSPC) while a day is written."""
    out = tmp_path / "NEW"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "cli", "export", str(days_node), "--dataset", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=file_too_large(2048),
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: {out}: file too large"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_a_full_disk_names_the_dataset_and_changes_nothing(tmp_path, monkeypatch, days_node, other_node, existing):
    out = tmp_path / "dataset"
    if existing:
        ftdc.to_dataset([other_node], out)
    before = listing(out) if existing else None
    calls = 0
    real = _native.ParquetWriter

    class FullOnTheSecondDay:
        def __init__(self, path, *args):
            self.path, self.writer = path, real(path, *args)

        def write(self, *args):
            nonlocal calls
            calls += 1
            if calls > 1:  # as the native writer says it: errno, words, the (staged) file
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            return self.writer.write(*args)

        def close(self):
            self.writer.close()

    monkeypatch.setattr(_native, "ParquetWriter", FullOnTheSecondDay)
    with pytest.raises(OSError) as raised:
        ftdc.to_dataset([days_node], out)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(out) and ".partial" not in str(raised.value)
    if existing:
        assert listing(out) == before and not [p for p in out.iterdir() if p.name.startswith(".")]
    else:
        assert list(tmp_path.iterdir()) == []


def test_a_commit_that_cannot_finish_undoes_what_it_moved(tmp_path):
    from ftdc.dataset import commit

    root, stage = tmp_path / "root", tmp_path / "stage"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_text("old")
    (root / "blocked").write_text("a file where a folder must go")
    (stage / "a").mkdir(parents=True)
    (stage / "a" / "f").write_text("new")
    (stage / "blocked" / "b").mkdir(parents=True)
    with pytest.raises(OSError):
        commit(stage, root, [Path("a"), Path("blocked/b")])
    assert listing(root) == {"a/f": b"old", "blocked": b"a file where a folder must go"}
