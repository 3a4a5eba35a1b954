"""Effective thresholds: the node's own configuration first, published defaults second.

Sources, in the order they apply (docs/metrics.md §3, §2, §4):
1. each start-up: the log's 22315 "Opening WiredTiger" string (the whole
   `wiredtiger_open` configuration, `engineConfig.configString` appended), and
   the type-0 metadata's `getCmdLineOpts.parsed` (`storage.wiredTiger.engineConfig.
   {configString,cacheSizeGB}`, `storage.syncPeriodSecs`, `setParameter.*`,
   where `wiredTigerEngineRuntimeConfig` is applied after the open string);
2. 8.0 periodic metadata (type 2): `getParameter` values that change at runtime;
3. defaults: WiredTiger `dist/api_data.py` and `conn_cache.c`, mongod's `syncdelay`.

A start-up replaces everything before it (a restart drops runtime changes);
periodic `getParameter` values apply on top of the latest start-up.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.series import wtconfig
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import Metadata, find_section
from ftdc.timeutil import format_time

# A start-up's log line and its FTDC metadata document are seconds apart; this
# much apart they still describe the same start-up.
SAME_STARTUP = dt.timedelta(minutes=5)

DEFAULT_SOURCE = "default"
# `since` of a setting in effect from the start of the data.
_EARLIEST = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Spec:
    name: str
    unit: str  # "%" (of the cache; values above 100 are bytes), "s", "count", "bytes"
    default: float | None
    default_source: str
    wt_key: str | None = None  # key in a WiredTiger configuration string


SPECS: tuple[Spec, ...] = (
    Spec("eviction_target", "%", 80, "WiredTiger default", "eviction_target"),
    Spec("eviction_trigger", "%", 95, "WiredTiger default", "eviction_trigger"),
    Spec("eviction_dirty_target", "%", 5, "WiredTiger default", "eviction_dirty_target"),
    Spec("eviction_dirty_trigger", "%", 20, "WiredTiger default", "eviction_dirty_trigger"),
    # 4.4+: half the dirty values unless set, the trigger capped at eviction_trigger (conn_cache.c).
    Spec("eviction_updates_target", "%", None, "WiredTiger default: half of eviction_dirty_target", "eviction_updates_target"),
    Spec("eviction_updates_trigger", "%", None, "WiredTiger default: half of eviction_dirty_trigger", "eviction_updates_trigger"),
    Spec("eviction_threads_min", "count", 4, "mongod default (eviction=(threads_min=4))", "eviction.threads_min"),
    Spec("eviction_threads_max", "count", 4, "mongod default (eviction=(threads_max=4))", "eviction.threads_max"),
    # checkpoint=(wait=N) in the open string starts WiredTiger's own checkpoint server every N seconds
    # (older mongod wrote its syncdelay there; a configString can set it on any version).
    Spec("checkpoint_interval", "s", 60, "mongod default (storage.syncPeriodSecs / syncdelay)", "checkpoint.wait"),
    Spec("cache_size", "bytes", None, "mongod default: 50 % of (RAM - 1 GB), at least 256 MB", "cache_size"),
    Spec("close_idle_time", "s", None, "not recorded", "file_manager.close_idle_time"),
    Spec("close_handle_minimum", "count", None, "not recorded", "file_manager.close_handle_minimum"),
    # Fixed ticket pools: <= 6.x default 128; 7.0+ adjusts them by throughput probing unless set.
    Spec("read_tickets", "count", None, "not set (128 before 7.0; 7.0+ sizes it by throughput probing)", None),
    Spec("write_tickets", "count", None, "not set (128 before 7.0; 7.0+ sizes it by throughput probing)", None),
    # How long a multi-document transaction may live, idle time included, before the periodic reaper aborts it (4.0+).
    Spec("transaction_lifetime_limit", "s", 60, "mongod default (transactionLifetimeLimitSeconds)", None),
)
SPEC = {s.name: s for s in SPECS}
CACHE_PERCENTAGES = tuple(s.name for s in SPECS if s.unit == "%")

# Parameters that set a threshold directly (setParameter at start-up, getParameter at runtime).
TICKET_POOLS = ("read_tickets", "write_tickets")
_PARAMETERS = {
    "syncdelay": "checkpoint_interval",
    "wiredTigerConcurrentReadTransactions": "read_tickets",
    "wiredTigerConcurrentWriteTransactions": "write_tickets",
    "storageEngineConcurrentReadTransactions": "read_tickets",
    "storageEngineConcurrentWriteTransactions": "write_tickets",
    "transactionLifetimeLimitSeconds": "transaction_lifetime_limit",
}
_RUNTIME_CONFIG = "wiredTigerEngineRuntimeConfig"


@dataclass(frozen=True)
class Setting:
    value: float | None
    source: str
    since: dt.datetime | None = None  # None: from the start of the data


def described(name: str, setting: Setting) -> str:
    """A setting of `name` with its unit and source, as explanations and advice quote it."""
    unit = SPEC[name].unit
    shown = "-" if setting.value is None else f"{setting.value:g}" + (f" {unit}" if unit in ("%", "s") else "")
    return f"{shown} ({setting.source})"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _from_wt(config: dict[str, str], source: str) -> dict[str, tuple[float, str]]:
    found = {}
    for spec in SPECS:
        if spec.wt_key and spec.wt_key in config:
            text = config[spec.wt_key]
            value = wtconfig.size_bytes(text) if spec.unit == "bytes" else _number(text)
            if value is not None:
                found[spec.name] = (value, f"{source}: {spec.wt_key}={text}")
    return found


def _from_parameters(params: dict[str, Any], source: str) -> dict[str, tuple[float, str]]:
    found = {}
    for param, name in _PARAMETERS.items():
        value = _number(params.get(param))
        if name in TICKET_POOLS and value == 0:
            # 8.0's default: 0 fixes no pool, the node sizes it (execution control); a pool of 0 tickets is no setting.
            found[name] = (None, f"{source}.{param}=0 (not fixed: sized by the node)")
        # syncdelay=0 is real: it turns periodic checkpoints off.
        elif value is not None and value >= 0:
            found[name] = (value, f"{source}.{param}={value:g}")
    runtime = params.get(_RUNTIME_CONFIG)
    if isinstance(runtime, str) and runtime.strip():
        found.update(_from_wt(wtconfig.parse(runtime), f"{source}.{_RUNTIME_CONFIG}"))
    return found


def _startup_from_metadata(doc: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """What one type-0 document's getCmdLineOpts sets."""
    parsed = (find_section(doc, "getCmdLineOpts") or {}).get("parsed") or {}
    storage = parsed.get("storage") or {}
    engine = ((storage.get("wiredTiger") or {}).get("engineConfig")) or {}
    prefix = "getCmdLineOpts.parsed"
    found = {}
    sync = _number(storage.get("syncPeriodSecs"))
    if sync is not None:
        found["checkpoint_interval"] = (sync, f"{prefix}.storage.syncPeriodSecs={sync:g}")
    # The configString is appended to mongod's own open string: what it sets wins.
    found.update(_from_wt(wtconfig.parse(engine.get("configString")), f"{prefix}.storage.wiredTiger.engineConfig.configString"))
    cache_gb = _number(engine.get("cacheSizeGB"))
    if cache_gb:
        found["cache_size"] = (cache_gb * (1 << 30), f"{prefix}.storage.wiredTiger.engineConfig.cacheSizeGB={cache_gb:g}")
    found.update(_from_parameters(parsed.get("setParameter") or {}, f"{prefix}.setParameter"))
    return found


