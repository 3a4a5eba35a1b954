"""The commands that need no data start without the heavy libraries (issue 22): `--version`
and `--help` import neither polars, pyarrow, matplotlib nor pyspark, and `metrics` (which
lists names from the catalog) no Arrow, plotting or Spark. The summary of a node (`ftdc-analyze
DIR`, half of whose small run was start-up) imports what it uses: not the report's modules
without --report, not the Arrow tables, the fleet or Spark, not the log readers without a log.
Behaviour, not timing: what a fresh process has imported when the command returns."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cli
from ftdc.logs.sources import BLOCK_BYTES
from ftdc.writer import FTDCWriter

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("polars", "pyarrow", "matplotlib", "pyspark")

# Runs the console script's entry point in this process, then prints the top-level packages imported.
PROBE = """
import json, sys
sys.argv = ["ftdc-analyze", *json.loads(sys.argv[1])]
import cli
try:
    cli.main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def modules_imported_by(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def imported_by(*args: str) -> set[str]:
    """The top-level packages."""
    return {name.split(".")[0] for name in modules_imported_by(*args)}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["summary", "--help"], ["export", "--help"], ["fleet", "--help"]])
def test_help_and_version_import_no_heavy_library(args):
    assert imported_by(*args).isdisjoint(HEAVY)


@pytest.mark.parametrize("args", [["--help"], ["summary", "--help"]])
def test_help_does_not_look_up_the_version(args):
    """importlib.metadata (24 ms, a tenth of `--help`) is for `--version` only."""
    assert "importlib.metadata" not in modules_imported_by(*args)


def write_node(directory: Path, samples: int) -> Path:
    with FTDCWriter(directory) as writer:
        for i in range(samples):
            when = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i)
            writer.add_sample({"start": when, "serverStatus": {"uptime": i}, "end": when})
    return directory


