"""Issue 18: explanations a support engineer can sign. Each defect found is kept here as the simulated node
that showed it (samples/families.py), judged as the families judge them (`failures`), with what the text says."""

import re
from pathlib import Path

import polars as pl

from samples.families import Incident, Shape, analyzed, build, failures


def test_a_collscan_queueing_behind_its_own_runs_is_the_cause_not_its_victim():
    # Its runs fill the read pool and the rest queue: 2/3 of each run queued for a ticket, most of its working time reading
    # the collection. Both were counted as waits, so 100 % of the slow-operation time was "cause not determined".
    scenario, result = analyzed(
        build, Shape(layout="8.0", seed=3), Incident("ticket_exhaustion", 120, 10.0, "read", 0.5, culprit=True, own_queue=True)
    )
    assert failures(scenario, result) == []
    tickets = [f for f in result.problems if f.kind == "ticket_exhaustion"]
    assert "No collection scan carried a real share" not in tickets[0].explanation and "Cause: COLLSCAN" in tickets[0].explanation
    assert [i.root_cause.kind for i in result.incidents] == ["operation"]


def test_victims_of_a_checkpoint_stall_are_named_as_waiting_not_as_what_worked_there():
    scenario, result = analyzed(
        build, Shape(layout="8.0", seed=5), Incident("checkpoint_stall", 600, 10.0, "repeated", 0.5, victims=True)
    )
    assert failures(scenario, result) == []
    told = [f for f in result.problems if "shop.settings" in f.explanation]
    assert told and all("spent most of their time waiting (victims of the window, not its cause)" in f.explanation for f in told)


def test_long_reads_credited_at_completion_neither_hide_nor_stretch_a_checkpoint_stall():
    # Aggregates of minutes, each credited in the one second it ended, became read "spikes": those that fell in a checkpoint
    # joined the write stalls' episode, stretched it by five minutes and diluted its test with the reads that did not.
    scenario, result = analyzed(
        build, Shape(baseline_ms=0.05), Incident("checkpoint_stall", 300, 3.4, "repeated", 0.0, long_reads=True)
    )
    assert failures(scenario, result) == []
    [stall] = [f for f in result.problems if f.kind == "checkpoint_stall"]
    assert stall.title.startswith("write latency spiked")


def test_a_long_operation_credited_at_completion_is_no_stall_but_many_released_at_once_are():
    import datetime as dt

    import polars as pl

    from analysis.series.completions import credited, stalls
    from analysis.series.spikes import Spike

    t0 = dt.datetime(2024, 5, 6, 9, 0, tzinfo=dt.timezone.utc)
    at = [t0 + dt.timedelta(seconds=s) for s in range(3)]
    # 2,000 reads in the second ending at 2 s, one of them a 300 s aggregate: 0.3 ms each otherwise, 150 ms on average.
    series = pl.DataFrame(
        {
            "start": at,
            "interval_s": [1.0] * 3,
            "reads_per_s": [2000.0] * 3,
            "reads_latency_ms": [0.3, 0.3, (300_000 + 1999 * 0.3) / 2000],
        }
    )
    spike = Spike("reads", at[1], at[2], 150.0, 0.3, at[2])

    def log(*durations_ms):
        end = at[2] - dt.timedelta(milliseconds=100)
        return pl.DataFrame(
            {
                "ts": [end] * len(durations_ms),
                "started": [end - dt.timedelta(milliseconds=d) for d in durations_ms],
                "duration_ms": list(durations_ms),
                "command": ["aggregate"] * len(durations_ms),
                "op_type": ["command"] * len(durations_ms),
                "write_statement": [False] * len(durations_ms),
            }
        )

    samples = series.slice(2, 1)
    assert credited(spike, samples, log(300_000))
    assert not credited(spike, samples, log(*[30_000] * 10))  # a stall releasing many operations at once
    assert not credited(spike, samples, log(100_000))  # the rest of the interval was slow too: 100 ms of the 150 explained
    assert stalls([spike], series, log(100_000)) == [spike] and stalls([spike], series, log(300_000)) == []


def _analyzed(make, *args):
    import tempfile
    import warnings

    import analysis

    with tempfile.TemporaryDirectory() as folder:
        made = make(*args, Path(folder))
        scenario = made[0] if isinstance(made, tuple) else made
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return made, analysis.analyze(scenario.ftdc, scenario.log)


