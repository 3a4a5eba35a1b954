"""The configuration audit's checks a support engineer runs first: the oplog's window, the default read and write
concerns, featureCompatibilityVersion, the replica set's members, zone_reclaim_mode, the connection limit against the
connections seen, TLS; each with the node's value and the recommended one, and "not recorded" where the files do not
hold it (rendered apart from an item that passed)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings
from pathlib import Path

import polars as pl
import pytest

from analysis.workbench import audit
from analysis.workbench.sampled import OplogGrowth, Sampled
from tests.crafted_nodes import write_node

UTC = dt.timezone.utc
SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "samples" / "ftdc"
GB = 2**30


def _facts(**kw) -> audit.Facts:
    base = audit.Facts(None, None, None, None, None, None, dt.datetime(2025, 1, 1, tzinfo=UTC), dt.date(2026, 11, 29))
    return dataclasses.replace(base, **kw)


def _item(key: str, **kw) -> audit.AuditItem:
    return {i.key: i for i in audit.audit(_facts(**kw))}[key]


MEMBER = {"replication": {"replSetName": "rs0"}, "net": {"bindIp": "10.0.0.5"}}
STANDALONE = {"net": {"bindIp": "10.0.0.5"}}


# The oplog.


def test_a_measured_window_under_the_recommended_hours_is_a_warning_once_the_oplog_is_full():
    item = _item(
        "oplog",
        cmdline=MEMBER,
        sampled=Sampled(oplog_max_bytes=1 * GB, oplog_bytes=1 * GB, oplog_window_h=6.5),
    )
    assert item.severity == "warning" and "window 6.5 h" in item.has and "replSetResizeOplog" in item.change
    assert item.recommended == "at least 24 hours of window"
    good = _item("oplog", cmdline=MEMBER, sampled=Sampled(oplog_max_bytes=1 * GB, oplog_bytes=1 * GB, oplog_window_h=30.0))
    assert good.severity == "info" and "window 30.0 h" in good.has and not good.change


def test_a_short_window_of_an_oplog_not_yet_full_is_its_age_not_a_warning():
    item = _item("oplog", cmdline=MEMBER, sampled=Sampled(oplog_max_bytes=10 * GB, oplog_bytes=1 * GB, oplog_window_h=2.0))
    assert item.severity == "info" and "not full yet" in item.has


def test_the_window_is_estimated_from_the_oplogs_growth_only_while_it_grows():
    # 1 GB an hour into a 10 GB maximum: about 10 hours once full.
    growing = Sampled(oplog_max_bytes=10 * GB, oplog_bytes=3 * GB, oplog_growth=OplogGrowth(1 * GB, 3 * GB, 7200, True))
    item = _item("oplog", cmdline=MEMBER, sampled=growing)
    assert item.severity == "warning" and "window about 10 h" in item.has and "1.0 GB an hour" in item.has
    # A slow-growing one: thousands grouped, as every count the report gives.
    slow = Sampled(
        oplog_max_bytes=100 * GB, oplog_bytes=3 * GB, oplog_growth=OplogGrowth(3 * GB, 3 * GB + 14_400_000, 7200, True)
    )
    assert "window about 14,913 h (621 days)" in _item("oplog", cmdline=MEMBER, sampled=slow).has
    # A full oplog's size stays flat whatever the writes: no window is claimed.
    full = Sampled(oplog_max_bytes=10 * GB, oplog_bytes=10 * GB, oplog_growth=OplogGrowth(10 * GB, 10 * GB, 7200, True))
    flat = _item("oplog", cmdline=MEMBER, sampled=full)
    assert flat.severity == "info" and "window not recorded" in flat.has and "full" in flat.has
    # Truncated between samples: the growth is not the write rate.
    cut = Sampled(oplog_max_bytes=10 * GB, oplog_bytes=3 * GB, oplog_growth=OplogGrowth(1 * GB, 3 * GB, 7200, False))
    assert "window not recorded" in _item("oplog", cmdline=MEMBER, sampled=cut).has


def test_a_retention_set_on_purpose_covers_the_window():
    member = MEMBER | {"storage": {"oplogMinRetentionHours": 48}}
    item = _item("oplog", cmdline=member, sampled=Sampled(oplog_max_bytes=1 * GB, oplog_bytes=1 * GB, oplog_window_h=6.0))
    assert item.severity == "info" and "oplogMinRetentionHours 48" in item.has


def test_the_oplog_is_not_recorded_or_not_applicable():
    assert _item("oplog").source == audit.NOT_RECORDED and not _item("oplog").recorded
    standalone = _item("oplog", cmdline=STANDALONE)
    assert standalone.has.startswith("not applicable: a standalone") and not standalone.change


# Default read and write concerns, featureCompatibilityVersion (8.0's periodic metadata).


def _rw(w, source):
    return {
        ("getDefaultRWConcern", "defaultWriteConcern"): {"w": w, "wtimeout": 0},
        ("getDefaultRWConcern", "defaultReadConcern"): {"level": "local"},
        ("getDefaultRWConcern", "defaultWriteConcernSource"): source,
    }


def test_default_write_concern():
    implicit = _item("rw_concern", cmdline=MEMBER, parameters=_rw("majority", "implicit"))
    assert implicit.severity == "info" and "w: majority (implicit)" in implicit.has and "majority" in implicit.recommended
    set_low = _item("rw_concern", cmdline=MEMBER, parameters=_rw(1, "global"))
    # Set on purpose: reported with its trade-off, not reversed.
    assert set_low.severity == "warning" and "set on purpose" in set_low.has and set_low.change.startswith("keep it if")
    assert not _item("rw_concern", cmdline=MEMBER).recorded
    assert _item("rw_concern", cmdline=STANDALONE).has.startswith("not applicable")


@pytest.mark.parametrize(("fcv", "binary", "severity"), [("7.0", "8.0.4", "warning"), ("8.0", "8.0.4", "info")])
def test_feature_compatibility_against_the_binary(fcv, binary, severity):
    item = _item(
        "fcv",
        build={"version": binary},
        parameters={("getParameter", "featureCompatibilityVersion"): {"version": fcv}},
    )
    assert item.severity == severity and f"FCV {fcv} on a {binary}" in item.has and item.recommended.startswith("8.0")


def test_feature_compatibility_not_recorded_before_eight():
    item = _item("fcv", build={"version": "7.0.12"})
    assert not item.recorded and item.recommended.startswith("7.0")


def test_periodic_metadata_is_read_at_its_last_value():
    t0, t1 = dt.datetime(2025, 1, 1, tzinfo=UTC), dt.datetime(2025, 1, 2, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "_id": [t0, t1],
            "section": ["getParameter", "getParameter"],
            "parameter": ["featureCompatibilityVersion", "featureCompatibilityVersion"],
            "value": ['{"version": "7.0"}', '{"version": "8.0"}'],
        },
        schema={"_id": pl.Datetime("ms", "UTC"), "section": pl.String, "parameter": pl.String, "value": pl.String},
    )
    f = audit.facts([], None, None, None, parameters=frame)
    assert f.parameters == {("getParameter", "featureCompatibilityVersion"): {"version": "8.0"}}


# The replica set.


def test_an_arbiter_in_a_three_member_set_is_a_warning():
    item = _item("replica_set", cmdline=MEMBER, sampled=Sampled(members=(1, 2, 7), majority_votes=2))
    assert item.severity == "warning" and "1 arbiter" in item.has and "arbiter" in item.change
    assert "priorities, hidden and delayed members not recorded" in item.has
    pss = _item("replica_set", cmdline=MEMBER, sampled=Sampled(members=(1, 2, 2)))
    assert pss.severity == "info" and "1 primary, 2 secondaries" in pss.has
    assert _item("replica_set", cmdline=MEMBER, sampled=Sampled(members=(1,))).severity == "warning"
    assert not _item("replica_set", cmdline=MEMBER).recorded
    assert _item("replica_set", cmdline=STANDALONE, sampled=Sampled()).has.startswith("not applicable")


# zone_reclaim_mode, connections, TLS.


def test_zone_reclaim_mode_from_the_start_up_warning_only():
    lines = pl.DataFrame({"msg": ["** WARNING: /proc/sys/vm/zone_reclaim_mode is 1"]})
    assert _item("zone_reclaim", startup=lines).severity == "warning"
    quiet = _item("zone_reclaim", startup=pl.DataFrame({"msg": ["other"]}))
    assert not quiet.recorded and "set vm.zone_reclaim_mode to 0" in quiet.has


def test_connections_near_the_limit_in_effect():
    at = dt.datetime(2025, 1, 1, 12, tzinfo=UTC)
    near = Sampled(connections_peak=900, connections_limit=1000, connections_peak_at=at)
    item = _item("max_connections", cmdline=STANDALONE, sampled=near)
    assert item.severity == "warning" and "peak 900 open at 2025-01-01 12:00:00 UTC of a limit of 1,000" in item.has
    assert "ulimit -n" in item.change and "1,000,000" in item.recommended
    # A limit set on purpose is kept, the clients' pools lowered.
    deliberate = _item("max_connections", cmdline={"net": {"maxIncomingConnections": 1000}}, sampled=near)
    assert deliberate.change.startswith("the limit was set on purpose")
    low = _item("max_connections", cmdline=STANDALONE, sampled=Sampled(connections_peak=10, connections_limit=1000))
    assert low.severity == "info"
    assert not _item("max_connections").recorded


@pytest.mark.parametrize(
    ("net", "severity", "said"),
    [
        ({"bindIp": "10.0.0.5", "tls": {"mode": "requireTLS"}}, "info", "net.tls.mode requireTLS"),
        ({"bindIp": "10.0.0.5", "ssl": {"mode": "requireSSL"}}, "info", "net.ssl.mode requireSSL"),
        ({"bindIp": "10.0.0.5", "tls": {"mode": "preferTLS"}}, "warning", "without TLS are accepted"),
        ({"bindIp": "10.0.0.5"}, "warning", "off (no net.tls.mode"),
        ({"bindIp": "127.0.0.1"}, "info", "bound to localhost only"),
    ],
)
def test_tls(net, severity, said):
    item = _item("tls", cmdline={"net": net})
    assert item.severity == severity and said in item.has and item.recommended == "requireTLS"


def test_tls_not_recorded():
    assert not _item("tls").recorded


# The version: end of life today and at the data's time, release candidates and patch builds.


def test_three_four_zero_is_past_its_end_of_life_today_as_a_warning():
    item = _item("end_of_life", build={"version": "3.4.0"}, last=dt.datetime(2019, 6, 1, tzinfo=UTC))
    assert item.severity == "warning" and "reached its end of life on 2020-01-31, before today" in item.has
    assert "still supported when the data was recorded (2019-06-01)" in item.has and "supported until" not in item.has


def test_a_patch_build_is_not_a_production_release():
    item = _item("release_kind", build={"version": "6.0.14-patch-65f0a1b2c3d4e5f6a7b8c9d0"})
    assert item.severity == "warning" and "development build" in item.has


# Rendering: not recorded is not passed.


def test_not_recorded_reads_apart_from_passed_in_html_and_markdown():
    from analysis.outputs.report import workbench_html

    items = audit.audit(_facts(cmdline={"net": {"bindIp": "127.0.0.1", "tls": {"mode": "requireTLS"}}}))
    page = workbench_html.audit(items)
    assert "<span class='badge unrecorded'>not recorded</span>oplog size and window" not in page  # a standalone's
    assert "<span class='badge unrecorded'>not recorded</span>default read and write concerns" not in page
    assert "<span class='badge unrecorded'>not recorded</span>featureCompatibilityVersion" in page
    assert "<span class='badge info'>info</span>TLS" in page and "<th>recommended</th>" in page


# A crafted node end to end, and the real samples.


def test_a_crafted_member_through_the_analysis(tmp_path):
    from analysis import analyze

    # Three members with an arbiter, as replSetGetStatus records them in every sample.
    path = write_node(
        tmp_path / "node",
        replica_set="rs0",
        seconds=120,
        extra={
            "replSetGetStatus": {"start": 0, "members": [{"state": 1}, {"state": 2}, {"state": 7}], "end": 0},
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = {i.key: i for i in analyze(path).audit}
    assert items["replica_set"].severity == "warning" and "1 arbiter" in items["replica_set"].has
    assert "peak 5 open" in items["max_connections"].has


def _analysed(path):
    from analysis import analyze

    if not path.exists():
        pytest.skip("real samples not present")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {i.key: i for i in analyze(path).audit}


def test_the_real_samples():
    old = _analysed(SAMPLES / "mongod-4.2.1" / "diagnostic.data")
    # A three-member set whose third member was down at the last sample; a 192 MB oplog (macOS's default) barely used.
    assert "3 members (2 secondaries, 1 down)" in old["replica_set"].has and "a majority is 2 votes" in old["replica_set"].has
    assert "of a 192 MB maximum" in old["oplog"].has and "estimated from" in old["oplog"].has
    assert "peak 17 open" in old["max_connections"].has and "limit of 204" in old["max_connections"].has
    assert "bound to localhost only" in old["tls"].has
    assert not old["fcv"].recorded and not old["rw_concern"].recorded
    seven = _analysed(SAMPLES / "mongod-7.0" / "diagnostic.data")
    assert seven["release_kind"].severity == "warning" and "7.0.0-rc6: a release candidate" in seven["release_kind"].has
    for key in ("oplog", "replica_set", "rw_concern"):
        assert seven[key].has.startswith("not applicable: a standalone"), key
    assert "limit of 819" in seven["max_connections"].has
    eight = _analysed(SAMPLES / "mongod-8.0-chunk" / "metric-2025-03-12_15-58-06.0_+00-00-00.bson")
    # A one-member set whose oplog (20.5 GB, past its 15.8 GB maximum) is full: no window is claimed.
    assert eight["replica_set"].severity == "warning" and "1 member (1 primary)" in eight["replica_set"].has
    assert "window not recorded" in eight["oplog"].has and "20.5 GB of a 15.8 GB maximum" in eight["oplog"].has
    assert not eight["tls"].recorded and not eight["end_of_life"].recorded


def test_every_item_says_the_recommended_value():
    for item in audit.audit(_facts(cmdline=MEMBER, build={"version": "8.0.4"})):
        assert item.recommended, item.key


@pytest.mark.parametrize("nested", [False, True], ids=["4.2-7.0 layout", "8.0 storageStats"])
def test_an_oplog_growing_in_a_crafted_node_gives_its_estimated_window(tmp_path, nested):
    # The collection's statistics moved under storageStats in 8.0: both layouts are read. 1 MB a second into a 1 GB
    # maximum: about 1,024 s, 0.3 h, once full.
    from analysis import analyze
    from ftdc.writer import FTDCWriter

    start = dt.datetime(2025, 3, 1, 9, tzinfo=UTC)
    meta = {
        "start": start,
        "buildInfo": {"version": "8.0.4" if nested else "4.2.1"},
        "getCmdLineOpts": {"parsed": {"replication": {"replSetName": "rs0"}, "net": {"bindIp": "10.0.0.5"}}},
        "hostInfo": {"system": {"hostname": "db1.example.net", "numCores": 4, "memSizeMB": 16384}, "os": {"name": "Ubuntu"}},
        "end": start,
    }
    with FTDCWriter(tmp_path / "node", metadata=meta, samples_per_chunk=60) as writer:
        for i in range(120):
            t = start + dt.timedelta(seconds=i)
            stats = {"size": 2**20 * (10 + i), "count": 100 * i, "maxSize": 2**30}
            oplog = {"start": t, **({"storageStats": stats} if nested else stats), "end": t}
            status = {"start": t, "uptime": 1000 + i, "connections": {"current": 5, "available": 995}, "end": t}
            writer.add_sample({"start": t, "serverStatus": status, "local.oplog.rs.stats": oplog, "end": t})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = {i.key: i for i in analyze(tmp_path / "node").audit}
    oplog = items["oplog"]
    assert oplog.severity == "warning" and "window about 0.3 h once full" in oplog.has and "3.5 GB an hour" in oplog.has
    assert "129 MB of a 1.0 GB maximum" in oplog.has
    assert "of a limit of 1,000 in effect" in items["max_connections"].has
