"""Effective thresholds: the node's own configuration first, with where each value came from."""

import datetime as dt
import json

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from analysis.series import wtconfig
from analysis.series.thresholds import effective_thresholds
from ftdc.metadata import Metadata, MetadataDocument

UTC = dt.timezone.utc
BOOT = dt.datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def metadata(*docs: tuple[dt.datetime, dict], parameters: list[tuple[dt.datetime, str, object]] = ()) -> Metadata:
    documents = [MetadataDocument("metrics.x", 0, time, {"getCmdLineOpts": {"parsed": parsed}}) for time, parsed in docs]
    frame = pl.DataFrame(
        [(t, "getParameter", name, json.dumps(value)) for t, name, value in parameters],
        schema={"start": pl.Datetime("ms", "UTC"), "section": pl.String, "parameter": pl.String, "value": pl.String},
        orient="row",
    )
    return Metadata(documents, frame)


def test_wt_config_nesting_lists_and_last_value_wins():
    parsed = wtconfig.parse(
        "create,cache_size=8G,eviction=(threads_min=4,threads_max=8),verbose=[a,b],eviction_trigger=90,eviction_trigger=97"
    )
    assert parsed == {
        "create": "true",
        "cache_size": "8G",
        "eviction.threads_min": "4",
        "eviction.threads_max": "8",
        "verbose": "[a,b]",
        "eviction_trigger": "97",
    }
    assert wtconfig.size_bytes("8192M") == 8 << 30 and wtconfig.size_bytes("1GB") == 1 << 30 and wtconfig.size_bytes("x") is None


@given(
    st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), max_size=8)
)
def test_wt_config_round_trip(settings):
    text = ",".join(f"{k}={v}" for k, v in settings.items())
    assert wtconfig.parse(text) == settings


def test_defaults_when_nothing_is_configured():
    t = effective_thresholds(metadata())
    assert t.value("eviction_trigger") == 95 and t.value("eviction_dirty_trigger") == 20
    # 4.4+: the updates trigger defaults to half the dirty trigger.
    assert t.value("eviction_updates_trigger") == 10 and "/ 2" in t.source("eviction_updates_trigger")
    assert t.value("checkpoint_interval") == 60 and t.source("eviction_trigger").startswith("WiredTiger default")


def test_config_string_and_runtime_config_from_the_command_line():
    parsed = {
        "storage": {
            "syncPeriodSecs": 30,
            "wiredTiger": {"engineConfig": {"configString": "eviction_trigger=97,eviction_dirty_trigger=25", "cacheSizeGB": 4}},
        },
        "setParameter": {"wiredTigerEngineRuntimeConfig": "eviction=(threads_max=8)"},
    }
    t = effective_thresholds(metadata((BOOT, parsed)))
    assert t.value("eviction_trigger") == 97 and "configString" in t.source("eviction_trigger")
    assert t.value("eviction_dirty_trigger") == 25
    assert t.value("eviction_updates_trigger") == 12.5  # half the configured dirty trigger
    assert t.value("eviction_threads_max") == 8 and "wiredTigerEngineRuntimeConfig" in t.source("eviction_threads_max")
    assert t.value("cache_size") == 4 * 2**30 and t.value("checkpoint_interval") == 30


def test_log_open_string_and_a_rotated_file_of_the_same_process():
    """A rotated file's metadata (a day later, same process) does not reset the open string's values."""
    later = BOOT + dt.timedelta(days=1)
    t = effective_thresholds(
        metadata((later, {})), [(BOOT, "create,cache_size=1G,eviction_dirty_trigger=30", "mongod.log:3")], [BOOT]
    )
    assert (
        t.value("eviction_dirty_trigger") == 30
        and t.source("eviction_dirty_trigger") == "eviction_dirty_trigger=30, from mongod.log:3"
    )
    assert len(t.timeline["eviction_dirty_trigger"]) == 1


def test_a_restart_drops_the_previous_configuration():
    restart = BOOT + dt.timedelta(hours=5)
    t = effective_thresholds(
        metadata((BOOT, {"storage": {"wiredTiger": {"engineConfig": {"configString": "eviction_trigger=97"}}}}), (restart, {})),
        starts=[BOOT, restart],
    )
    steps = t.timeline["eviction_trigger"]
    assert [(s.since, s.value) for s in steps] == [(None, 97), (restart, 95)]
    times = pl.Series(
        [BOOT, restart - dt.timedelta(seconds=1), restart + dt.timedelta(seconds=1)], dtype=pl.Datetime("ms", "UTC")
    )
    assert t.at("eviction_trigger", times).to_list() == [97, 97, 95]


def test_80_runtime_changes_from_periodic_get_parameter():
    changed = BOOT + dt.timedelta(hours=2)
    t = effective_thresholds(
        metadata(
            (BOOT, {}),
            parameters=[
                (BOOT, "wiredTigerEngineRuntimeConfig", ""),
                (BOOT, "syncdelay", 60),
                (changed, "wiredTigerEngineRuntimeConfig", "eviction_dirty_trigger=15"),
                (changed, "syncdelay", 20),
            ],
        ),
        starts=[BOOT],
    )
    assert t.value("eviction_dirty_trigger") == 15 and "getParameter" in t.source("eviction_dirty_trigger")
    assert [s.value for s in t.timeline["checkpoint_interval"]] == [60, 20]
    assert t.timeline["eviction_dirty_trigger"][-1].since == changed


def test_thresholds_report_value_and_source():
    out = effective_thresholds(metadata()).to_dict()
    assert out["eviction_trigger"]["value"] == 95 and out["eviction_trigger"]["unit"] == "%"
    assert out["eviction_trigger"]["changes"][0]["since"] is None and out["eviction_trigger"]["source"]