@dataclass
class _Layer:
    time: dt.datetime | None
    startup: bool  # replaces earlier settings (True) or adds to them (runtime changes)
    settings: dict[str, tuple[float, str]]
    sources: int = 0  # configuration records seen for it (a start-up with none keeps the last one's)


def _startups(metadata: Metadata, open_strings: list[tuple[dt.datetime, str, str]], starts: list[dt.datetime]) -> list[_Layer]:
    """One layer per process start. A source belongs to the latest start at or
    before it (a log's open string comes seconds before the first FTDC sample,
    so SAME_STARTUP of slack); a rotated file's metadata document repeats its
    process's settings instead of starting over."""
    known = sorted({t for t in starts if t is not None} | {t for t, _, _ in open_strings})
    layers = {t: _Layer(t, True, {}) for t in known}
    first = _Layer(None, True, {})

    def owner(time: dt.datetime | None) -> _Layer:
        if time is None:
            return first
        candidates = [t for t in known if t <= time + SAME_STARTUP]
        return layers[candidates[-1]] if candidates else first

    # Within a start-up: the open string, then getCmdLineOpts (its configString is
    # part of the open string; setParameter's runtime config is applied after it).
    for time, text, where in sorted(open_strings, key=lambda s: s[0]):
        layer = owner(time)
        layer.settings.update(_from_wt(wtconfig.parse(text), where))
        layer.sources += 1
    for document in metadata.documents:
        layer = owner(document.time)
        layer.settings.update(_startup_from_metadata(document.doc))
        layer.sources += 1
    # Data before the first start-up seen belongs to a start that left no trace; the
    # first one seen is the best account of it (its `since` becomes None below).
    return ([first] if first.sources or not layers else []) + list(layers.values())


def _runtime(metadata: Metadata) -> list[_Layer]:
    """8.0 periodic getParameter snapshots, one layer per time that sets something."""
    params = metadata.parameters.filter(pl.col("section") == "getParameter")
    layers = []
    for (time,), rows in params.group_by(TIME_COLUMN, maintain_order=True):
        values = {}
        for name, raw in rows.select("parameter", "value").iter_rows():
            if name in _PARAMETERS or name == _RUNTIME_CONFIG:
                try:
                    values[name] = json.loads(raw)
                except ValueError:
                    continue
        found = _from_parameters(values, f"getParameter (8.0 periodic metadata, {format_time(time)})")
        if found:
            layers.append(_Layer(time, False, found))
    return layers


