"""`analysis.run`, the one library entry the command line, the notebooks and (for its logs) the fleet follow: what the
paths hold, the logs by one policy (`ftdc.inputs.plan_logs`), every node analysed and composed once, redacted when
asked, and where the search for a log looked when it found none."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysis
import ftdc
from analysis.observe import read_found_logs
from analysis.outputs.document import result_document
from ftdc.inputs import Inputs, plan_logs

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples"


@pytest.fixture(scope="module")
def demo_node(tmp_path_factory) -> Path:
    """A node's folder as a support bundle lays it out: diagnostic.data with its log beside it."""
    node = tmp_path_factory.mktemp("node")
    shutil.copytree(DEMO / "diagnostic.data", node / "diagnostic.data")
    shutil.copy(DEMO / "mongod.log", node / "mongod.log")
    return node


def quietly(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def test_a_run_reads_the_log_beside_the_ftdc_and_says_so(demo_node):
    ran = quietly(lambda: analysis.run(demo_node / "diagnostic.data"))
    assert ran.beside == [demo_node / "mongod.log"] and ran.result.no_log is None and ran.looked is None
    # The same answer the stages give when called by hand with that log read.
    by_hand = quietly(
        lambda: analysis.analyze_nodes([demo_node / "diagnostic.data"], read_found_logs([demo_node / "mongod.log"]))
    )
    same = dict(generated=None, redacted=False)
    fixed = "2024-01-01T00:00:00Z"
    assert json.dumps({**result_document(ran.result, **same), "generated": fixed}) == json.dumps(
        {**result_document(by_hand, **same), "generated": fixed}
    )
    assert ran.nodes == ran.result.nodes and ran.inputs.ftdc == [demo_node / "diagnostic.data"]


def test_no_log_reads_none_and_says_nothing_of_one(demo_node):
    ran = quietly(lambda: analysis.run(demo_node, no_log=True))
    assert ran.beside == [] and ran.result.no_log is None and not ran.nodes[0].result.logged
    with pytest.raises(ValueError, match="--no-log, yet logs were given"):
        analysis.run(demo_node, [demo_node / "mongod.log"], no_log=True)


def test_where_the_search_looked_is_said_and_an_attachment_names_no_path(tmp_path):
    node = tmp_path / "acme-prod-db7"
    shutil.copytree(DEMO / "diagnostic.data", node / "diagnostic.data")
    ran = quietly(lambda: analysis.run(node))
    assert ran.looked is not None and str(node) in ran.looked and ran.result.no_log == ran.looked
    redacted = quietly(lambda: analysis.run(node, redact=True))
    assert redacted.looked == ran.looked and redacted.result.no_log and "acme-prod-db7" not in redacted.result.no_log
    assert redacted.redactor is not None and redacted.redactor.key()  # the sender's key: the node's host among them


def test_notes_are_heard_before_the_analysis_and_progress_reaches_its_total(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(DEMO / "diagnostic.data", tmp_path / name / "diagnostic.data")
    heard, steps = [], []
    ran = quietly(
        lambda: analysis.run(
            tmp_path, no_log=True, note=lambda text: heard.append((text, len(steps))), progress=lambda *s: steps.append(s)
        )
    )
    assert len(ran.nodes) == 2 and ran.notes == [text for text, _ in heard]
    assert heard and all(before == 0 for _, before in heard)  # said before the first stage
    totals = {total for _, total, _ in steps}
    assert totals == {steps[-1][0]} and [done for done, _, _ in steps] == list(range(1, steps[-1][0] + 1))


def test_no_ftdc_is_the_one_error(tmp_path):
    shutil.copy(DEMO / "mongod.log", tmp_path / "mongod.log")
    with pytest.raises(ftdc.FTDCError, match="no FTDC .* use `ftdc-analyze logs`"):
        analysis.run(tmp_path)


paths = st.lists(st.sampled_from([Path(f"/x/{n}.log") for n in "abcdef"]), max_size=4, unique=True)


@settings(max_examples=200, deadline=None)
@given(inside=paths, given_=paths, beside=paths, no_log=st.booleans())
def test_the_log_policy(inside, given_, beside, no_log):
    """Given logs (with those inside the inputs) are read strictly; else those inside; else those beside each
    diagnostic.data, flagged so a user is told; none under --no-log, which cannot go with logs given."""
    import ftdc.inputs as inputs

    found = Inputs([Path("/x/diagnostic.data")], list(inside))
    original = inputs.logs_beside
    inputs.logs_beside = lambda dirs: list(beside)
    try:
        if given_ and no_log:
            with pytest.raises(ValueError):
                plan_logs([Path("/x/diagnostic.data")], found, given_, no_log)
            return
        plan = plan_logs([Path("/x/diagnostic.data")], found, given_, no_log)
    finally:
        inputs.logs_beside = original
    if given_:
        assert plan.given == list(dict.fromkeys([*inside, *given_])) and plan.found == []
    elif no_log:
        assert plan.paths == []
    else:
        assert plan.given == [] and plan.found == (inside or beside) and plan.beside == (not inside and bool(beside))
    assert plan.paths == (plan.given or plan.found)


def test_a_log_named_among_the_paths_is_given():
    """`ftdc-analyze DIR mongod.log` names the log as `--log` would: read strictly, before any found beside."""
    found = Inputs([Path("/x/diagnostic.data")], [Path("/x/mongod.log")])
    plan = plan_logs([Path("/x/diagnostic.data"), Path("/x/mongod.log")], found)
    assert plan.given == [Path("/x/mongod.log")] and plan.found == []
    with pytest.raises(ValueError, match="--no-log, yet logs were given"):
        plan_logs([Path("/x/mongod.log")], found, no_log=True)


def test_the_fleet_reads_logs_by_the_same_policy(tmp_path, demo_node):
    """`fleet` names the logs it read beside the FTDC, as the summary does; a bad engine is the one error style."""
    out = tmp_path / "dataset"
    result = subprocess.run(
        [sys.executable, "-m", "cli", "fleet", str(demo_node / "diagnostic.data"), "-o", str(out), "--engine", "loop"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert f"read the logs found beside the FTDC: {demo_node / 'mongod.log'}" in result.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "cli", "fleet", str(demo_node), "-o", str(out), "--engine", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == "error: --engine must be loop, pool or spark"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["fleet", "{node}", "-o", "{out}", "--engine", "nope"], "--engine must be loop, pool or spark"),
        (["export", "{node}"], "give --out FILE or --dataset DIR"),
        (["export", "{node}", "-o", "{out}.xlsx"], "{out}.xlsx: unsupported output type (use .parquet or .csv)"),
        (
            ["logs", "{log}", "--sort", "nope"],
            "--sort must be total, p95 or count; --format table, json or csv; --top a positive number",
        ),
        (["summary", "{node}", "--redact-key", "{out}.key"], "--redact-key needs --redact"),
        (["explore", "{node}"], "give the page to write (-o page.html) or --serve, one of them"),
    ],
)
def test_every_commands_bad_input_is_one_error_line_alike(tmp_path, args, said):
    """Input validation in one style: a ValueError the one handler says as `error: ...` and exit 2, nothing before it."""
    where = {"node": str(DEMO / "diagnostic.data"), "out": str(tmp_path / "out"), "log": str(DEMO / "mongod.log")}
    given = [a.format(**where) for a in args]
    result = subprocess.run([sys.executable, "-m", "cli", *given], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: {said.format(**where)}"]