def test_a_node_restarting_in_a_loop_is_one_incident_not_a_finding_per_restart():
    from samples import wild

    _, result = _analyzed(wild.restart_loop, Shape(seed=11))
    [incident] = result.incidents
    [loop] = [f for f in result.findings if f.kind == "restart_loop"]
    assert loop.id in incident.finding_ids and loop.severity == "warning" and loop.evidence["restarts"] >= 20
    assert 150 <= loop.evidence["median_life_s"] <= 300  # the simulated processes lived 150-300 s
    assert not [f for f in result.findings if f.kind in ("restart", "ftdc_gap") and loop.start <= f.start <= loop.end]


def test_the_work_coming_back_after_a_restart_is_no_dip_against_the_process_before():
    # Issue 39 §1: a dip measured against a baseline from before a restart is not an incident. The new process's clients
    # came back over two minutes to a cold cache: that was a "throughput at about 30 % of normal" warning whose root cause
    # was the restart, against the old process's work. The restart is told once, as the context it is.
    from samples import wild

    (_, restarted_at), result = _analyzed(wild.restart_dip, Shape(seed=11))
    assert result.problems == [] and result.incidents == []
    assert [f.end for f in result.findings if f.kind == "restart"] == [restarted_at]


def test_clients_closing_their_leaked_connections_are_no_throughput_dip():
    # 2,008 → 183 connections, 399 → 25 operations/s, nothing queued or slower, one sample missed: the clients left.
    from samples import wild

    _, result = _analyzed(wild.clients_leave, Shape(seed=11))
    assert result.problems == [] and result.incidents == []


def test_a_windows_node_is_said_to_record_its_disks_in_a_layout_not_read():
    from samples import wild

    _, result = _analyzed(wild.windows_node, Shape(seed=11))
    [disks] = [f for f in result.findings if f.kind == "disk_saturation"]
    assert disks.severity == "info" and "did not record" not in disks.title
    assert "PhysicalDisk" in disks.title and disks.evidence["devices"] == ["0 C:"] and "busy" in disks.title
    assert result.problems == []


