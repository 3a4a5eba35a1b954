"""The commands that need no data start without the heavy libraries (issue 22): `--version`
and `--help` import neither polars, pyarrow, matplotlib nor pyspark, and `metrics` (which
lists names from the catalog) no Arrow, plotting or Spark. Behaviour, not timing: what a
fresh process has imported when the command returns."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

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
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def imported_by(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["summary", "--help"], ["export", "--help"], ["fleet", "--help"]])
def test_help_and_version_import_no_heavy_library(args):
    assert imported_by(*args).isdisjoint(HEAVY)


def test_metrics_imports_no_arrow_plotting_or_spark(tmp_path):
    with FTDCWriter(tmp_path) as writer:
        for i in range(3):
            when = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i)
            writer.add_sample({"start": when, "serverStatus": {"uptime": i}, "end": when})
    result = subprocess.run(
        [sys.executable, "-m", "cli", "metrics", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "serverStatus.uptime\tInt64" in result.stdout  # the probe below lists a real file
    loaded = imported_by("metrics", str(tmp_path))
    assert loaded.isdisjoint({"pyarrow", "matplotlib", "pyspark"})
