"""Causes that are true (issue 39 §3): a load counted in documents as well as operations, a write load named only when it
rose against a stated baseline, and an analysis without a log that says so."""

import warnings
from pathlib import Path

import analysis

DEMO = Path(__file__).resolve().parent.parent / "samples" / "diagnostic.data"


def _demo_without_log():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(DEMO, None)


def test_the_demo_without_its_log_names_no_write_load_that_fell_and_says_the_log_is_missing():
    # Was: "Write load (554 write operations/s ... against 999 writes/s before) outran checkpoints": the load fell, and
    # nothing said that no log was read.
    [incident] = _demo_without_log().incidents
    causes = [incident.root_cause, *incident.candidates]
    assert not [c for c in causes if c.kind == "workload"], [c.summary for c in causes]
    cause = incident.root_cause
    assert cause.kind == "undetermined" and cause.evidence["load_change"] == "fell"
    assert cause.evidence["writes_per_s"] < cause.evidence["writes_per_s_before"]
    assert "the write load fell (554 write operations/s against 999/s in the 49 min 59 s before" in cause.summary
    assert "no mongod log was read" in cause.summary and "index builds and transactions" in cause.summary
    assert "outran" not in incident.title and "no mongod log was read" in incident.title


def test_the_summary_without_a_log_says_where_it_looked_and_what_it_cannot_see(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    node = tmp_path / "node"
    shutil.copytree(DEMO, node / "diagnostic.data")
    result = subprocess.run(
        [sys.executable, "-m", "cli", str(node / "diagnostic.data")],
        cwd=DEMO.parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stderr.split())
    assert said == (
        f"no mongod log found: looked in {node / 'diagnostic.data'} and beside diagnostic.data in {node}; the operations, their "
        "clients, index builds and transactions behind an incident cannot be seen without one (--log names one)"
    )
    assert "Cause not determined (no mongod log was read)" in " ".join(result.stdout.split())
