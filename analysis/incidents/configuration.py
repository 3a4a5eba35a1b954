"""Configuration outliers: settings in effect during a window, read from the node's own
configuration over time, that set off or worsen the kinds of finding in an incident.

Each is far from what mongod or WiredTiger would choose and bears on a mechanism:
a checkpoint interval of seconds (checkpoints back to back) or many minutes (each one
writes a long build-up of dirty data), ticket pools fixed below 128, a cache a
fraction of what mongod would give the host's RAM (for cache pressure: it does not
lengthen checkpoints), eviction targets and triggers moved from their defaults. A default value is never an outlier, whatever its source.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from analysis.advice import changes
from analysis.advice.recommendation import Recommendation
from analysis.findings.detectors import bearing_settings
from analysis.incidents.incident import RootCause
from analysis.series.thresholds import Setting, Thresholds
from analysis.settings import CACHE_PERCENTAGES, SETTINGS, default_cache_bytes
from analysis.text import ram
from ftdc.metadata import NodeInfo

DEFAULT_TICKETS = 128
# A cache under this share of mongod's default for the host's RAM is small for it.
SMALL_CACHE_SHARE = 0.25


def _cause(summary: str, name: str, setting: Setting, recommendation: Recommendation | None, **evidence) -> RootCause:
    return RootCause(
        kind="configuration",
        summary=summary,
        evidence={"setting": name, "value": setting.value, "source": setting.source, "since": setting.since, **evidence},
        recommendations=[recommendation] if recommendation else [],
    )


def _interval(setting: Setting) -> RootCause | None:
    """An interval that is itself the problem (off, seconds, many minutes), with the same advice its findings give."""
    value = setting.value
    recommendation = changes.restore_interval(changes.current_of("checkpoint_interval", setting))
    if recommendation is None or value is None:  # an interval without a value has no problem to restore
        return None
    default = changes.DEFAULT_SYNCDELAY_S
    if value == 0:
        return _cause(
            "Periodic checkpoints turned off (syncdelay=0)", "checkpoint_interval", setting, recommendation, default_s=default
        )
    # An interval read from the node's configuration is named as set; one inferred from the cadence says so.
    how = "inferred from the checkpoints' cadence" if setting.source.startswith("inferred") else f"syncdelay={value:g}"
    effect = "checkpoints run back to back" if value < default else "each checkpoint writes a long build-up"
    return _cause(
        f"A {value:g} s checkpoint interval ({how}; default {default} s): {effect}",
        "checkpoint_interval",
        setting,
        recommendation,
        default_s=default,
    )


def outliers(thresholds: Thresholds, node: NodeInfo, kinds: set[str], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """The configuration outliers in effect during [start, end] that bear on `kinds`, the strongest mechanism first."""
    out: list[RootCause] = []
    bearing = bearing_settings(kinds)  # each kind's record names the settings that bear on it
    if "checkpoint_interval" in bearing:
        out += [
            c for s in thresholds.in_effect("checkpoint_interval", start, end) if changes.set_by_node(s) and (c := _interval(s))
        ]
    if "cache_size" in bearing:
        memory_mb = node.memory_mb
        default = default_cache_bytes(memory_mb)  # None without the host's memory
        for s in thresholds.in_effect("cache_size", start, end):
            size = s.value
            if memory_mb and default and size is not None and changes.set_by_node(s) and size < SMALL_CACHE_SHARE * default:
                out.append(
                    _cause(
                        f"A small cache: {size / 2**30:.1f} GB against {ram(memory_mb)} of RAM "
                        f"(mongod's default would be {default / 2**30:.1f} GB)",
                        "cache_size",
                        s,
                        changes.change(
                            "cache_size",
                            changes.current_of("cache_size", s),
                            float(round(default)),
                            "Raise the cache towards mongod's default for this RAM",
                            action="resize",
                        ),
                        default_bytes=round(default),
                    )
                )
    for name in CACHE_PERCENTAGES:
        if name in bearing:
            record = SETTINGS[name]
            default = record.default
            for s in thresholds.in_effect(name, start, end):
                value = s.value
                if default is not None and value is not None and changes.set_by_node(s) and value != default:
                    # Set on purpose: what the value trades is part of the cause; moving it back the harmful way is withheld.
                    trade = record.trades.get("higher" if value > default else "lower")
                    out.append(
                        _cause(
                            f"{record.label} set to {value:g} % (default {default:g} %)" + (f": {trade}" if trade else ""),
                            name,
                            s,
                            changes.change(
                                name,
                                changes.current_of(name, s),
                                default,
                                f"Return {record.label} to its default",
                                "unless it was set for a reason that still holds",
                            ),
                            default=default,
                        )
                    )
    for rw in ("read", "write"):
        name = f"{rw}_tickets"
        if name not in bearing:
            continue
        record = SETTINGS[name]
        for s in thresholds.in_effect(name, start, end):
            pool = s.value
            if pool is not None and changes.set_by_node(s) and pool < DEFAULT_TICKETS:
                raise_pool = changes.change(
                    name,
                    changes.current_of(name, s),
                    DEFAULT_TICKETS,
                    f"Raise the {rw} ticket pool",
                    "if CPU and disk have headroom",
                )
                out.append(
                    _cause(
                        f"{rw.capitalize()} tickets fixed at {pool:g} (default {DEFAULT_TICKETS} before 7.0, sized by throughput "
                        f"probing from 7.0): {record.trades['lower']}",
                        name,
                        s,
                        None
                        if raise_pool is None  # never: the pool is below the value proposed
                        else replace(
                            raise_pool,
                            caveat=f"{DEFAULT_TICKETS} tickets let that many {rw}s into the storage engine at once: where the disk or "
                            "the cache is the limit, they wait inside it instead of in the queue",
                            assumes="engine_not_bottleneck",
                        ),
                        default=DEFAULT_TICKETS,
                    )
                )
    return out
