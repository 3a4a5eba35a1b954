"""Issue 19 §1: damage ends nothing. A damaged chunk is one warning and the rest is
analysed; a node whose only damage is in one chunk is analysed in a fleet too."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import random
import struct
import subprocess
import sys
import tarfile
import warnings
import zlib
from pathlib import Path

import polars as pl
import pytest
from ftdc_files import chunk_samples, documents
from test_crafted import DEMO, run_cli

import analysis
import ftdc
import ftdc.logs.problems
from ftdc import FTDCWarning
from ftdc.writer import FTDCWriter
from ftdc.writer.documents import chunk_document

START = dt.datetime(2024, 5, 14, 9, 0, tzinfo=dt.timezone.utc)
SMALL_42 = ("mongod-4.2.1", "diagnostic.data", "metrics.2021-07-13T01-43-32Z-00000")


def length_prefix_offset(path: Path, chunk: int) -> int:
    """File offset of the uncompressed-length prefix of metric chunk `chunk` (its `data` BinData)."""
    offset, doc = [(o, d) for o, d in documents(path) if d["type"] == 1][chunk]
    return offset + doc.raw.index(b"\x05data\x00") + len(b"\x05data\x00") + 4 + 1


def flip_bit(path: Path, offset: int, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset + bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


def sample(i: int, member: bool, start: dt.datetime = START) -> dict:
    status = {
        "uptime": i,
        "opcounters": {"insert": 10 * i, "query": 20 * i, "update": i, "delete": 0, "getmore": 0, "command": 30 * i},
        "connections": {"current": 10, "totalCreated": 10},
    }
    doc = {"start": start + dt.timedelta(seconds=i), "serverStatus": status}
    if member:  # the node joined a replica set: a schema change, so a chunk of its own
        doc["replSetGetStatus"] = {
            "myState": 1,
            "members": [{"state": 1, "optimeDate": start + dt.timedelta(seconds=i), "self": True}],
        }
    return doc


def node_whose_last_chunk_alone_has(tmp_path: Path, start: dt.datetime = START) -> tuple[Path, Path]:
    """A node of two chunks where only the last holds `replSetGetStatus` (analysed as repl.state)."""
    folder = tmp_path / "diagnostic.data"
    with FTDCWriter(folder, metadata={"start": start}, samples_per_chunk=300) as writer:
        for i in range(600):
            writer.add_sample(sample(i, i >= 300, start))
    return folder, writer.files[0]


def ftdc_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, FTDCWarning)]


@pytest.mark.parametrize("bit", [0, 9, 20])
def test_a_flipped_length_prefix_is_one_warning_and_the_analysis_goes_on(tmp_path, bit):
    folder, file = node_whose_last_chunk_alone_has(tmp_path)
    offset = length_prefix_offset(file, -1)
    flip_bit(file, offset, bit)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = analysis.analyze(folder)
    messages = ftdc_warnings(caught)
    assert len(messages) == 1 and f"{file}: offset " in messages[0] and "metric chunk skipped" in messages[0], messages
    assert result.overview.samples == 300
    assert "replSetGetStatus.myState" not in ftdc.list_metrics(folder)["name"].to_list()


def test_the_catalog_lists_no_metric_of_a_chunk_the_reader_skips(ftdc_samples, tmp_path):
    """The real 4.2.1 file: the one chunk that records `acquireCount.R` has its length prefix
    flipped; the catalog, the reader and the lazy scan agree that its metrics are gone."""
    file = tmp_path / SMALL_42[-1]
    file.write_bytes(ftdc_samples.joinpath(*SMALL_42).read_bytes())
    lone = "serverStatus.locks.Collection.acquireCount.R"
    catalog = ftdc.read_catalog(file)
    holders = {i for i, (names, _) in enumerate(catalog.layouts) if lone in names}
    chunks = [i for i, layout in enumerate(catalog.chunks["layout"].to_list()) if layout in holders]
    assert 0 < len(chunks) < catalog.chunks.height
    for index in chunks:
        flip_bit(file, length_prefix_offset(file, index), 9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = ftdc.list_metrics(file)["name"].to_list()
        frame = ftdc.scan_ftdc(file).collect()
    assert lone not in listed and lone not in frame.columns
    assert frame.columns == ftdc.read_ftdc(file).columns
    assert len(set(ftdc_warnings(caught))) == len(chunks)


def test_the_command_line_says_each_damage_once_and_analyses_the_rest(tmp_path):
    folder, file = node_whose_last_chunk_alone_has(tmp_path)
    flip_bit(file, length_prefix_offset(file, -1), 0)
    result = run_cli(folder, "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    # The damage once, then where the summary looked for a log and found none.
    warning, note = result.stderr.strip().splitlines()
    assert warning.startswith(f"warning: {file}: offset ") and "metric chunk skipped" in warning, warning
    assert note.startswith(f"no mongod log found: looked in {folder}"), note
    assert json.loads(result.stdout)["nodes"][0]["summary"]["samples"] == 300


def test_a_fleet_analyses_the_node_with_a_damaged_chunk(tmp_path):
    folder, file = node_whose_last_chunk_alone_has(tmp_path / "n1")
    good, _ = node_whose_last_chunk_alone_has(tmp_path / "n2", START + dt.timedelta(days=1))
    flip_bit(file, length_prefix_offset(file, -1), 0)
    result = run_cli("fleet", folder, good, "--out", tmp_path / "fleet", "--engine", "loop", "--samples")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "of 2 nodes" in result.stderr and result.stderr.count("warning") == 1, result.stderr


# --- a BSON Date no calendar holds ---------------------------------------------------------


def flip_reference_date(path: Path, chunk: int, key: bytes = b"\x09localTime\x00", bits=(61, 62)) -> int:
    """Flips two high bits of a Date in chunk `chunk`'s reference document (inside the zlib
    stream, so the chunk is otherwise intact); returns the chunk's sample count."""
    data = path.read_bytes()
    offset, doc = [(o, d) for o, d in documents(path) if d["type"] == 1][chunk]
    payload = bytearray(zlib.decompress(bytes(doc["data"])[4:]))
    at = payload.index(key) + len(key)
    (value,) = struct.unpack_from("<q", payload, at)
    struct.pack_into("<q", payload, at, value ^ sum(1 << b for b in bits))
    rebuilt = chunk_document(int(doc["_id"]), struct.pack("<I", len(payload)) + zlib.compress(bytes(payload)))
    path.write_bytes(data[:offset] + rebuilt + data[offset + len(doc.raw) :])
    return chunk_samples(documents(path)[[o for o, d in documents(path)].index(offset)][1])


