"""What users point the tool at: a dbpath, a diagnostic.data directory, an archive of one (untrusted),
a bundle of several nodes, or a log file by mistake."""

import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import ftdc
from ftdc import inputs

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples" / "diagnostic.data"
METRIC = ["serverStatus.uptime"]


@pytest.fixture(scope="module")
def expected():
    return ftdc.read_ftdc(DEMO, METRIC)


def test_a_dbpath_holds_its_diagnostic_data(tmp_path, expected):
    shutil.copytree(DEMO, tmp_path / "db" / "diagnostic.data")
    assert ftdc.read_ftdc(tmp_path / "db", METRIC).equals(expected)


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tgz", "zip"])
def test_archives_of_diagnostic_data(tmp_path, expected, kind):
    archive = tmp_path / f"support.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for f in DEMO.iterdir():
                zf.write(f, f"case/diagnostic.data/{f.name}")
    else:
        with tarfile.open(archive, "w:gz" if "gz" in kind else "w") as tar:
            tar.add(DEMO, arcname="case/diagnostic.data")
    assert ftdc.read_ftdc(archive, METRIC).equals(expected)
    assert ftdc.scan_ftdc(archive).select(METRIC).collect().equals(expected.select(METRIC))
    assert ftdc.read_metadata(archive).node.host == "db-prod-01.example.net"


def test_hostile_members_are_never_written_outside(tmp_path, expected):
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(DEMO, arcname="case/diagnostic.data")
        for name in ("../escaped.log", "/tmp/absolute.log"):
            data = b"{}\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("case/diagnostic.data/metrics.link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    assert ftdc.read_ftdc(archive, METRIC).equals(expected)
    assert not (tmp_path / "escaped.log").exists() and not Path("/tmp/absolute.log").exists()
    unpacked = inputs.unpack(archive)
    assert not any(p.is_symlink() for p in unpacked.rglob("*"))


def test_archive_caps_are_checked_while_unpacking(tmp_path, monkeypatch):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(12):
            zf.writestr(f"d/diagnostic.data/metrics.{i}", b"x")
    monkeypatch.setattr(inputs, "MAX_MEMBERS", 10)
    with pytest.raises(ftdc.FTDCError, match="more than 10 members"):
        inputs.unpack(archive)
    monkeypatch.setattr(inputs, "MAX_MEMBERS", 100)
    monkeypatch.setattr(inputs, "MAX_BYTES", 5)
    with pytest.raises(ftdc.FTDCError, match="unpacks to more than"):
        inputs.unpack(archive)


def test_several_nodes_need_naming_for_a_single_node_reader(tmp_path):
    for node in ("a", "b"):
        shutil.copytree(DEMO, tmp_path / node / "diagnostic.data")
    with pytest.raises(ftdc.FTDCError, match="holds 2 nodes' FTDC"):
        ftdc.read_ftdc(tmp_path)
    assert len(inputs.discover(tmp_path).ftdc) == 2


def test_a_log_given_instead_of_ftdc_says_what_to_use(tmp_path):
    with pytest.raises(ftdc.FTDCError, match="use `ftdc-analyze logs`"):
        ftdc.read_ftdc(ROOT / "samples" / "mongod.log")
    run = subprocess.run(
        [sys.executable, "-m", "cli", str(ROOT / "samples" / "mongod.log")], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "ftdc-analyze logs" in run.stderr


def test_a_corrupt_archive_is_one_clear_error(tmp_path):
    bad = tmp_path / "broken.tar.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    with pytest.raises(ftdc.FTDCError, match="not a readable archive"):
        ftdc.read_ftdc(bad)


# --- inputs a new user gives: said, and each node read once -------------------------------------------------------


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_a_folder_above_the_nodes_says_what_it_found_and_how_to_name_one(tmp_path):
    # `ftdc-analyze samples` analysed the 16 nodes it found below without a word of what it had found.
    from crafted_nodes import write_node

    for name in ("a", "b"):
        write_node(tmp_path / name / "diagnostic.data", hostname=f"{name}.example.net")
    run = _cli(tmp_path, "--no-log")
    assert run.returncode == 0, run.stderr
    [note] = [line for line in run.stderr.splitlines() if line.startswith("note: ")]
    assert (
        note.startswith(f"note: 2 nodes under {tmp_path}: {tmp_path / 'a' / 'diagnostic.data'}, ") and "name one folder" in note
    )
    # A node's own folder, or the folder holding its diagnostic.data, is no search: nothing to say.
    for given in (tmp_path / "a", tmp_path / "a" / "diagnostic.data"):
        assert inputs.what_was_found([given], inputs.gather([given])) == []


def test_one_metrics_file_says_the_rest_of_its_folder_was_not_read_and_finds_its_nodes_log(tmp_path):
    # One metrics file read alone dropped metrics.interim and the log beside the node, and said nothing.
    node = tmp_path / "node"
    shutil.copytree(DEMO, node / "diagnostic.data")
    shutil.copy(ROOT / "samples" / "mongod.log", node / "mongod.log")
    [archive] = [p for p in (node / "diagnostic.data").iterdir() if p.name != "metrics.interim"]
    run = _cli(archive)
    assert run.returncode == 0, run.stderr
    assert (
        f"note: read {archive} alone: the other FTDC file of its folder (metrics.interim) not read; "
        f"give the folder {node / 'diagnostic.data'} to read them all"
    ) in run.stderr
    assert f"read the log found beside the FTDC: {node / 'mongod.log'}" in run.stderr


def test_the_same_node_given_twice_is_read_once(tmp_path):
    shutil.copytree(DEMO, tmp_path / "node" / "diagnostic.data")
    folder = tmp_path / "node" / "diagnostic.data"
    [archive] = [p for p in folder.iterdir() if p.name != "metrics.interim"]
    given = [folder, Path(f"{folder}/"), tmp_path / "node" / ".." / "node" / "diagnostic.data", archive, tmp_path / "node"]
    assert inputs.gather(given).ftdc == [folder]
    assert inputs.gather([archive, archive]).ftdc == [archive]
    run = _cli(folder, archive, tmp_path / "node", "--no-log", "--json")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert len(json.loads(run.stdout)["nodes"]) == 1


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["export", "--out", "x.parquet"],
        ["export", "--dataset", "ds"],
        ["explore", "--out", "x.html"],
        ["fleet", "--out", "f"],
    ],
    ids=["summary", "export-out", "export-dataset", "explore", "fleet"],
)
def test_every_command_says_no_ftdc_alike_and_points_logs_to_the_logs_command(tmp_path, command):
    """One error, written once (`Inputs.nodes`): the paths named, and `ftdc-analyze logs` when logs were all there was."""
    folder = tmp_path / "logs-only"
    folder.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "samples" / "mongod.log", folder / "mongod.log")
    args = [*command[:1], str(folder), *command[1:]]
    result = subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {folder}: no FTDC (diagnostic.data) in it; these are mongod logs: use `ftdc-analyze logs`"
    )