@dataclass
class Thresholds:
    """Each threshold's value over time, with where the value came from."""

    timeline: dict[str, list[Setting]] = field(default_factory=dict)
    configured: bool = True  # the files (or log) recorded some of the node's configuration

    def assumed(self, name: str) -> bool:
        """The value is a published default standing in for a configuration no file recorded."""
        return not self.configured and self.current(name).source == SPEC[name].default_source

    def current(self, name: str) -> Setting:
        """The latest value (the one a report quotes first)."""
        return self.timeline[name][-1]

    def value(self, name: str) -> float | None:
        return self.current(name).value

    def source(self, name: str) -> str:
        return self.current(name).source

    def describe(self, name: str) -> str:
        """`20 % (WiredTiger default)`, for explanations."""
        return described(name, self.current(name))

    def at(self, name: str, times: pl.Series) -> pl.Series:
        """The value in effect at each time (the first setting also covers earlier times)."""
        return pl.select(self.expr(name, pl.lit(times))).to_series().alias(name)

    def expr(self, name: str, times: pl.Expr) -> pl.Expr:
        """`at` as an expression over `times`, for a plan to compute beside other columns: the value of the last
        setting since at or before each time, the first setting's for earlier times and where that value is unknown."""
        steps = self.timeline[name]
        first = pl.lit(steps[0].value, pl.Float64)
        value = first
        for step in steps[1:] if steps[0].since is None else steps:
            since = pl.lit(step.since if step.since is not None else _EARLIEST).cast(pl.Datetime("ms", "UTC"))
            value = pl.when(times >= since).then(pl.lit(step.value, pl.Float64)).otherwise(value)
        return value.fill_null(first)

    def in_effect(self, name: str, start: dt.datetime | None, end: dt.datetime | None) -> list[Setting]:
        """The settings of `name` in effect at some time in [start, end], in time order (all of them without a window)."""
        steps = self.timeline.get(name, [])
        if start is None or end is None:
            return list(steps)
        out = []
        for i, step in enumerate(steps):
            following = steps[i + 1].since if i + 1 < len(steps) else None
            if (step.since is None or step.since <= end) and (following is None or following > start):
                out.append(step)
        return out

    def within(self, start: dt.datetime | None, end: dt.datetime | None) -> Thresholds:
        """The thresholds as they were in [start, end]: `current` is the last value in effect there, not the capture's last."""
        return Thresholds(
            {name: self.in_effect(name, start, end) or steps[:1] for name, steps in self.timeline.items()}, self.configured
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            name: {
                "value": steps[-1].value,
                "unit": SPEC[name].unit,
                "source": steps[-1].source,
                "assumed": self.assumed(name),
                "changes": [
                    {"since": format_time(s.since) if s.since else None, "value": s.value, "source": s.source} for s in steps
                ],
            }
            for name, steps in self.timeline.items()
        }


def _defaults(values: dict[str, tuple[float | None, str]]) -> None:
    """Fills the settings a layer leaves unset with defaults, deriving the updates ones."""
    for spec in SPECS:
        values.setdefault(spec.name, (spec.default, spec.default_source))
    for updates, dirty in (
        ("eviction_updates_target", "eviction_dirty_target"),
        ("eviction_updates_trigger", "eviction_dirty_trigger"),
    ):
        base = values[dirty][0]
        if values[updates][0] is not None or base is None:
            continue
        value = base / 2
        trigger = values["eviction_trigger"][0]
        if updates == "eviction_updates_trigger" and trigger is not None and base <= 100 and trigger <= 100:
            value = min(value, trigger)
        values[updates] = (value, f"{SPEC[updates].default_source}, {base:g} / 2")


def effective_thresholds(
    metadata: Metadata, open_strings: Iterable[tuple[dt.datetime, str, str]] = (), starts: Iterable[dt.datetime] = ()
) -> Thresholds:
    """Thresholds from `metadata` and the log's wiredtiger_open strings `(time, text, where)`;
    `starts` are the times processes started (FTDC restarts, log start-up lines)."""
    startups = _startups(metadata, list(open_strings), list(starts))
    layers = sorted(startups + _runtime(metadata), key=lambda layer: (layer.time is not None, layer.time or dt.datetime.min))
    timeline: dict[str, list[Setting]] = {}
    configured: dict[str, tuple[float, str]] = {}  # the current process's start-up settings
    runtime: dict[str, tuple[float, str]] = {}  # changed since it started
    for index, layer in enumerate(layers):
        if layer.startup:
            # A start-up nothing recorded is most likely the same configuration file again.
            if layer.sources or index == 0:
                configured = dict(layer.settings)
            runtime = {}
        else:
            runtime.update(layer.settings)
        state: dict[str, tuple[float | None, str]] = {**configured, **runtime}
        _defaults(state)
        since = None if index == 0 else layer.time
        for name, (value, source) in state.items():
            steps = timeline.setdefault(name, [])
            if not steps or steps[-1].value != value:
                steps.append(Setting(value, source, since))
            elif steps[-1].source == SPEC[name].default_source != source:
                # The same value, now seen in the node's configuration: quote that, not the default.
                steps[-1] = Setting(value, source, steps[-1].since)
    configured = any(layer.sources or not layer.startup for layer in layers)
    return Thresholds({spec.name: timeline[spec.name] for spec in SPECS}, configured)