@pytest.fixture
def node_with_an_impossible_date(ftdc_samples, tmp_path) -> tuple[Path, int]:
    folder = tmp_path / "node" / "diagnostic.data"
    folder.mkdir(parents=True)
    file = folder / SMALL_42[-1]
    file.write_bytes(ftdc_samples.joinpath(*SMALL_42).read_bytes())
    return folder, flip_reference_date(file, 1)


def test_an_impossible_date_is_null_with_one_warning_and_the_sample_kept(node_with_an_impossible_date):
    folder, damaged = node_with_an_impossible_date
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = ftdc.read_ftdc(folder)
    assert ftdc_warnings(caught) == [
        f"{folder / SMALL_42[-1]}: {damaged:,} value(s) of serverStatus.localTime dated outside years 1-9999 "
        "(damaged): read as null"
    ]
    assert frame["serverStatus.localTime"].null_count() == damaged and frame.height == 865
    assert frame["start"].null_count() == 0


@pytest.mark.parametrize("how", ["csv", "parquet", "dataset", "fleet"])
def test_every_writer_keeps_the_node_with_an_impossible_date(node_with_an_impossible_date, tmp_path, how):
    folder, damaged = node_with_an_impossible_date
    target = tmp_path / f"out.{how}"
    args = {
        "csv": ["export", folder, "--out", target],
        "parquet": ["export", folder, "--out", target],
        "dataset": ["export", folder, "--dataset", target],
        "fleet": ["fleet", folder, "--out", target, "--samples", "--engine", "loop"],
    }[how]
    result = run_cli(*args)
    assert result.returncode == 0 and "Traceback" not in result.stderr and "panic" not in result.stderr.lower(), result.stderr
    assert result.stderr.startswith(f"warning: {folder / SMALL_42[-1]}: {damaged:,} value(s) of serverStatus.localTime"), (
        result.stderr
    )
    if how in ("csv", "parquet"):
        frame = pl.read_csv(target, try_parse_dates=True) if how == "csv" else pl.read_parquet(target)
        assert frame.height == 865 and frame["serverStatus.localTime"].null_count() == damaged
    else:
        samples = pl.scan_parquet(target / "samples", hive_partitioning=True).select("serverStatus.localTime").collect()
        assert samples.height == 865 and samples["serverStatus.localTime"].null_count() == damaged


