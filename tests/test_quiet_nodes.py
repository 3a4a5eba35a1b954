"""Issue 39 §1: quiet nodes stay quiet. A dip needs a load worth losing, a baseline of the same process and a reason that
could have held the work back; a planned stepdown is the role change's expected dip; connections climbing on a quiet
node are a client leaking them."""

import itertools

from analysis.findings.detectors import throughput_dip
from samples.families import Laptop, Leak, Shape
from tests.test_analysis_units import SS, run_detector, series_of


def _commands(rates: list[float], latencies_us: list[float], seconds=None):
    """A node whose requests are all commands: `rates` a second, each taking `latencies_us` on average."""
    seconds = list(seconds if seconds is not None else range(len(rates)))
    zeros = [0] * len(rates)
    return series_of(
        {
            SS + "opLatencies.reads.ops": zeros,
            SS + "opLatencies.writes.ops": zeros,
            SS + "opLatencies.commands.ops": list(itertools.accumulate(int(r) for r in rates)),
            SS + "opLatencies.commands.latency": list(itertools.accumulate(int(r * u) for r, u in zip(rates, latencies_us))),
        },
        seconds,
    )


def test_a_latency_too_short_to_hold_any_work_back_is_no_reason_for_a_dip():
    # A developer's test suite at 200 commands/s for 20 minutes, then the laptop idles at 12 a second whose commands take
    # 0.4 ms instead of 0.05: a spike by its own rule, and the dip's reason, "command latency 0 ms". At 0.4 ms one client
    # alone could send 2,500 a second: such a latency held no work back (Little's law), the clients stopped sending it.
    busy, idle = 1200, 1500
    rates = [200.0] * busy + [12.0] * idle
    assert run_detector(throughput_dip.detect, _commands(rates, [50.0] * busy + [400.0] * idle)) == []
    # The same fall with each command taking 50 ms: at 200 a second that holds ten clients' requests at once; a reason.
    [dip] = run_detector(throughput_dip.detect, _commands(rates, [50.0] * busy + [50_000.0] * idle))
    assert dip.severity == "warning" and dip.statement == "command latency 50 ms", dip.statement


def test_a_dip_is_not_measured_against_the_work_before_a_machine_slept():
    # 20 minutes at 300 commands/s, the laptop asleep for 5 minutes (no sample, the same process), then 20 a second: the
    # 10-minute baseline reached back across the gap to the work before it, "Throughput fell to 6.7 % of normal" with
    # "FTDC missed samples" as its reason.
    before, asleep, after = 1200, 300, 1200
    seconds = list(range(before)) + list(range(before + asleep, before + asleep + after))
    rates = [300.0] * before + [20.0] * after
    assert run_detector(throughput_dip.detect, _commands(rates, [100.0] * len(rates), seconds)) == []


def test_a_laptop_between_test_suites_raises_nothing():
    # Before: "Throughput fell to 2.0 % of normal for 43 min 45 s: command latency 0 ms" after each test suite, the idle
    # laptop's monitoring commands (0.3 ms, a handful a second) a "spike" against the suite's quick pings.
    from tests.test_families import stays_quiet_laptop

    stays_quiet_laptop(Shape(seed=1), Laptop())


def test_a_primary_stepped_down_on_purpose_is_told_as_the_role_change():
    # Before: the stepped-down primary's dip was a warning (its writes waiting while it changed role), and the primary
    # change during it a warning too, one incident whose cause was "not determined".
    from tests.test_families import stepped_down_quietly

    stepped_down_quietly(Shape(layout="8.0", seed=2))


def test_a_client_leaking_connections_on_a_quiet_node_is_said_and_named_a_warning_near_the_limit():
    from tests.test_families import told_as_a_leak

    told_as_a_leak(Shape(layout="6.0", seed=3), Leak(hours=1.0, leaked=1500, app="etl worker"))
    told_as_a_leak(Shape(layout="4.2", seed=4, period_s=5), Leak(hours=1.5, leaked=45_000, standalone=True))


def test_a_role_change_one_members_log_says_was_planned_stays_context_for_the_replica_set():
    # The member taking the primary back by priority logs why; the others' copies of the change do not. Merged, the
    # change kept the first copy's words, and during another node's problem it was a warning.
    import datetime as dt
    from types import SimpleNamespace

    from analysis.findings.detectors.replication import change_finding
    from analysis.findings.finding import Finding
    from analysis.nodes import cross_node_findings
    from ftdc.metadata import NodeInfo

    t0 = dt.datetime(2024, 5, 14, 9, 0, tzinfo=dt.timezone.utc)
    at = t0 + dt.timedelta(seconds=3)
    plain = change_finding("member 0", "member 1", "0", "1", t0, at)
    planned = change_finding("member 0", "member 1", "0", "1", t0, at, {"at": t0, "how": "a priority takeover"})
    problem = Finding("disk_saturation", "warning", t0, at, subject="Disk sda saturated", reasoning="busy")
    nodes = [
        SimpleNamespace(result=SimpleNamespace(node=NodeInfo(host=h, port=27017, replica_set="rs"), findings=found))
        for h, found in (("a", [plain, problem]), ("b", [planned]))
    ]
    [merged] = cross_node_findings(nodes, ["a:27017", "b:27017"], [[], []])
    assert merged.evidence["planned"]["how"] == "a priority takeover" and merged.severity == "info"
    assert "(a priority takeover)" in merged.title and "It happened during: a:27017: Disk sda saturated" in merged.explanation
