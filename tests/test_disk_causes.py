"""A saturated disk told as whose I/O filled it (issue 39 §3): another process's reads or writes against what mongod itself
read and wrote (its data files and its journal), mongod's own work named, or the device itself slower at its usual load;
advice that fits that cause, more IOPS only for a volume near saturation in its usual hours; the wait said as a peak."""

import datetime as dt
import statistics
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysis

SCENARIOS = Path(__file__).resolve().parent.parent / "samples" / "scenarios"
WINDOW = "from 01:49:59 to 01:53:59 UTC"


def _analyzed(folder: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(folder / "diagnostic.data", folder / "mongod.log")


def _io(device_read, device_write, read, written, journal, checkpoints=0.0):
    return {
        "device_read_mb_per_s": device_read,
        "device_write_mb_per_s": device_write,
        "mongod_read_mb_per_s": read,
        "mongod_write_mb_per_s": written,
        "checkpoint_write_mb_per_s": checkpoints,
        "journal_write_mb_per_s": journal,
    }


def _simulated(shape, incident):
    from samples.families import analyzed, build, failures

    scenario, result = analyzed(build, shape, incident)
    assert failures(scenario, result) == []
    return [f for f in result.problems if f.kind == "disk_saturation"]


def test_the_disk_saturation_scenario_is_a_backup_reading_the_volume_not_a_volume_too_small():
    # Was: "Disk sda saturated for 4 min: ≥ 90 % busy, requests waiting 180 ms", its only fix "Provision more IOPS ...
    # The device delivered 180 MB/s at 180 ms per request", for a 4-minute burst on a volume 25 % busy otherwise.
    [incident] = _analyzed(SCENARIOS / "disk-saturation").incidents
    [finding] = incident.findings
    cause = incident.root_cause
    assert cause.evidence["mechanism"] == "another_process" and cause.evidence["another_process_io"] == ["reads"]
    assert finding.subject == "Disk sda saturated for 4 min by another process's reads"
    # The title says what filled the device; the root cause says whose I/O it was, with the numbers (not the title again).
    assert finding.statement == "≥ 90 % busy, requests waiting up to 180 ms"
    assert cause.summary == (
        "the device read 166 MB/s and wrote 14 MB/s while mongod read 6.0 MB/s from its data files and wrote 4.9 MB/s to "
        "them and 0.8 MB/s to its journal: another process on the host did the rest of the reads"
    )
    assert "requests waited a median 153 ms, up to 180 ms, against 0.8 ms usually" in finding.reasoning
    assert "sda is 25 % busy in its usual hours" in finding.reasoning
    [first] = incident.recommendations
    assert first.action == "investigate" and first.what.startswith(
        f"Find the process reading this volume besides mongod {WINDOW}"
    )
    assert "per-process I/O accounting" in first.what and "backups" in first.what
    assert not [r for r in incident.recommendations if r.action == "resize"]


def test_another_process_writing_the_volume_is_told_with_mongods_journal_counted_as_its_own():
    # Was: only the device's reads were set against mongod's; a device written by another process was "saturated", its
    # fix more IOPS, and the journal's bytes were not mongod's.
    from samples.families import Incident, Shape

    [finding] = _simulated(Shape(seed=5), Incident("disk_saturation", 180, 5.0, strength=0.5, other_writes=True))
    assert finding.evidence["mechanism"] == "another_process" and finding.evidence["another_process_io"] == ["writes"]
    assert finding.subject.endswith("by another process's writes")
    assert "and 4.5 MB/s to its journal" in finding.cause
    assert finding.recommendations[0].what.startswith("Find the process writing this volume besides mongod")


def test_the_journal_is_mongods_own_write():
    from analysis.findings.detectors.disk_saturation import Load, _cause

    # 100 MB/s written, 30 to mongod's data files and 60 to its journal: mongod's own, not another process's.
    io = _io(10.0, 100.0, 10.0, 30.0, 60.0)
    assert _cause(Load(io, throughput=110.0, usual_mb=20.0, usual_busy=25.0)) == "mongod"
    # Without the journal's count mongod's writes are not known: no other process is named on them.
    assert _cause(Load(_io(10.0, 100.0, 10.0, 30.0, None), 110.0, 20.0, 25.0)) is None
    assert _cause(Load(_io(10.0, 100.0, 10.0, 5.0, 5.0), 110.0, 20.0, 25.0)) == "another_process"


def test_a_disk_busy_with_mongods_own_io_names_its_work_and_advises_less_at_once():
    from samples.families import Incident, Shape

    [finding] = _simulated(Shape(seed=5), Incident("disk_saturation", 180, 5.0, strength=0.5))
    assert finding.subject.endswith("by mongod's own writes of dirty pages between checkpoints (eviction)")
    assert finding.evidence["own_work"] == "eviction" and "mechanism" not in finding.evidence
    first = finding.recommendations[0]
    assert first.action == "batch_writes" and "writes of dirty pages between checkpoints (eviction)" in first.why
    # mongod's reads most of it: the operations reading from disk.
    from analysis.findings.detectors.disk_saturation import Load, _advice

    reads = _advice(Load(_io(90.0, 10.0, 90.0, 6.0, 4.0), 100.0, 20.0, 25.0), 50.0, WINDOW)
    assert [r.action for r in reads] == ["change_workload"] and "reads from its data files" in reads[0].why


def test_a_volume_slower_at_its_usual_load_is_told_so_and_the_volume_checked():
    # replica-set rs1-c: 20 MB/s as in its usual hours, 97 % busy and requests waiting 32 ms: neither mongod nor another
    # process asked more of the device.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        node = SCENARIOS / "replica-set" / "node3"
        result = analysis.analyze(node / "diagnostic.data", node / "mongod.log")
    [finding] = [f for f in result.problems if f.kind == "disk_saturation"]
    assert finding.subject == "Disk sda saturated for 20 min at its usual load, the device itself slower"
    assert finding.evidence["device_slowed"] is True and "mechanism" not in finding.evidence
    assert finding.cause.startswith("it moved 20 MB/s against 20 MB/s usually")
    [first] = finding.recommendations
    assert first.action == "investigate" and first.what.startswith("Check the volume itself from 07:24:59 to 07:44:59 UTC")


def test_more_iops_only_for_a_volume_near_saturation_in_its_usual_hours_with_the_wait_as_ms_says_it():
    # Was: more IOPS whatever the volume's usual hours, its reason "at 1 ms per request" of a 0.8 ms wait.
    from analysis.findings.detectors.disk_saturation import Load, _advice

    io = _io(10.0, 100.0, 10.0, 5.0, 5.0)
    busy = _advice(Load(io, 110.0, 20.0, usual_busy=85.0), 0.8, WINDOW)
    assert [r.action for r in busy] == ["investigate", "resize"]
    assert busy[1].why == (
        "the device is 85 % busy in its usual hours (the median of the capture outside this window) and delivered 110 MB/s "
        "at up to 0.8 ms per request here"
    )
    assert [r.action for r in _advice(Load(io, 110.0, 20.0, usual_busy=25.0), 0.8, WINDOW)] == ["investigate"]


def test_the_wait_is_said_as_a_peak_in_every_format(tmp_path):
    # Was: "requests waiting 180 ms", the window's peak said as if it were its level, in every format.
    import os
    import subprocess
    import sys

    folder = SCENARIOS / "disk-saturation"
    said = {}
    for suffix in ("md", "html", "json"):
        report = tmp_path / f"report.{suffix}"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "cli",
                str(folder / "diagnostic.data"),
                "--log",
                str(folder / "mongod.log"),
                "--report",
                str(report),
            ],
            cwd=SCENARIOS.parent.parent,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert run.returncode == 0, run.stderr
        said[suffix], said["terminal"] = report.read_text(), " ".join(run.stdout.split())
    for fmt, text in said.items():
        assert "waiting up to 180 ms" in text, fmt
        assert "waiting 180 ms" not in text and "at 180 ms per request" not in text, fmt