def test_metrics_imports_no_arrow_plotting_or_spark(tmp_path):
    write_node(tmp_path, 3)
    result = subprocess.run(
        [sys.executable, "-m", "cli", "metrics", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "serverStatus.uptime\tInt64" in result.stdout  # the probe below lists a real file
    loaded = imported_by("metrics", str(tmp_path))
    assert loaded.isdisjoint({"pyarrow", "matplotlib", "pyspark"})


# What the summary of a node without a log and without --report has no use for.
NOT_FOR_A_SUMMARY = (
    "analysis.outputs.report",  # the report's content, figures, HTML, Markdown, explorer, redaction
    "analysis.outputs.schema",  # the Arrow tables of findings and incidents
    "analysis.outputs.tables",
    "analysis.fleet",
    "ftdc.logs.reader",  # the log readers: there is no log
    "ftdc.logs.narrow",
    "ftdc.logs.events",  # the log's decoders, and msgspec's
    "msgspec",
    "analysis.workbench.log_overview",  # the log's tables, for --json and the report
    "ftdc.export",
    "ftdc.dataset",
    "pyarrow.compute",  # 250 functions wrapped at import: polars takes a lone Arrow array through it
    "matplotlib",
    "pyspark",
    "pandas",
    "rich.progress",  # the progress bar, drawn only while a terminal watches (stderr here is a pipe)
    "numpy.ma",  # numpy's median looks for a mask with it (10 ms)
)


def test_a_summary_imports_what_it_uses(tmp_path):
    node = write_node(tmp_path / "diagnostic.data", 120)
    result = subprocess.run([sys.executable, "-m", "cli", str(node)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "samples           120 in 1 file" in result.stdout, result.stderr  # the probe below runs a real summary
    loaded = modules_imported_by(str(node))
    assert {"analysis.observe", "analysis.outputs.console"} <= loaded
    unused = {name for name in loaded for unwanted in NOT_FOR_A_SUMMARY if name == unwanted or name.startswith(unwanted + ".")}
    assert not unused


# What `explore` has no use for: the report's own modules (it writes the explorer's page alone).
NOT_FOR_AN_EXPLORER = tuple(
    f"analysis.outputs.report.{name}" for name in ("writers", "content", "figures", "plots", "html", "markdown")
) + ("analysis.outputs.redact",)


def test_explore_imports_the_explorer_not_the_report(tmp_path):
    node = write_node(tmp_path / "diagnostic.data", 120)
    page = tmp_path / "page.html"
    loaded = modules_imported_by("explore", str(node), "-o", str(page))
    assert page.exists() and "analysis.outputs.report.explorer_page" in loaded  # the probe below ran a real explore
    assert not {name for name in loaded for unwanted in NOT_FOR_AN_EXPLORER if name == unwanted}


def test_the_demo_nodes_summary_imports_what_it_uses():
    """A node with incidents runs every detector's baselines (the latency rise's medians among them)."""
    loaded = modules_imported_by(str(ROOT / "samples" / "diagnostic.data"), "--no-log")
    assert "analysis.findings.detectors.latency_rise" in loaded
    assert not {name for name in loaded for unwanted in NOT_FOR_A_SUMMARY if name == unwanted or name.startswith(unwanted + ".")}


def test_the_demo_nodes_summary_with_its_log_loads_no_masked_arrays():
    """With the log beside it the demo node's summary works out the share of each slow operation's run a checkpoint
    overlapped (a numpy array): it reaches polars through Arrow, so numpy.ma (7 ms) is not imported there either."""
    loaded = modules_imported_by(str(ROOT / "samples" / "diagnostic.data"))
    assert {"ftdc.logs.reader", "analysis.findings.culprits"} <= loaded  # the log was read, its runs attributed
    assert not {name for name in loaded if name == "numpy.ma" or name.startswith("numpy.ma.")}


# Runs a command and prints the allocator setting polars saw when it loaded (its jemalloc reads it then).
ALLOCATOR_PROBE = """
import json, os, sys
sys.argv = ["ftdc-analyze", *json.loads(sys.argv[1])]
import cli
seen = []
real_import = __builtins__.__import__
def watching(name, *args, **kwargs):
    if name == "polars" and not seen:
        seen.append(os.environ.get("_RJEM_MALLOC_CONF"))
    return real_import(name, *args, **kwargs)
__builtins__.__import__ = watching
try:
    cli.main()
except SystemExit:
    pass
print(json.dumps(seen))
"""


@pytest.mark.parametrize(
    "preset, seen",
    [
        (None, "dirty_decay_ms:0,muzzy_decay_ms:0"),
        ("dirty_decay_ms:250", "dirty_decay_ms:250"),  # the user's decay
        ("thp:always", "thp:always,dirty_decay_ms:0,muzzy_decay_ms:0"),  # the user's other settings kept
        # What a parent process that loaded polars passes on is polars' own setting, not the user's.
        ("dirty_decay_ms:500,muzzy_decay_ms:1000", "dirty_decay_ms:0,muzzy_decay_ms:0"),
    ],
)
def test_polars_loads_with_freed_pages_handed_back_unless_the_user_said_otherwise(tmp_path, preset, seen):
    # A compressed log: whatever its size on disk, a large one as far as the allocator is concerned.
    log = tmp_path / "mongod.log.gz"
    line = {"t": {"$date": "2024-01-02T03:04:05.000Z"}, "s": "I", "c": "COMMAND", "id": 51803, "ctx": "conn1"}
    attr = {"type": "command", "ns": "db.c", "command": {"find": "c", "filter": {"a": 1}}, "durationMillis": 150}
    log.write_bytes(gzip.compress((json.dumps({**line, "msg": "Slow query", "attr": attr}) + "\n").encode()))
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if preset:
        env["_RJEM_MALLOC_CONF"] = preset
    args = json.dumps(["logs", str(log), "--format", "json"])
    result = subprocess.run(
        [sys.executable, "-c", ALLOCATOR_PROBE, args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [seen]


HANDED_BACK = "dirty_decay_ms:0,muzzy_decay_ms:0"


@pytest.mark.parametrize(
    "args, seen",
    [
        # FTDC alone, or with a log of a block or two: polars' own decay, no page handed back to be faulted in again.
        (["{demo}"], None),  # the 63 KB log beside it is read
        (["{demo}", "--no-log"], None),
        (["{node}"], None),
        (["{node}", "--log", "{log}"], None),
        (["logs", "{log}"], None),
        # A log of more blocks, or one whose size on disk does not say (compressed, an archive, a folder).
        (["{node}", "--log", "{large}"], HANDED_BACK),
        (["logs", "{large}"], HANDED_BACK),
        (["{node}", "--log", "{compressed}"], HANDED_BACK),
        (["logs", "{folder}"], HANDED_BACK),
        (["explore", "{node}", "-o", "{page}"], None),
        (["export", "{node}", "-o", "{out}"], None),
    ],
)
def test_freed_pages_are_handed_back_at_once_only_where_a_large_log_is_read(tmp_path, args, seen):
    node = write_node(tmp_path / "node" / "diagnostic.data", 30)
    log = tmp_path / "given.log"
    shutil.copy(ROOT / "samples" / "mongod.log", log)
    text = log.read_bytes()
    large = tmp_path / "large.log"
    large.write_bytes(text * (-(-cli.HAND_BACK_FROM_BLOCKS * BLOCK_BYTES // len(text))))
    compressed = tmp_path / "given.log.gz"
    compressed.write_bytes(gzip.compress(text))
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(log, folder / "mongod.log")
    where = {"demo": ROOT / "samples" / "diagnostic.data", "node": node, "log": log}
    where |= {"large": large, "compressed": compressed, "folder": folder}
    where |= {"page": tmp_path / "page.html", "out": tmp_path / "out.parquet"}
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    given = json.dumps([a.format(**where) for a in args])
    result = subprocess.run(
        [sys.executable, "-c", ALLOCATOR_PROBE, given], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [seen]


# Runs a command and prints which collections ran while it imported its modules (from the first module its block
# imports to the last), how many objects were frozen after, and whether the collector was on again.
COLLECTOR_PROBE = """
import gc, json, sys
args, first, last = json.loads(sys.argv[1])
sys.argv = ["ftdc-analyze", *args]
during_imports = []
def watch(phase, info):
    if phase == "start" and first in sys.modules and last not in sys.modules:
        during_imports.append(info["generation"])
gc.callbacks.append(watch)
import cli
code = 0
try:
    cli.main()
except SystemExit as exit:
    code = exit.code or 0
print(json.dumps({"code": code, "during_imports": during_imports, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""


@pytest.mark.parametrize(
    "command, first, last",
    [
        # The summary's are imported by `analysis.run`, once it has started the node's decode (`ftdc.decoding`).
        (["{node}"], "polars", "analysis.nodes"),
        (["explore", "{node}", "-o", "{page}"], "analysis", "analysis.outputs.report.explorer_page"),
        (["logs", "{log}"], "polars", "ftdc.logs.report"),  # its size is looked at first (`ftdc.logs.sources`)
    ],
    ids=["summary", "explore", "logs"],
)
def test_a_commands_imports_are_not_walked_by_the_collector(tmp_path, command, first, last):
    """A command's modules (polars, numpy, the analyses': hundreds of thousands of objects that live to the end) are
    imported with the cyclic collector off, then frozen out of its passes; it is on again for the command's work."""
    where = {
        "node": write_node(tmp_path / "diagnostic.data", 120),
        "page": tmp_path / "page.html",
        "log": ROOT / "samples" / "mongod.log",
    }
    given = json.dumps([[a.format(**where) for a in command], first, last])
    result = subprocess.run([sys.executable, "-c", COLLECTOR_PROBE, given], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["code"] == 0
    assert seen["during_imports"] == []
    assert seen["frozen"] > 0
    assert seen["enabled"]


def test_the_collector_is_on_again_when_a_summarys_imports_fail(monkeypatch):
    """An import that raises (a broken install) leaves the collector as it found it."""
    import gc

    from ftdc import memory

    monkeypatch.setattr(memory, "_FROZE_IMPORTS", [])
    assert gc.isenabled()
    with pytest.raises(ImportError), memory.imports_kept():
        assert not gc.isenabled()
        raise ImportError("a module that is not there")
    assert gc.isenabled()
    gc.unfreeze()  # this test process's objects back in the collector's passes


# Runs a command, then prints how many threads numpy's OpenBLAS works with (null where numpy has no OpenBLAS).
BLAS_PROBE = r"""
import ctypes, json, re, sys
sys.argv = ["ftdc-analyze", *json.loads(sys.argv[1])]
import cli
try:
    cli.main()
except SystemExit:
    pass
import numpy
threads = None
for library in sorted(set(re.findall(r"/\S*openblas\S*[.]so\S*", open("/proc/self/maps").read()))):
    for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads"):
        if hasattr(ctypes.CDLL(library), name):
            threads = getattr(ctypes.CDLL(library), name)()
print(json.dumps(threads))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
@pytest.mark.parametrize(
    "preset, threads",
    [
        ({}, 1),  # its worker threads would only spin: nothing here does linear algebra
        ({"OPENBLAS_NUM_THREADS": "2"}, 2),  # the user's count kept
        ({"OMP_NUM_THREADS": "2"}, 2),
    ],
)
def test_a_summary_starts_no_blas_worker_threads_unless_the_user_asked(tmp_path, preset, threads):
    node = write_node(tmp_path / "diagnostic.data", 120)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    result = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, json.dumps([str(node)])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env | preset,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    if seen is None:
        pytest.skip("numpy has no OpenBLAS here")
    assert seen == threads
