"""analyze() on every real sample: it completes, says what it could not check, and raises
no warning or critical finding except the ones shown here by hand, from the raw metrics,
to be real."""

import datetime as dt
import shutil
import warnings

import polars as pl
import pytest

import analysis
import ftdc

UTC = dt.timezone.utc
SS, WT = "serverStatus.", "serverStatus.wiredTiger."
CHUNK_80 = "mongod-8.0-chunk/metric-2025-03-12_15-58-06.0_+00-00-00.bson"


def run(path, logs=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        return analysis.analyze(path, logs)


@pytest.fixture(scope="module")
def results(ftdc_samples, tmp_path_factory):
    interim = tmp_path_factory.mktemp("interim")
    shutil.copy(ftdc_samples / "mongod-7.0" / "diagnostic.data" / "metrics.interim", interim)
    paths = {
        "7.0": ftdc_samples / "mongod-7.0" / "diagnostic.data",
        "4.2.1": ftdc_samples / "mongod-4.2.1" / "diagnostic.data",
        "8.0": ftdc_samples / CHUNK_80,
        "interim": interim,
        "go": ftdc_samples / "go-writer-synthetic" / "perf_metrics_small.ftdc",
    }
    return {name: run(path) for name, path in paths.items()}


def problems(result):
    return sorted((f.kind, f.resource) for f in result.problems)


def test_every_sample_is_analysed(results):
    for name, result in results.items():
        assert result.findings is not None and result.series.height > 0, name
        assert result.to_dict()["findings"] == [f.to_dict() for f in result.findings]


def test_quiet_samples_have_no_problem(results):
    for name in ("4.2.1", "interim", "go"):
        assert problems(results[name]) == [], name


def test_missing_metrics_are_said_not_guessed(results):
    """The Go writer's file has none of mongod's metrics; 4.2.1 (macOS) has no disks."""
    go = results["go"]
    assert go.findings and all(f.severity == "info" and "not checked" in f.title for f in go.findings)
    assert {f.kind for f in go.findings} >= {"checkpoint_stall", "cache_pressure", "ticket_exhaustion", "disk_saturation"}
    assert any(f.kind == "disk_saturation" and "not checked" in f.title for f in results["4.2.1"].findings)


def test_70_disk_saturation_is_real(results, ftdc_samples):
    """By hand: sda busy >= 90 % with requests taking 5x their usual time and every task
    stalled on I/O (PSI io.full) about half the time, for 50 s of 10 s samples."""
    assert problems(results["7.0"]) == [("disk_saturation", None)]
    finding = results["7.0"].problems[0]
    d = "systemMetrics.disks.sda."
    raw = ftdc.read_ftdc(
        ftdc_samples / "mongod-7.0" / "diagnostic.data",
        [d + m for m in ("io_time_ms", "reads", "writes", "read_time_ms", "write_time_ms")]
        + ["systemMetrics.pressure.io.full.totalMicros"],
    )
    step = pl.col("start").diff().dt.total_milliseconds()
    hand = raw.with_columns(
        util=100 * pl.col(d + "io_time_ms").diff() / step,
        await_ms=(pl.col(d + "read_time_ms").diff() + pl.col(d + "write_time_ms").diff())
        / (pl.col(d + "reads").diff() + pl.col(d + "writes").diff()),
        psi=100 * pl.col("systemMetrics.pressure.io.full.totalMicros").diff() / 1000 / step,
    )
    usual = hand["await_ms"].median()
    inside = hand.filter(
        pl.col("start").is_between(
            dt.datetime(2025, 7, 10, 20, 21, 10, tzinfo=UTC), dt.datetime(2025, 7, 10, 20, 21, 50, tzinfo=UTC)
        )
    )
    assert (
        inside.height == 5 and inside["util"].min() >= 90 and inside["await_ms"].min() >= 5 * usual and inside["psi"].min() >= 40
    )
    assert finding.evidence["device"] == "sda"
    assert finding.start == dt.datetime(2025, 7, 10, 20, 21, tzinfo=UTC) and finding.end == dt.datetime(
        2025, 7, 10, 20, 21, 50, tzinfo=UTC
    )


def test_80_write_tickets_and_cache_are_real(results, ftdc_samples):
    """By hand: an 8.0 node under heavy writes: no write ticket free with writers queued for
    minutes, update bytes past 10 % of the cache while application threads evicted; checkpoints
    back to back (syncdelay=1, issue 12), several seconds long while write latency spiked (issue 13
    §1.6: the interval is inferred from that cadence, no longer assumed to be 60 s, so the stall is found)."""
    assert problems(results["8.0"]) == [("cache_pressure", None), ("checkpoint_stall", None), ("ticket_exhaustion", "write")]
    checkpoints = ftdc.read_ftdc(ftdc_samples / CHUNK_80, [WT + "checkpoint.total succeed number of checkpoints"])
    completed = checkpoints[WT + "checkpoint.total succeed number of checkpoints"]
    assert completed.max() - completed.min() >= 50  # about one every 5 s of 300
    stall = next(f for f in results["8.0"].problems if f.kind == "checkpoint_stall")
    assert all(c["seconds"] > 1 for c in stall.evidence["checkpoints"])
    q = SS + "queues.execution.write."
    c = WT + "cache."
    raw = ftdc.read_ftdc(
        ftdc_samples / CHUNK_80,
        [
            q + "available",
            q + "normalPriority.queueLength",
            c + "bytes allocated for updates",
            c + "maximum bytes configured",
            c + "pages evicted by application threads",
        ],
    )
    exhausted = raw.filter((pl.col(q + "available") == 0) & (pl.col(q + "normalPriority.queueLength") > 0))
    tickets = next(f for f in results["8.0"].problems if f.kind == "ticket_exhaustion")
    assert exhausted.height >= 60 and exhausted[q + "normalPriority.queueLength"].max() >= 100
    assert tickets.start <= exhausted["start"].min() and tickets.end >= exhausted["start"].max()
    over = raw.with_columns(
        updates=pl.col(c + "bytes allocated for updates") / pl.col(c + "maximum bytes configured"),
        evicted=pl.col(c + "pages evicted by application threads").diff(),
    ).filter(pl.col("updates") > 0.10)
    cache = next(f for f in results["8.0"].problems if f.kind == "cache_pressure")
    assert over.height >= 10 and over["evicted"].sum() > 0
    assert cache.start <= over["start"].min() and cache.end >= over["start"].max()
    assert cache.evidence["breaches"].keys() == {"updates"} and cache.evidence["app_evicted_pages"] > 0


def test_a_log_of_another_node_does_not_break_the_analysis(ftdc_samples, log_samples):
    result = run(ftdc_samples / "mongod-7.0" / "diagnostic.data", log_samples / "atlas-8.0.12")
    assert result.logs is not None and problems(result) == [("disk_saturation", None)]
    # The disk finding's window has no slow operation of that log in it, and says so.
    assert "no slow operation" in result.problems[0].explanation
