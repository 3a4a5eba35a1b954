"""Nothing is left behind (issue 15 §4): SIGTERM cleans up as Ctrl-C does, and a run
removes what a killed earlier run left, never another live run's work."""

import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples" / "diagnostic.data"


def start_cli(*args, tmpdir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cli", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )


def wait_for(folder: Path, pattern: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not list(folder.glob(pattern)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_sigterm_removes_a_partial_export(ftdc_samples, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    process = start_cli("export", ftdc_samples / "mongod-7.0" / "diagnostic.data", "--out", out / "x.csv", tmpdir=tmp_path)
    wait_for(out, ".x.csv.*.partial", process)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert list(out.iterdir()) == []
    assert process.returncode == 128 + signal.SIGTERM


def test_sigterm_removes_an_unpacked_bundle(ftdc_samples, tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(ftdc_samples / "mongod-7.0" / "diagnostic.data", arcname="node/diagnostic.data")
    temp = tmp_path / "tmp"
    temp.mkdir()
    process = start_cli(bundle, "--json", tmpdir=temp)
    wait_for(temp, "ftdc-analyze-*", process)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert list(temp.iterdir()) == []
    assert process.returncode == 128 + signal.SIGTERM


def test_a_run_sweeps_what_killed_runs_left_and_nothing_else(tmp_path):
    temp, out = tmp_path / "tmp", tmp_path / "out"
    temp.mkdir(), out.mkdir()
    gone, live = dead_pid(), os.getpid()
    for pid in (gone, live):
        (temp / f"ftdc-analyze-{pid}-abc").mkdir()
        (temp / f"ftdc-analyze-{pid}-abc" / "metrics.x").write_bytes(b"x")
        (out / f".x.csv.{pid}-abc.partial").write_bytes(b"x")
    (temp / "ftdc-analyze-notmine").mkdir()  # no pid: not named by this tool, kept
    (out / ".x.csv.99999999ab_c.partial").write_bytes(b"x")  # tempfile's random name, digits first: not a pid, kept
    bundle = tmp_path / "bundle.tar"
    with tarfile.open(bundle, "w") as tar:
        tar.add(DEMO, arcname="node/diagnostic.data")
    run = subprocess.run(
        [sys.executable, "-m", "cli", "export", str(bundle), "--out", str(out / "x.csv"), "--metrics", "serverStatus.uptime"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(temp)},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in temp.iterdir()) == sorted([f"ftdc-analyze-{live}-abc", "ftdc-analyze-notmine"])
    assert sorted(p.name for p in out.iterdir()) == sorted([f".x.csv.{live}-abc.partial", ".x.csv.99999999ab_c.partial", "x.csv"])
