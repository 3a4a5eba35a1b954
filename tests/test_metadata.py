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
        "shard": section(0, buildInfo={"version": "8.0.4"}, getCmdLineOpts={"parsed": {"net": {"port": 27018}, "replication": {"replSetName": "sh0"}, "storage": {"wiredTiger": {"engineConfig": {"cacheSizeGB": 2.5}}}}}),
        "end": T0,
    }
    path = tmp_path / "metrics.2025-03-01T12-00-00Z-00000"
    path.write_bytes(envelope(0, 0, doc))
    node = ftdc.read_metadata(path).node
    assert (node.address, node.version, node.replica_set, node.cache_size_gb, node.cpus) == ("db1:27018", "8.0.4", "sh0", 2.5, 8)
