"""Crafted input from issue 15: every case ends in output, one line on stderr with exit 2,
or a warning; never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ftdc_files import documents

DEMO = Path(__file__).resolve().parents[1] / "samples"
DEMO_FILE = DEMO / "diagnostic.data" / "metrics.2024-05-14T09-00-00Z-00000"


def run_cli(*args: str, columns: int = 100, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "cli", *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
    )


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2 and result.stdout == "", (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def metadata_only(folder: Path) -> Path:
    """A diagnostic.data holding one metrics file with only its type-0 metadata document."""
    directory = folder / "diagnostic.data"
    directory.mkdir(parents=True)
    data = DEMO_FILE.read_bytes()
    (directory / DEMO_FILE.name).write_bytes(data[: documents(DEMO_FILE)[1][0]])
    return directory


# --- §1, §3: a node with no readable sample, a range past the data -----------------------


@pytest.mark.parametrize("extra", [[], ["--json"], ["--report", "r.html"]])
def test_no_readable_sample_is_one_line(tmp_path, extra):
    node = metadata_only(tmp_path)
    args = [a if a != "r.html" else tmp_path / a for a in extra]
    line = one_error_line(run_cli(node, *args))
    assert line == f"error: {node}: no readable sample (only metadata, or every chunk damaged)"
    assert not (tmp_path / "r.html").exists()


def test_start_past_the_data_says_nothing_was_read_there():
    line = one_error_line(run_cli(DEMO / "diagnostic.data", "--start", "2030-01-01T00:00:00Z"))
    assert line == (
        "error: "
        f"{DEMO / 'diagnostic.data'}: no sample between 2030-01-01T00:00:00Z and the end; "
        "the data covers 2024-05-14T09:00:00Z – 2024-05-14T10:30:30Z"
    )


def test_one_unreadable_node_leaves_the_others_analysed(tmp_path):
    bad = metadata_only(tmp_path / "bad")
    result = run_cli(DEMO / "diagnostic.data", bad, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["nodes"][0]["node"]["host"] == "db-prod-01.example.net"
    assert (
        result.stderr.splitlines()[0]
        == f"warning: {bad}: no readable sample (only metadata, or every chunk damaged): this node is left out"
    )


def test_every_node_unreadable_is_an_error(tmp_path):
    result = run_cli(metadata_only(tmp_path / "a"), metadata_only(tmp_path / "b"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "error: none of the 2 nodes could be read"


# --- §1: slow queries whose duration or time cannot be used -------------------------------

SLOW = {
    "t": {"$date": "2024-05-14T09:30:00.000+00:00"},
    "s": "I",
    "c": "COMMAND",
    "id": 51803,
    "ctx": "conn1",
    "msg": "Slow query",
    "attr": {
        "type": "command",
        "ns": "db.c",
        "command": {"find": "c", "filter": {"a": 1}},
        "planSummary": "COLLSCAN",
        "durationMillis": 150,
    },
}


def slow_line(**attr) -> str:
    line = json.loads(json.dumps(SLOW))
    for key, value in attr.items():
        if value is None:
            line["attr"].pop(key, None)
        else:
            line["attr"][key] = value
    return json.dumps(line)


@pytest.mark.parametrize("duration", ["150", None, 10**30, 1e308, -5, True])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_slow_query_without_a_usable_duration(tmp_path, duration, fmt):
    log = tmp_path / "mongod.log"
    log.write_text(slow_line(durationMillis=duration) + "\n")
    result = run_cli("logs", log, "--format", fmt)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    if fmt == "json":
        row = json.loads(result.stdout)[0]
        assert row["count"] == 1 and row["max_ms"] is None  # never a made-up or negative time
    else:
        assert "db.c find" in result.stdout
    if duration is not None:  # a value that is there but unusable is a problem line, said once
        assert result.stderr.count("warning: 1 line(s) could not be read") == 1, result.stderr


def test_a_slow_query_without_a_time(tmp_path):
    log = tmp_path / "mongod.log"
    line = json.loads(slow_line())
    del line["t"]
    log.write_text(json.dumps(line) + "\n" + slow_line() + "\n")
    result = run_cli("logs", log)
    assert result.returncode == 0 and "db.c find" in result.stdout
    assert "mongod.log:1: no timestamp" in result.stderr


# --- §1: customer strings are text, never markup ------------------------------------------


def renamed_node(folder: Path, hostname: str, replica_set: str) -> Path:
    """The demo node with its metadata document naming another host and replica set."""
    import bson

    directory = folder / "diagnostic.data"
    directory.mkdir(parents=True)
    data = DEMO_FILE.read_bytes()
    first_end = documents(DEMO_FILE)[1][0]
    meta = bson.decode(data[:first_end])
    meta["doc"]["hostInfo"]["system"]["hostname"] = hostname
    meta["doc"]["getCmdLineOpts"]["parsed"]["replication"] = {"replSetName": replica_set}
    (directory / DEMO_FILE.name).write_bytes(bson.encode(meta) + data[first_end:])
    return directory


@pytest.mark.parametrize("hostname, replica_set", [("db[/x]one", "rs[/bold]0"), ("[fe80::1]", "[red]rs[/red]")])
def test_host_and_replica_set_names_are_shown_as_written(tmp_path, hostname, replica_set):
    node = renamed_node(tmp_path, hostname, replica_set)
    result = run_cli(node, "--report", tmp_path / "r.html")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"{hostname}:27017" in result.stdout and replica_set in result.stdout
    several = run_cli(node, DEMO / "diagnostic.data")
    assert several.returncode == 0 and f"{hostname}:27017" in several.stdout, several.stderr


# --- §2: pipes and devices never hang or grow without end -------------------------------

DEVICES = ["/dev/zero", "/dev/urandom"]


@pytest.mark.parametrize("device", ["fifo", *DEVICES])
@pytest.mark.parametrize("command", [[], ["export", "--out", "x.parquet"], ["metrics"], ["logs"], ["--log"]])
def test_pipes_and_devices_are_refused_with_one_line(tmp_path, device, command):
    """A FIFO nobody writes to, /dev/zero and /dev/urandom: one line within the timeout, never a hang.
    (As a log, a FIFO is read as a stream: with no writer, it is empty.)"""
    if device == "fifo":
        device = tmp_path / "fifo"
        os.mkfifo(device)
    if command == ["--log"]:
        args = [DEMO / "diagnostic.data", "--log", device]
    else:
        args = [*command[:1], device, *[tmp_path / a if a.endswith(".parquet") else a for a in command[1:]]]
    line = one_error_line(run_cli(*args, timeout=60))
    reading_logs = command in (["logs"], ["--log"])
    if device == tmp_path / "fifo":
        assert line == (
            f"error: {device}: no mongod log line in it (not a JSON 4.4+ or text log)"
            if reading_logs
            else f"error: {device}: a pipe (FIFO), not a file: FTDC is read from files and directories (copy it to a file first)"
        )
    else:
        assert line == (
            f"error: {device}: a character device, not a log file"
            if reading_logs
            else f"error: {device}: a character device, not a file: FTDC is read from files and directories (copy it to a file first)"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == (["fifo"] if device == tmp_path / "fifo" else [])


def test_a_pipe_inside_a_log_directory_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "mongod.log").write_bytes((DEMO / "mongod.log").read_bytes())
    os.mkfifo(tmp_path / "other.log")
    result = run_cli("logs", tmp_path, timeout=60)
    assert result.returncode == 0 and "27 slow operation(s)" in result.stdout
    assert result.stderr == f"warning: {tmp_path / 'other.log'}: a pipe (FIFO), not a log file: skipped\n"


@pytest.mark.parametrize("command", ["logs {log}", "{node} --log {log} --json"])
def test_process_substitution_reads_the_log_as_a_stream(command):
    log = f"<(cat {DEMO / 'mongod.log'})"
    shell = f"{sys.executable} -m cli " + command.format(log=log, node=DEMO / "diagnostic.data")
    result = subprocess.run(
        ["bash", "-c", shell], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "100"}
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    if "--json" in command:
        culprits = [c for f in json.loads(result.stdout)["nodes"][0]["findings"] for c in f["culprits"]]
        assert any(c["ns"] == "shop.orders" for c in culprits)
    else:
        assert "27 slow operation(s), 1 of them COLLSCAN" in result.stdout


# --- §4: one line for every error, naming the user's file --------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["export"], "error: Missing argument 'PATHS...'. (`ftdc-analyze export --help` lists the options)"),
        (["logs", "x.log", "--top", "abc"], "error: Invalid value for '--top': "),
        (["metrics", "x", "--bogus"], "error: No such option: --bogus"),
    ],
)
def test_usage_errors_are_one_line(args, message):
    assert one_error_line(run_cli(*args)).startswith(message)


def test_a_directory_given_as_the_output_file(tmp_path):
    target = tmp_path / "out.parquet"
    target.mkdir()
    assert (
        one_error_line(run_cli("export", DEMO / "diagnostic.data", "--out", target))
        == f"error: {target}: a directory; give a file name"
    )
    assert list(tmp_path.iterdir()) == [target] and not list(target.iterdir())


def test_a_full_disk_names_the_output_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    from typer.testing import CliRunner

    import cli
    from ftdc import atomic

    class Full:
        def __init__(self, fd, mode):
            self.raw = open(fd, mode)

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self.raw, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.raw.close()

    monkeypatch.setattr(atomic.os, "fdopen", Full)
    out = tmp_path / "x.csv"
    result = CliRunner().invoke(cli.app, ["export", str(DEMO / "diagnostic.data"), "--out", str(out)])
    assert result.exit_code == 2 and result.stderr == f"error: {out}: no space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_an_unreadable_directory_is_not_called_empty(tmp_path, monkeypatch):
    """Permissions do not bind root, who runs CI here: the denial is injected where the directory is listed."""
    from typer.testing import CliRunner

    import cli

    dbpath = tmp_path / "dbpath"
    (dbpath / "diagnostic.data").mkdir(parents=True)
    real_scandir, real_listdir = os.scandir, os.listdir

    def denied(real):
        def call(path="."):
            if os.fspath(path) == str(dbpath):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path)

        return call

    monkeypatch.setattr(os, "scandir", denied(real_scandir))
    monkeypatch.setattr(os, "listdir", denied(real_listdir))
    result = CliRunner().invoke(cli.app, [str(dbpath)])
    assert result.exit_code == 2 and result.stderr == f"error: {dbpath}: permission denied\n"


def test_a_cut_log_archive_is_one_line_not_aborted(tmp_path):
    import tarfile

    whole = tmp_path / "logs.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        tar.add(DEMO / "mongod.log", arcname="node/mongod.log")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole.read_bytes()[:40])
    line = one_error_line(run_cli("logs", cut))
    assert line.startswith(f"error: {cut}: not a readable archive (") and "Aborted" not in line


def test_messages_name_the_member_of_a_bundle_not_a_temporary_path(tmp_path):
    import tarfile

    node = metadata_only(tmp_path / "node")
    bundle = tmp_path / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(node, arcname="host1/diagnostic.data")
    line = one_error_line(run_cli(bundle))
    assert line == f"error: {bundle}!host1/diagnostic.data: no readable sample (only metadata, or every chunk damaged)"


# --- §3: one verdict for one input; nothing read is not "nothing unusual" -------------------


def test_chunks_that_time_cannot_split_get_the_same_verdict_everywhere(tmp_path):
    from test_bounds import crafted_file

    path = crafted_file(tmp_path / "metrics.same", same_time=True)
    refusals = {
        one_error_line(run_cli(*command)) for command in ([path], [path, "--json"], ["export", path, "--out", tmp_path / "x.csv"])
    }
    assert len(refusals) == 1
    assert refusals.pop().startswith(
        f"error: {path}: offset 0: 30 chunk(s) from 2024-01-01T00:00:00Z claim 483,000,000 values that time cannot split"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.same"]


@pytest.mark.parametrize("case", ["metadata only", "past the data"])
def test_an_export_of_nothing_is_an_error_and_keeps_the_old_file(tmp_path, case):
    out = tmp_path / "x.parquet"
    out.write_bytes(b"the user's previous export")
    node, extra = (
        (metadata_only(tmp_path), [])
        if case == "metadata only"
        else (DEMO / "diagnostic.data", ["--start", "2030-01-01T00:00:00Z"])
    )
    line = one_error_line(run_cli("export", node, "--out", out, *extra))
    assert line.startswith(f"error: {node}: no ") and ("no readable sample" in line or "the data covers" in line)
    assert out.read_bytes() == b"the user's previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["x.parquet", *(["diagnostic.data"] if case == "metadata only" else [])]
    )


def test_logs_outside_the_range_asked_are_an_error():
    line = one_error_line(run_cli("logs", DEMO / "mongod.log", "--start", "2030-01-01T00:00:00Z"))
    assert line == (
        f"error: {DEMO / 'mongod.log'}: no log line between 2030-01-01T00:00:00Z and the end; "
        "the lines it holds are outside that range"
    )


# --- §4: JSON numbers and times --------------------------------------------------------------


def whole_floats(value, path=""):
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in whole_floats(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for v in value for p in whole_floats(v, f"{path}[]")]
    return [path] if isinstance(value, float) and value.is_integer() else []


def test_json_counts_are_integers():
    result = run_cli(DEMO / "diagnostic.data", "--log", DEMO / "mongod.log", "--json")
    doc = json.loads(result.stdout)
    assert whole_floats(doc) == []
    doc = doc["nodes"][0]
    assert doc["thresholds"]["cache_size"]["value"] == 8589934592 and doc["node"]["cache_size_gb"] == 8
    assert "8589934592.0" not in result.stdout and "4.0," not in result.stdout


def test_year_one_is_written_one_way_everywhere(tmp_path):
    """ISO-8601 years have four digits: year 1 is 0001 in the summary, its JSON and the
    metric list alike (glibc's strftime wrote "1-01-01" in two of the three)."""
    import datetime as dt

    from ftdc.writer import FTDCWriter

    with FTDCWriter(tmp_path / "diagnostic.data") as writer:
        for i in range(20):
            writer.add_sample(
                {"start": dt.datetime(1, 1, 1, 0, 0, i, tzinfo=dt.timezone.utc), "serverStatus": {"uptime": i, "pid": 1}}
            )
    node = tmp_path / "diagnostic.data"
    assert "time range        0001-01-01 00:00:00 – 00:00:19 UTC" in run_cli(node).stdout
    assert json.loads(run_cli(node, "--json").stdout)["nodes"][0]["summary"]["first"] == "0001-01-01T00:00:00Z"
    assert "\t0001-01-01T00:00:00Z\t0001-01-01T00:00:19Z" in run_cli("metrics", node).stdout


def test_a_duration_over_a_year_does_not_start_the_operation_in_year_one(tmp_path):
    log = tmp_path / "mongod.log"
    log.write_text(slow_line(durationMillis=9 * 10**18) + "\n" + slow_line() + "\n")
    result = run_cli("logs", log)
    assert "2024-05-14T09:29:59.850Z – 2024-05-14T09:30:00Z" in result.stdout and "0001" not in result.stdout
    assert (
        result.stderr
        == f"warning: 1 line(s) could not be read; the first: {log}:1: durationMillis 9000000000000000000 is over a year: dropped\n"
    )


# --- §5: the newcomer's path ------------------------------------------------------------------

ROOT = DEMO.parent


def test_the_readme_makes_a_virtualenv_before_installing():
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set-up") : readme.index("## Where to read on")]
    assert setup.index("python3 -m venv .venv") < setup.index("pip install -e .")
    assert "2 min 54 s on 2 cores" in setup  # the native build, as measured
    assert ".venv/" in (ROOT / ".gitignore").read_text().splitlines()


def test_the_main_job_reads_the_log_beside_the_demo_and_says_so():
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("pip install -e . && "))
    args = command.split("&& ftdc-analyze ")[1].split()
    result = subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "read the log found beside the FTDC: samples/mongod.log (--log names another)\n"
    text = " ".join(result.stdout.split())
    assert "Root cause (an operation): COLLSCAN of shop.orders" in text and "give the log to name them" not in text


