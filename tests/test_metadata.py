"""Type-0 metadata, node identity, and the 8.0 type-2 delta replay."""

import datetime as dt

import bson
import polars as pl

import ftdc

UTC = dt.timezone.utc
T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def envelope(doc_type, seconds, doc, count=None):
    fields = {"_id": T0 + dt.timedelta(seconds=seconds), "type": doc_type}
    if count is not None:
        fields["count"] = count
    fields["doc"] = doc
    return bson.encode(fields)


def section(seconds, **values):
    t = T0 + dt.timedelta(seconds=seconds)
    return {"start": t, **values, "end": t}


def periodic(seconds, count, **sections):
    t = T0 + dt.timedelta(seconds=seconds)
    return envelope(2, seconds, {"start": t, **sections, "end": t}, count)


def test_node_identity_from_samples(ftdc_samples):
    node = ftdc.read_metadata(ftdc_samples / "mongod-4.2.1" / "diagnostic.data").node
    assert (node.host, node.port, node.version, node.replica_set) == ("M-C02F13T4MD6M.sanmiguel.local", 27017, "4.2.1", "rs0")
    assert node.address == "M-C02F13T4MD6M.sanmiguel.local:27017"
    meta = ftdc.read_metadata(ftdc_samples / "mongod-7.0" / "diagnostic.data")
    assert [d.doc["buildInfo"]["version"] for d in meta.documents] == ["7.0.0-rc6", "7.0.0-rc6"]
    assert meta.node.storage_engine == "wiredTiger" and meta.node.cpus == 4
    assert "ulimits" in meta.documents[0].doc


def test_type2_deltas_replay_onto_the_last_full_snapshot(tmp_path):
    path = tmp_path / "metrics.2025-03-01T12-00-00Z-00000"
    path.write_bytes(
        periodic(0, 0, getParameter=section(0, a=1, b="x"), getClusterParameter=section(0, c={"v": 1}))
        + periodic(300, 1, getParameter=section(300, a=2))
        + periodic(600, 2, getClusterParameter=section(600, c={"v": 2}))
        + periodic(900, 0, getParameter=section(900, a=9, z=True))
    )
    params = ftdc.read_metadata(path).parameters
    value = lambda s, name, p: params.filter(  # noqa: E731
        pl.col("start") == T0 + dt.timedelta(seconds=s), pl.col("section") == name, pl.col("parameter") == p
    )["value"].to_list()
    assert value(0, "getParameter", "a") == ["1"]
    assert value(300, "getParameter", "a") == ["2"] and value(300, "getParameter", "b") == ['"x"']
    assert value(300, "getClusterParameter", "c") == ['{"v": 1}']
    assert value(600, "getParameter", "a") == ["2"] and value(600, "getClusterParameter", "c") == ['{"v": 2}']
    # A new full document replaces the state: b and c are gone.
    assert value(900, "getParameter", "a") == ["9"] and value(900, "getParameter", "z") == ["true"]
    assert value(900, "getParameter", "b") == [] and value(900, "getClusterParameter", "c") == []
    assert set(params["parameter"]) == {"a", "b", "c", "z"}


def test_multi_service_metadata_is_found(tmp_path):
    doc = {
        "start": T0,
        "common": section(0, hostInfo={"system": {"hostname": "db1", "numCores": 8}}),
        "shard": section(
            0,
            buildInfo={"version": "8.0.4"},
            getCmdLineOpts={
                "parsed": {
                    "net": {"port": 27018},
                    "replication": {"replSetName": "sh0"},
                    "storage": {"wiredTiger": {"engineConfig": {"cacheSizeGB": 2.5}}},
                }
            },
        ),
        "end": T0,
    }
    path = tmp_path / "metrics.2025-03-01T12-00-00Z-00000"
    path.write_bytes(envelope(0, 0, doc))
    node = ftdc.read_metadata(path).node
    assert (node.address, node.version, node.replica_set, node.cache_size_gb, node.cpus) == ("db1:27018", "8.0.4", "sh0", 2.5, 8)


def test_damaged_metadata_document_is_a_warning(tmp_path, ftdc_samples):
    import warnings

    original = (ftdc_samples / "mongod-4.2.1" / "diagnostic.data" / "metrics.2021-07-13T16-03-51Z-00000").read_bytes()
    at = original.index(b"4.2.1\x00") - 4  # the length of the buildInfo.version string
    damaged = tmp_path / "metrics.2021-07-13T16-03-51Z-00000"
    damaged.write_bytes(original[:at] + (10**6).to_bytes(4, "little") + original[at + 4 :])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meta = ftdc.read_metadata(damaged)
    assert meta.documents == [] and meta.node == ftdc.NodeInfo()
    assert any("offset 0: metadata document skipped" in str(w.message) for w in caught)
    assert ftdc.read_ftdc(damaged, "serverStatus.uptime").height == 350


def test_deltas_before_any_full_snapshot_are_skipped(tmp_path):
    import pytest

    path = tmp_path / "metrics.2025-03-01T12-00-00Z-00000"
    path.write_bytes(periodic(0, 3, getParameter=section(0, a=5)) + periodic(300, 0, getParameter=section(300, a=1)))
    with pytest.warns(ftdc.FTDCWarning, match="precede any complete document"):
        params = ftdc.read_metadata(path).parameters
    assert params["value"].to_list() == ["1"]


def test_shard_port_default_follows_the_cluster_role(tmp_path):
    doc = {
        "start": T0,
        "getCmdLineOpts": {"parsed": {"sharding": {"clusterRole": "shardsvr"}, "storage": {"engine": "inMemory"}}},
        "end": T0,
    }
    path = tmp_path / "metrics.2025-03-01T12-00-00Z-00000"
    path.write_bytes(envelope(0, 0, doc))
    node = ftdc.read_metadata(path).node
    assert (node.port, node.storage_engine) == (27018, "inMemory")