def test_a_windows_nodes_physicaldisk_counters_are_read_as_the_same_disk_on_linux_would_be(tmp_path):
    # They were not read at all: the disk panels said "Not recorded by this node" of disks the node had recorded.
    import dataclasses
    import warnings

    import pytest

    import analysis
    from analysis.outputs.system import view
    from samples.families import T0, Baseline
    from samples.simulate import write_ftdc

    shape, analyses = Shape(seed=11), {}
    for windows in (False, True):
        write_ftdc(
            tmp_path / str(windows), dataclasses.replace(shape.config(), windows=windows), T0, 900, Baseline(shape), period=1
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analyses[windows] = analysis.analyze(tmp_path / str(windows))
    linux, windows = analyses[False].series, analyses[True].series
    for column in ("disk_await_ms", "disk_iops", "disk_mb_per_s"):
        assert windows[f"{column}.0 C:"].to_list() == pytest.approx(linux[f"{column}.sda"].to_list(), nan_ok=True)
    assert windows["disk_iops.0 C:"].max() > 0 and windows["disk_queue.0 C:"].min() >= 0
    assert [m for m in view(analyses[True], {}).missing if "disk" in m] == [
        "disk busy, %"
    ]  # the one disk figure Windows does not record
    # Its CPU is Processor counters (its processor queue among them), a layout not read: said so, not that the node did
    # not record a CPU or runnable threads.
    cpu = ["CPU, % of all cores", "runnable threads per core"]
    assert view(analyses[True], {}).unread == cpu and not set(cpu) & set(view(analyses[True], {}).missing)
    # Nor is the CPU said to have passed a check it could not take: an info finding says it was not checked, and why.
    [cpu_check] = [f for f in analyses[True].findings if f.kind == "cpu_saturation"]
    assert cpu_check.severity == "info" and cpu_check.subject == "CPU saturation not checked"
    assert "Processor performance counters" in cpu_check.statement and "did not record" not in cpu_check.statement
    assert view(analyses[False], {}).unread == []


def test_an_index_build_that_filled_the_cache_is_its_root_cause():
    # Only a COLLSCAN could be an operation root cause: the build's scan filling the cache came out as a raised eviction trigger.
    scenario, result = analyzed(
        build,
        Shape(layout="8.0", eviction_trigger=86, seed=1780),
        Incident("cache_pressure", 600, 3.7, "fill", 0.2, index_build=True),
    )
    assert failures(scenario, result) == []
    [incident] = result.incidents
    cause = incident.root_cause
    assert cause.kind == "operation" and cause.evidence["mechanism"] == "index_build" and cause.evidence["ns"] == scenario.root[1]
    assert cause.evidence["index"] == '{"customer": 1, "ts": -1}' and cause.evidence["index_builds_running_peak"] == 1
    assert "eviction_trigger" in " ".join(c.summary for c in incident.candidates)  # the setting is still considered, after it


def test_an_idle_transaction_pinning_history_is_the_root_cause_of_dirty_cache_under_an_unchanged_load():
    scenario, result = analyzed(
        build, Shape(layout="7.0", seed=8), Incident("cache_pressure", 600, 5.0, "dirty", 0.5, pinned=True)
    )
    assert failures(scenario, result) == []
    [incident] = result.incidents
    cause = incident.root_cause
    assert cause.evidence["mechanism"] == "pinned_history" and cause.evidence["transactions_inactive"] == 1
    assert cause.evidence["pinned_txn_ids_peak"] >= 10 * max(cause.evidence["pinned_txn_ids_before"], 1)
    assert cause.evidence["history_store_growth_mb"] > 0


def test_a_transaction_the_reaper_aborted_is_told_with_its_abort_and_the_nodes_raised_lifetime_kept_with_what_it_trades():
    # The reaper's abort lines and the node's transactionLifetimeLimitSeconds were not read: the advice said "60 s by default"
    # on a node that let transactions live 635 s, and nothing told the reaper ended the pin.
    scenario, result = analyzed(
        build, Shape(layout="8.0", seed=8), Incident("cache_pressure", 600, 5.0, "dirty", 0.5, pinned=True, pinned_by="reaped")
    )
    assert failures(scenario, result) == []
    [incident] = result.incidents
    cause = incident.root_cause
    assert (
        cause.evidence["reaper_aborts"] == 1 and cause.evidence["transaction_lifetime_limit_s"] == scenario.pinned.limit_s == 635
    )
    assert "setParameter.transactionLifetimeLimitSeconds=635" in cause.evidence["transaction_lifetime_limit_source"]
    assert "reaper aborted 1 transaction for outliving transactionLifetimeLimitSeconds (635 s" in cause.summary
    # Issue 39: a lifetime raised on purpose (for long batch transactions) is never lowered: each would be aborted. The
    # fix for a client that leaves transactions open is in the client; the raised limit's trade is told.
    assert not [r for r in cause.recommendations if r.setting == "transaction_lifetime_limit"]
    assert "in the application" in cause.recommendations[0].what
    assert (
        "raised from mongod's 60 s: long transactions can finish, for an open or abandoned one pinning history" in cause.summary
    )


def test_history_pinned_without_a_transaction_open_is_no_reason_to_shorten_transactions():
    scenario, result = analyzed(
        build, Shape(layout="6.0", seed=8), Incident("cache_pressure", 300, 5.0, "dirty", 0.5, pinned=True, pinned_by="cursor")
    )
    assert failures(scenario, result) == []
    cause = result.incidents[0].root_cause
    assert cause.evidence["holder"] == "not a transaction" and "does not bound" in cause.summary
    assert not [r for r in cause.recommendations if r.setting]


def test_a_small_cache_is_no_root_cause_of_checkpoint_stalls_under_a_steady_load():
    # "A small cache: 1.0 GB against 31 GB of RAM" came first, advising more cache: the dirty data a checkpoint writes is a
    # share of the cache, so more cache lengthens checkpoints. The steady family now asks for the load (or the interval).
    scenario, result = analyzed(
        build,
        Shape(layout="6.0", cache_gb=1.0, baseline_ms=0.98, tz_minutes=765, eviction_trigger=92, dirty_trigger=18, seed=557),
        Incident("checkpoint_stall", 745, 11.2, "long", 0.26, steady=True),
    )
    assert failures(scenario, result) == []
    [incident] = result.incidents
    assert incident.root_cause.kind == "workload" and incident.root_cause.evidence["writes_changed"] is False
    assert not [c for c in incident.candidates if c.evidence.get("setting") == "cache_size"]


def test_eight_zero_ticket_parameters_of_zero_are_no_pool_fixed_at_zero():
    # 8.0 records storageEngineConcurrent*Transactions: 0 when the node sizes its pools: "Read tickets fixed at 0 (default 128)" was the root cause.
    scenario, result = analyzed(
        build, Shape(layout="8.0", tickets=0, seed=4), Incident("ticket_exhaustion", 120, 10.0, "write", 0.5)
    )
    assert failures(scenario, result) == []
    assert (
        result.thresholds.value("read_tickets") is None
        and "sized by the node" in result.thresholds.current("read_tickets").source
    )
    [incident] = result.incidents
    assert not [r for r in incident.recommendations if r.setting in ("read_tickets", "write_tickets") and r.current.value == 0]
    assert any(r.setting == "write_tickets" and "probing sized it down" in r.why and r.caveat for r in incident.recommendations)


def test_a_steady_write_load_is_named_and_not_called_the_change():
    # "Write load (800 writes/s) outran checkpoints" blamed a load that had not changed and said whose it was nowhere.
    scenario, result = analyzed(build, Shape(seed=4), Incident("checkpoint_stall", 600, 10.0, "repeated", 0.5, steady=True))
    assert failures(scenario, result) == []
    [incident] = result.incidents
    cause = incident.root_cause
    assert cause.kind == "workload" and cause.evidence["writes_changed"] is False
    assert (
        list(cause.evidence["operations_per_s"])[:2] == ["query", "insert"]
        and cause.evidence["carried_by"][0]["app"] == "orders-service"
    )
    assert incident.title.startswith("Checkpoints up to 10 s (usually 1.9 s) under an unchanged write load")
    # Said as what its numbers show (dirty data written out too slowly under it), never "the workload" as if it rose.
    assert "under a steady write load" in cause.summary and "the load is not what changed" not in cause.summary
    # Load in what users count (issue 18 §4): each counter in its unit, documents beside operations, and "in all" the
    # requests finished, not opcounters' sum of queries, getMore batches and documents inserted ("insert 400/s").
    assert re.search(r"[\d,]+ queries/s", cause.summary) and re.search(
        r"documents [\d,]+ returned/s, [\d,]+ inserted/s", cause.summary
    )
    assert (
        not re.search(r"\b(?:insert|query|getmore) [\d,]+/s", cause.summary) and cause.evidence["documents_per_s"]["inserted"] > 0
    )
    during = result.series.filter(pl.col("start").is_between(incident.start, incident.end))
    finished = during.select(pl.sum_horizontal("reads_per_s", "writes_per_s", "commands_per_s").mean()).item()
    assert cause.evidence["operations_per_s_all"] == round(finished) < round(during["ops_per_s"].mean())


def _requests_and_documents(requests: list[float], documents: list[float], queued: list[int]):
    """The derived series of a node finishing `requests` insert batches a second holding `documents` documents (opcounters.insert
    counts each document, opLatencies.writes.ops each batch), with readers queued."""
    import itertools

    from tests.test_analysis_units import SS, series_of

    zeros = [0] * len(requests)
    return series_of(
        {
            SS + "opLatencies.writes.ops": list(itertools.accumulate(requests)),
            SS + "opLatencies.reads.ops": zeros,
            SS + "opLatencies.commands.ops": zeros,
            SS + "opcounters.insert": list(itertools.accumulate(documents)),
            **{SS + f"opcounters.{op}": zeros for op in ("query", "update", "delete", "getmore", "command")},
            SS + "metrics.document.inserted": list(itertools.accumulate(documents)),
            **{SS + f"metrics.document.{op}": zeros for op in ("returned", "updated", "deleted")},
            SS + "globalLock.currentQueue.readers": queued,
        },
        range(len(requests)),
    )


def test_a_throughput_dip_is_judged_on_the_requests_finished_with_documents_beside_them():
    # opcounters count an insert batch's documents one by one (mongod's gotInserts(batch.size())): a client sending smaller
    # batches made a "dip" in opcounters' sum while the node finished as many requests as ever (issue 18 §4, load in what
    # users count). The dip is judged on the requests finished, and says the documents beside them.
    from analysis.findings.detectors import throughput_dip
    from tests.test_analysis_units import run_detector

    calm, low, after = 1200, 120, 300
    queued = [0] * calm + [20] * low + [0] * after
    smaller_batches = _requests_and_documents(
        [200.0] * (calm + low + after), [2000.0] * calm + [400.0] * low + [2000.0] * after, queued
    )
    assert run_detector(throughput_dip.detect, smaller_batches) == []
    fewer_requests = _requests_and_documents(
        [200.0] * calm + [40.0] * low + [200.0] * after, [2000.0] * (calm + low + after), queued
    )
    [dip] = run_detector(throughput_dip.detect, fewer_requests)
    assert dip.title.startswith("Throughput fell to 20 % of normal for 2 min"), dip.title
    assert (
        dip.evidence["documents_per_s"] == {"episode": 2000, "before": 2000}
        and "Documents: 2,000/s against 2,000/s before." in dip.explanation
    )


def test_a_cache_at_its_trigger_all_along_is_a_cache_too_small_for_the_working_set():
    scenario, result = analyzed(
        build, Shape(eviction_trigger=90, seed=6), Incident("cache_pressure", 300, 5.0, "fill", 0.5, at_limits=True)
    )
    assert failures(scenario, result) == []
    [incident] = result.incidents
    cause = incident.root_cause
    assert (
        cause.kind == "resource"
        and cause.evidence["mechanism"] == "cache_too_small"
        and cause.evidence["share_near_trigger"] >= 0.8
    )
    assert cause.evidence["read_mb_per_s"] >= 1.5 * cause.evidence["read_mb_per_s_before"]
    assert "eviction_trigger set to 90 % (default 95 %)" in " ".join(
        c.summary for c in incident.candidates
    )  # considered, after it


def test_a_long_shallow_dip_is_told_as_its_episode_then_its_worst_part():
    # Half the work for 6 minutes, its worst 10 s at 45 %: the rolling baseline followed the depression down, so the
    # finding was "fell to 45 % of normal for 10 s" while the plot showed half the throughput for 6 minutes (issue 18 §4).
    import itertools

    from analysis.findings.detectors import throughput_dip
    from tests.test_analysis_units import SS, T0, run_detector, series_of

    calm, low = 1200, 360  # seconds: 20 minutes at 2,000 operations/s, then 6 minutes at about 52 % of it
    rates = [2000.0] * calm + [1040.0 + 40 * (s % 3 - 1) for s in range(low)] + [2000.0] * 300
    rates[calm + 120 : calm + 130] = [900.0] * 10
    queued = [0] * calm + [20] * low + [0] * 300
    seconds = range(len(rates))
    finished = {
        SS + f"opLatencies.{op}.ops": [0] * len(rates) for op in ("writes", "commands")
    }  # the queries finished are the requests
    found = run_detector(
        throughput_dip.detect,
        series_of(
            {
                **finished,
                SS + "opLatencies.reads.ops": list(itertools.accumulate(rates)),
                SS + "globalLock.currentQueue.readers": queued,
            },
            seconds,
        ),
    )
    [dip] = found
    assert abs((dip.start - T0).total_seconds() - calm) <= 5 and abs((dip.end - T0).total_seconds() - (calm + low)) <= 5
    assert dip.title.startswith("Throughput at about 52 % of normal for 6 min, at worst 45 % for 10 s"), dip.title
    episode = dip.evidence["episode"]
    assert (episode["start"], episode["end"]) == (dip.start, dip.end) and episode["worst"]["ops_per_s_min"] == 900
    assert abs((episode["worst"]["end"] - episode["worst"]["start"]).total_seconds() - 10) <= 5


def test_a_burst_that_ends_is_no_dip_even_with_the_next_burst_queueing_at_its_edge():
    # A quiet node (50 requests/s) took 5-minute bursts of 1,000/s with writers queued. After each, the 10-minute median
    # straddled the burst, so the return to quiet was "Throughput fell to 5 % of normal for 15 min | 30 operations queued":
    # the queue quoted was the next burst's, in the episode's last bucket, where the work was already back (the bench's
    # node showed it). What the server shows counts only from the samples whose own rate was low.
    from analysis.findings.detectors import throughput_dip
    from tests.test_analysis_units import run_detector

    quiet, burst, between = 600, 300, 900
    shape = [(quiet, 50.0, 0), (burst, 1000.0, 30), (between, 50.0, 0), (burst, 1000.0, 30), (quiet, 50.0, 0)]
    requests = [rate for length, rate, _ in shape for _ in range(length)]
    queued = [q for length, _, q in shape for _ in range(length)]
    assert run_detector(throughput_dip.detect, _requests_and_documents(requests, requests, queued)) == []
    # The same shape with writers still queued while the work stays down is a dip, told from the burst's level.
    stalled = [q for length, _, q in shape[:2] for _ in range(length)] + [30] * between + queued[quiet + burst + between :]
    [dip] = run_detector(throughput_dip.detect, _requests_and_documents(requests, requests, stalled))
    assert dip.statement == "30 readers queued" and dip.evidence["baseline"]["finished_per_s"] >= 500