# --- a log line dated year 0 -------------------------------------------------------------

YEAR_0_JSON = (
    '{"t":{"$date":"0000-05-14T09:30:00.000+00:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn1","msg":"Slow query",'
    '"attr":{"type":"command","ns":"db.c","command":{"find":"c"},"planSummary":"COLLSCAN","durationMillis":150}}'
)
YEAR_0_TEXT = (
    '0000-05-14T09:30:00.000+0000 I COMMAND  [conn1] command db.c command: find { find: "c" } planSummary: COLLSCAN 150ms'
)


@pytest.mark.parametrize("line", [YEAR_0_JSON, YEAR_0_TEXT], ids=["json", "text"])
def test_a_log_line_dated_year_0_is_a_problem_row(tmp_path, line):
    log = tmp_path / "mongod.log"
    good = line.replace("0000-05-14", "2024-05-14")
    log.write_text(f"{good}\n{line}\n{good}\n")
    frames = ftdc.read_logs(log)
    assert frames.slow_ops["line"].to_list() == [1, 3]
    assert frames.problems.select("line", "reason").rows() == [(2, "timestamp outside years 1-9999")]
    result = run_cli("logs", log)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "1 line(s)" in result.stderr or "could not be read" in result.stderr, result.stderr


def test_a_log_given_with_a_line_dated_year_0_is_analysed(tmp_path):
    log = tmp_path / "mongod.log"
    demo = (DEMO / "mongod.log").read_text()
    started = demo.splitlines()[0].replace('"2024-', '"0000-', 1)  # an event: "MongoDB starting"
    log.write_text(f"{demo}{YEAR_0_JSON}\n{started}\n")
    result = run_cli(DEMO / "diagnostic.data", "--log", log)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


# --- a log found beside diagnostic.data, not given -----------------------------------------


@pytest.fixture
def demo_beside(tmp_path) -> Path:
    """The demo node in a folder of its own, its log to be written beside diagnostic.data."""
    import shutil

    shutil.copytree(DEMO / "diagnostic.data", tmp_path / "node" / "diagnostic.data")
    return tmp_path / "node"


@pytest.mark.parametrize("content", [b"", b"\x00\x01 not a log \xff\n"], ids=["empty", "junk"])
def test_an_unreadable_log_found_beside_is_a_warning_and_the_analysis_goes_on(demo_beside, content):
    (demo_beside / "mongod.log").write_bytes(content)
    result = run_cli(demo_beside / "diagnostic.data")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {demo_beside / 'mongod.log'}: no mongod log line in it"), lines
    assert "found with the FTDC, not given, so not read; analysed without a log" in lines[0]
    assert "No incident" in result.stdout or "incident" in result.stdout.lower()


def test_explore_reads_a_log_found_beside_as_the_summary_does(demo_beside, tmp_path):
    """`explore` read a log found beside the FTDC strictly: an empty one ended it with exit 2."""
    (demo_beside / "mongod.log").write_bytes(b"")
    page = tmp_path / "node.html"
    result = run_cli("explore", demo_beside / "diagnostic.data", "-o", page)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"warning: {demo_beside / 'mongod.log'}: no mongod log line in it" in result.stderr
    assert page.stat().st_size > 0
    quiet = run_cli("explore", demo_beside / "diagnostic.data", "-o", page, "--no-log")
    assert quiet.returncode == 0 and "mongod.log" not in quiet.stderr, quiet.stderr


