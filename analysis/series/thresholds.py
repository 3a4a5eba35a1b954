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
from analysis.settings import PARAMETERS, SETTINGS, TICKET_POOLS
from ftdc.frames import TIME_COLUMN
from ftdc.metadata import Metadata, find_section
from ftdc.timeutil import format_time

# A start-up's log line and its FTDC metadata document are seconds apart; this
# much apart they still describe the same start-up.
SAME_STARTUP = dt.timedelta(minutes=5)

# `since` of a setting in effect from the start of the data.
_EARLIEST = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)


_RUNTIME_CONFIG = "wiredTigerEngineRuntimeConfig"


@dataclass(frozen=True)
class Setting:
    value: float | None
    source: str
    since: dt.datetime | None = None  # None: from the start of the data


def described(name: str, setting: Setting) -> str:
    """A setting of `name` with its unit and source, as explanations and advice quote it."""
    unit = SETTINGS[name].unit
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


# Settings found, by name: the value (None: the node sizes it itself) and where it was read.
Found = dict[str, tuple[float | None, str]]


def _from_wt(config: dict[str, str], source: str) -> Found:
    found: Found = {}
    for record in SETTINGS.values():
        if record.wt_key and record.wt_key in config:
            text = config[record.wt_key]
            value = wtconfig.size_bytes(text) if record.unit == "bytes" else _number(text)
            if value is not None:
                found[record.name] = (value, f"{record.wt_key}={text}, from {source}")
    return found


def _from_parameters(params: dict[str, Any], source: str) -> Found:
    found: Found = {}
    for param, name in PARAMETERS.items():
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


def _startup_from_metadata(doc: dict[str, Any]) -> Found:
    """What one type-0 document's getCmdLineOpts sets."""
    parsed = (find_section(doc, "getCmdLineOpts") or {}).get("parsed") or {}
    storage = parsed.get("storage") or {}
    engine = ((storage.get("wiredTiger") or {}).get("engineConfig")) or {}
    prefix = "getCmdLineOpts.parsed"
    found: Found = {}
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
    settings: Found
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
            if name in PARAMETERS or name == _RUNTIME_CONFIG:
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
        return not self.configured and self.current(name).source == SETTINGS[name].default_source

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
                "unit": SETTINGS[name].unit,
                "source": steps[-1].source,
                "assumed": self.assumed(name),
                "changes": [
                    {"since": format_time(s.since) if s.since else None, "value": s.value, "source": s.source} for s in steps
                ],
            }
            for name, steps in self.timeline.items()
        }


def _defaults(values: Found) -> None:
    """Fills the settings a layer leaves unset with defaults, deriving the updates ones."""
    for record in SETTINGS.values():
        values.setdefault(record.name, (record.default, record.default_source))
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
        values[updates] = (value, f"{SETTINGS[updates].default_source}, {base:g} / 2")


def effective_thresholds(
    metadata: Metadata, open_strings: Iterable[tuple[dt.datetime, str, str]] = (), starts: Iterable[dt.datetime] = ()
) -> Thresholds:
    """Thresholds from `metadata` and the log's wiredtiger_open strings `(time, text, where)`;
    `starts` are the times processes started (FTDC restarts, log start-up lines)."""
    startups = _startups(metadata, list(open_strings), list(starts))
    layers = sorted(startups + _runtime(metadata), key=lambda layer: (layer.time is not None, layer.time or dt.datetime.min))
    timeline: dict[str, list[Setting]] = {}
    configured: Found = {}  # the current process's start-up settings
    runtime: Found = {}  # changed since it started
    for index, layer in enumerate(layers):
        if layer.startup:
            # A start-up nothing recorded is most likely the same configuration file again.
            if layer.sources or index == 0:
                configured = dict(layer.settings)
            runtime = {}
        else:
            runtime.update(layer.settings)
        state: Found = {**configured, **runtime}
        _defaults(state)
        since = None if index == 0 else layer.time
        for name, (value, source) in state.items():
            steps = timeline.setdefault(name, [])
            if not steps or steps[-1].value != value:
                steps.append(Setting(value, source, since))
            elif steps[-1].source == SETTINGS[name].default_source != source:
                # The same value, now seen in the node's configuration: quote that, not the default.
                steps[-1] = Setting(value, source, steps[-1].since)
    recorded = any(layer.sources or not layer.startup for layer in layers)
    return Thresholds({name: timeline[name] for name in SETTINGS}, recorded)