def test_checkpoints_wrote_a_part_of_what_mongod_wrote_to_its_data_files_in_every_scenario():
    # replica-set rs1-c: "mongod wrote to its data files: 1.6 MB/s" above "checkpoints wrote: 1.7 MB/s", over the same
    # samples: WiredTiger's block manager counts a checkpoint's writes in its bytes written too (block_write.c), so the
    # simulator wrote checkpoints' bytes that its data files' count lacked.
    for folder in sorted({p.parent for p in SCENARIOS.glob("**/diagnostic.data")}):
        series = _analyzed(folder).series
        over = series.filter(series["checkpoint_write_mb_per_s"] > series["mongod_write_mb_per_s"] + 1e-9)
        assert over.is_empty(), (folder.name, over.height)


def test_an_io_pressure_counter_at_zero_through_the_capture_is_not_quoted():
    # replica-set rs1-c: "every task stalled on I/O 0 % of the time (PSI io.full)" while sda was ≥ 90 % busy with 32 ms
    # waits, from a counter at zero throughout the capture: a host that does not keep it, not a disk no task waited on.
    base = SCENARIOS / "replica-set"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze_nodes(sorted(base.glob("*/diagnostic.data")), sorted(base.glob("*/mongod.log")))
    saturated = [(n, f) for n in result.nodes for f in n.problems if f.kind == "disk_saturation"]
    assert saturated
    for node, finding in saturated:
        assert (node.series["io_full_pct"].max() or 0) == 0
        assert "PSI" not in finding.reasoning and "stalled on I/O" not in finding.reasoning
    # One that moved is quoted: the backup's burst on disk-saturation.
    [finding] = [f for f in _analyzed(SCENARIOS / "disk-saturation").problems if f.kind == "disk_saturation"]
    assert "of the time (PSI io.full)" in finding.reasoning