# --- §4: the Markdown report: customer strings as text, written whole or not at all ----------


def test_markdown_shows_customer_strings_as_text(tmp_path):
    node = renamed_node(tmp_path, "<script>alert(1)</script>", "<img src=x onerror=alert(1)>")
    report = tmp_path / "r.md"
    result = run_cli(node, "--log", DEMO / "mongod.log", "--report", report)
    assert result.returncode == 0, result.stderr
    text = report.read_text()
    import re

    assert not re.search(r"(?<!\\)<(script|img)", text)  # every < of theirs escaped
    assert r"\<script\>alert(1)\</script\>" in text and r"\<img src=x onerror=alert(1)\>" in text


def test_markdown_report_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    import errno

    import analysis
    from analysis.outputs.report import build_report, write_report
    from ftdc import atomic

    report = build_report([analysis.analyze(DEMO / "diagnostic.data", DEMO / "mongod.log")])
    target = tmp_path / "x.md"
    written = write_report(report, target)
    assert written[0] == target and len(written) > 1 and all(p.exists() for p in written)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def full(fd, mode):
        os.close(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fdopen", full)
    with pytest.raises(OSError, match="No space left on device"):
        write_report(report, target)
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before and sorted(p.name for p in tmp_path.iterdir()) == ["x.md", "x_files"]


# --- §1: dates no Python datetime can hold (found by the bit-flip family) ----------------------


@pytest.mark.parametrize("where", ["metadata _id", "sample start"])
def test_a_date_outside_years_1_to_9999_is_damage_not_a_panic(tmp_path, where):
    import bson
    from bson.datetime_ms import DatetimeMS

    from ftdc.writer import FTDCWriter

    node = tmp_path / "diagnostic.data"
    far = DatetimeMS(2**62)
    if where == "metadata _id":
        node.mkdir()
        data = DEMO_FILE.read_bytes()
        first_end = documents(DEMO_FILE)[1][0]
        meta = bson.decode(data[:first_end])
        meta["_id"] = far
        (node / DEMO_FILE.name).write_bytes(bson.encode(meta) + data[first_end:])
    else:
        import datetime as dt

        with FTDCWriter(node, samples_per_chunk=10) as writer:
            for i in range(20):
                start = far if i == 15 else dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=dt.timezone.utc)
                writer.add_sample({"start": start, "serverStatus": {"uptime": i, "pid": 1}})
    for extra in ([], ["--json"]):
        result = run_cli(node, *extra)
        assert result.returncode == 0 and "Traceback" not in result.stderr and "panicked" not in result.stderr, result.stderr
        assert "outside years 1-9999" in result.stderr