def test_no_log_does_not_look_beside(demo_beside):
    (demo_beside / "mongod.log").write_bytes((DEMO / "mongod.log").read_bytes())
    looked = run_cli(demo_beside / "diagnostic.data", "--json")
    assert looked.stderr.startswith("read the log found beside the FTDC"), looked.stderr
    result = run_cli(demo_beside / "diagnostic.data", "--json", "--no-log")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert (
        json.loads(result.stdout)["nodes"][0]["findings"] != json.loads(looked.stdout)["nodes"][0]["findings"]
    )  # culprits come from the log
    both = run_cli(demo_beside / "diagnostic.data", "--no-log", "--log", demo_beside / "mongod.log")
    assert both.returncode == 2 and both.stderr.startswith("error: --no-log, yet logs were given"), both.stderr


def test_a_given_unreadable_log_is_still_an_error(demo_beside):
    (demo_beside / "mongod.log").write_bytes(b"")
    result = run_cli(demo_beside / "diagnostic.data", "--log", demo_beside / "mongod.log")
    assert result.returncode == 2 and "no mongod log line" in result.stderr, result.stderr


# --- NUL padding, sparse logs -------------------------------------------------------------


def demo_lines() -> int:
    return len((DEMO / "mongod.log").read_bytes().splitlines())


@pytest.mark.parametrize("how", ["written", "hole"])
def test_a_log_after_nul_padding_is_read_whole(tmp_path, how):
    """What copytruncate leaves: NULs (a hole, or zeros a copy wrote) up to where mongod
    went on writing. Taken for an empty tar archive, all its lines were lost."""
    log = tmp_path / "mongod.log"
    with open(log, "wb") as out:
        if how == "written":
            out.write(b"\0" * 3_000_000)
        else:
            out.seek(3_000_000)
        out.write((DEMO / "mongod.log").read_bytes())
    frames = ftdc.read_logs(log)
    assert frames.slow_ops.height + frames.events.height == demo_lines() and frames.problems.is_empty()
    assert frames.events["line"].min() == 1  # the padding holds no newline: line 1 is mongod's first
    in_tar = tmp_path / "bundle.tar"
    with tarfile.open(in_tar, "w") as tar:
        tar.add(log, "node/mongod.log")
    frames = ftdc.read_logs(in_tar)
    assert frames.slow_ops.height + frames.events.height == demo_lines()


def test_a_sparse_log_is_refused_up_front(tmp_path):
    """2 GB mostly never written: refused without reading it (it ran for minutes, every
    hole read as NULs), as the FTDC reader refuses sparse files; one all hole is empty."""
    sparse, empty = tmp_path / "sparse.log", tmp_path / "holes.log"
    with open(sparse, "wb") as out:
        for i in range(20):
            out.seek(i * (100 << 20))
            out.write(b'{"t":{"$date":"2024-05-14T09:30:00.000+00:00"},"s":"I","c":"NETWORK","id":1,"ctx":"c","msg":"m"}\n')
        out.truncate(2 << 30)
    with open(empty, "wb") as out:
        out.truncate(2 << 30)
    for path, said in ((sparse, f"warning: {sparse}: a sparse file, 0 MB of its 2,048 MB"), (empty, "error: ")):
        result = run_cli("logs", path, timeout=60)  # it ran for minutes
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith(said), result.stderr


# --- §2: memory bounds that crafted shapes broke ------------------------------------------


def peak_of(code: str, *args) -> tuple[list[str], int]:
    """Runs `code` in a child; its output lines and peak RSS (VmHWM) in MB."""
    code += "\nprint(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    *lines, peak = out.stdout.strip().splitlines()
    return lines, int(peak) // 1024