def test_the_hunt_for_another_process_reads_the_schedules_now_and_watches_when_it_recurs():
    # disk-saturation: "the host's per-process I/O accounting (pidstat -d, iotop) names it" of a burst already past: those
    # show only the I/O of the moment they run. What names it now is a job scheduled at that time of day; the accounting
    # names it when the burst comes again.
    [incident] = _analyzed(SCENARIOS / "disk-saturation").incidents
    first = incident.recommendations[0].what
    assert f"{WINDOW}: look now for a job scheduled at that time of day (cron, backup and snapshot schedules)" in first
    assert "If it recurs at that hour, run the host's per-process I/O accounting (pidstat -d, iotop) while it lasts" in first
    assert "names it" not in first


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False)), min_size=0, max_size=40),
    bounds=st.tuples(st.integers(-2, 42), st.integers(-2, 42)),
)
def test_a_columns_usual_is_its_median_outside_the_window_whatever_the_frame_holds(values, bounds):
    """`usual_of` filters the one column it reads, not the whole frame (each of the derived frame's hundred columns
    copied, then dropped): the median of that column's known values at times before the window's start or after its
    end, None when there are none, as the frame-wide filter gave."""
    from types import SimpleNamespace

    import polars as pl

    from analysis.findings.detectors.disk_saturation import usual_of
    from ftdc.frames import TIME_COLUMN

    origin = dt.datetime(2024, 5, 14, tzinfo=dt.timezone.utc)
    times = [origin + dt.timedelta(seconds=i) for i in range(len(values))]
    series = pl.DataFrame(
        {TIME_COLUMN: times, "disk_mb_per_s.sda": values, "other": list(range(len(values)))},
        schema={TIME_COLUMN: pl.Datetime("ms", "UTC"), "disk_mb_per_s.sda": pl.Float64, "other": pl.Int64},
    )
    start, end = (origin + dt.timedelta(seconds=b) for b in sorted(bounds))
    outside = [v for t, v in zip(times, values) if (t < start or t > end) and v is not None]
    usual = usual_of(SimpleNamespace(series=series), "disk_mb_per_s.sda", start, end)
    assert usual == (pytest.approx(statistics.median(outside), rel=1e-12) if outside else None)  # polars' own midpoint
    assert usual_of(SimpleNamespace(series=series), "disk_mb_per_s.sdb", start, end) is None  # a device not recorded