# --- a window whose chunks have no date: every entry point that decodes by windows ------------------------------


def _undated_chunk_node(directory: Path) -> Path:
    """A node whose one chunk's reference sample is dated outside years 1-9999 (its other 9 samples are real): the
    catalog can give that chunk no first time, so no time window held it, and export, the dataset, scan and explore
    ended in `IndexError` (`files[0]` of a window of no file)."""
    import datetime as dt

    from bson.datetime_ms import DatetimeMS

    from ftdc.writer import FTDCWriter

    with FTDCWriter(directory, samples_per_chunk=10) as writer:
        for i in range(20):
            start = DatetimeMS(2**62) if i == 10 else dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=dt.timezone.utc)
            writer.add_sample({"start": start, "serverStatus": {"uptime": i, "pid": 1}})
    [file] = directory.iterdir()
    first_end = documents(file)[1][0]
    file.write_bytes(file.read_bytes()[first_end:])  # the first, dated chunk gone
    return directory


def test_a_chunk_with_no_date_is_read_by_every_windowed_entry_point(tmp_path):
    import warnings

    import polars as pl

    import ftdc

    node = _undated_chunk_node(tmp_path / "diagnostic.data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ftdc.read_ftdc(node)["serverStatus.uptime"].to_list()
        ftdc.to_parquet(node, tmp_path / "x.parquet")
        scanned = ftdc.scan_ftdc(node).collect()["serverStatus.uptime"].to_list()
        ftdc.to_dataset([node], tmp_path / "dataset")
    assert expected == list(range(11, 20)) and scanned == expected
    assert pl.read_parquet(tmp_path / "x.parquet")["serverStatus.uptime"].to_list() == expected
    assert pl.read_parquet(tmp_path / "dataset" / "samples" / "**" / "*.parquet")["serverStatus.uptime"].to_list() == expected
    for args in (
        ["export", node, "--out", tmp_path / "y.csv"],
        ["export", node, "--out", tmp_path / "y.parquet", "--start", "2024-01-01T00:00:15Z"],
        ["export", node, "--dataset", tmp_path / "dataset2"],
        ["explore", node, "--out", tmp_path / "e.html"],
    ):
        result = run_cli(*args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert "outside years 1-9999" in result.stderr
    assert pl.read_parquet(tmp_path / "y.parquet")["serverStatus.uptime"].to_list() == [15, 16, 17, 18, 19]