def test_millions_of_bad_lines_are_counted_not_held(tmp_path):
    """17.5 KB of gzip, 6 million `{}` lines: each a problem, listed up to a limit per block
    and counted beyond it (2.85 GB before, one native problem row per line)."""
    path = tmp_path / "mongod.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b"{}\n" * 6_000_000)
    code = (
        "import sys, ftdc\n"
        "from ftdc.logs.reader import decode_json_block\n"
        "from ftdc.logs.sources import blocks, expand\n"
        "listed = unlisted = 0\n"
        "for block, end in blocks(expand(sys.argv[1])[0], lambda n: None, print):\n"
        "    problems = decode_json_block(sys.argv[1], block, end)[3]\n"
        "    more = problems.filter(problems['line'].is_null())['reason'].str.extract(r'^(\\d+) more').cast(int).sum()\n"
        "    listed, unlisted = listed + problems['line'].is_not_null().sum(), unlisted + more\n"
        "print(listed, unlisted)\n"
    )
    lines, peak_mb = peak_of(code, path)
    listed, unlisted = map(int, lines[-1].split())
    assert listed + unlisted == 6_000_000 and listed <= 10 * ftdc.logs.problems.MAX_LISTED
    assert peak_mb < 600, peak_mb
    result = run_cli("logs", path, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().endswith("no mongod log line in it (not a JSON 4.4+ or text log)"), (
        result.stderr
    )


def wide_node(folder: Path, metrics: int, chunks: int) -> Path:
    """`chunks` chunks of two samples, each of `metrics` metrics of its own: few bytes, many columns."""
    with FTDCWriter(folder, metadata={"start": START}, samples_per_chunk=2) as writer:
        for c in range(chunks):
            for s in range(2):
                writer.add_sample(
                    {"start": START + dt.timedelta(seconds=2 * c + s), "m": {f"c{c}_{i}": s for i in range(metrics)}}
                )
    return folder


def test_a_chunk_wider_than_any_mongod_writes_is_damage(tmp_path):
    folder = wide_node(tmp_path / "diagnostic.data", 60_000, 1)
    result = run_cli("export", folder, "--out", tmp_path / "x.parquet")
    assert result.returncode == 2 and "60001 metrics x 2 samples is implausible" in result.stderr, result.stderr
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("how", ["--out", "--dataset"])
def test_an_export_wider_than_its_bound_is_refused_before_writing(tmp_path, how):
    """Chunks each within the bound whose metrics together are not (4 x 15,000 here; 200,000
    metrics took 1.64 GB for --dataset): one clear line, nothing written, with --metrics the way out."""
    from ftdc import select

    folder = wide_node(tmp_path / "diagnostic.data", 15_000, 4)
    target = tmp_path / ("x.parquet" if how == "--out" else "ds")
    code = (
        "import sys, ftdc, ftdc.select\nftdc.select.MAX_OUTPUT_METRICS = 40_000\n"
        "from cli import main\nsys.argv = ['ftdc-analyze', 'export', *sys.argv[1:]]\nmain()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder), how, str(target)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert out.returncode == 2 and out.stderr.strip() == (
        f"error: {folder}: 60,000 metrics, more than the 40,000 an export writes (mongod records a few thousand): "
        "select some (--metrics, metrics=)"
    ), out.stderr
    assert not target.exists() or not any(target.rglob("*.parquet"))
    assert select.MAX_OUTPUT_METRICS == 50_000
    selected = run_cli("export", folder, how, target, "--metrics", "m.c0_*")
    assert selected.returncode == 0, selected.stderr


def test_a_bundle_of_a_node_and_thousands_of_junk_members_is_analysed(tmp_path):
    """Junk named like logs beside a valid node: read as logs found, not given, each junk
    file cheaply (20,000 took 88 s), and with no log line among them the node is analysed."""
    bundle = tmp_path / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(DEMO / "diagnostic.data", "node/diagnostic.data")
        for i in range(3000):
            junk = random.Random(i).randbytes(64)
            info = tarfile.TarInfo(f"junk/j{i}.log")
            info.size = len(junk)
            tar.addfile(info, io.BytesIO(junk))
    result = run_cli(bundle, "--json", timeout=600)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert json.loads(result.stdout)["nodes"][0]["node"]["host"] == "db-prod-01.example.net"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no mongod log line in it" in lines[0] and "not given, so not read" in lines[0], lines
