"""Every detector: `detect(ctx) -> list[Finding]`, one module per kind, each declaring its `DETECTOR` record
(`record.Detector`); the registries below are read from those records. `MODULES` is every module of this
folder but the record's own, so a new detector cannot be left out: it runs in its record's `order`."""

from __future__ import annotations

import importlib
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from analysis.findings.detectors import connection_storm, latency_rise, replication
from analysis.findings.detectors.record import Detector

if TYPE_CHECKING:
    from analysis.findings.context import Context
    from analysis.findings.finding import Finding

NOT_DETECTORS = ("record",)  # the record's own module
MODULES = tuple(
    sorted(
        (
            importlib.import_module(f"{__name__}.{info.name}")
            for info in pkgutil.iter_modules(__path__)
            if info.name not in NOT_DETECTORS
        ),
        key=lambda m: m.DETECTOR.order,
    )
)
DETECTORS = tuple(m.detect for m in MODULES)
# Detectors at work at once: they only read the context, and most of their time is polars' and the native core's,
# which let go of the GIL, so they share the two cores (a week's detectors take a fifth less time than one at a time).
# One more than the cores: one waiting for the spikes, which are computed beside them, leaves its core to the others.
AT_ONCE = 3
# Kind -> the record of the detector that emits it.
RECORDS: dict[str, Detector] = {kind: m.DETECTOR for m in MODULES for kind in m.DETECTOR.kinds}
# Kind -> its name in the reports' words.
NAMES: dict[str, str] = {kind: name for m in MODULES for kind, name in zip(m.DETECTOR.kinds, m.DETECTOR.names)}


def kind_name(kind: str) -> str:
    """A finding's kind as the reports say it: its record's name (the kind's words, should a record not give one)."""
    return NAMES.get(kind) or kind.replace("_", " ")


# Kind -> the kinds its mechanism can set off (incidents group along these).
LINKS: dict[str, tuple[str, ...]] = {kind: record.sets_off for kind, record in RECORDS.items()}
# Kinds the log's operations cannot explain, and kinds every member of a replica set sees (merged across nodes).
NOT_ATTRIBUTED = tuple(kind for kind, record in RECORDS.items() if not record.attributed)
REPLICA_SET_WIDE = tuple(kind for kind, record in RECORDS.items() if record.replica_set_wide)
# Kinds that are a moment, not a condition (an election): marked, and context unless during another finding.
MOMENTS = tuple(kind for kind, record in RECORDS.items() if kind in record.moments)


def detect(ctx: Context) -> list[Finding]:
    """Every detector's findings on `ctx`, in their records' order. Those that read the spikes start last: the others
    keep the cores busy while the spikes are computed (side by side, a week's analysis after its decode took 0.9x the
    time in a process whose memory was warm, 0.96-0.99x in the bench's rounds: docs/performance.md)."""
    first = sorted(range(len(MODULES)), key=lambda i: MODULES[i].DETECTOR.reads_spikes)
    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="detector") as pool:
        running = {i: pool.submit(DETECTORS[i], ctx) for i in first}
        return [finding for i in range(len(DETECTORS)) for finding in running[i].result()]


def explained_by(candidate: str) -> tuple[str, ...]:
    """The kinds whose chains the root-cause candidate (`record.CANDIDATES`) is tested for, in detector order."""
    return tuple(kind for kind, record in RECORDS.items() if candidate in record.explained_by)


def bearing_settings(kinds) -> set[str]:
    """The settings whose outliers bear on any of `kinds` (`configuration`)."""
    return {setting for kind in kinds if kind in RECORDS for setting in RECORDS[kind].settings}


# Run after every detector, each returning the findings again: findings that change meaning beside others.
RELATE = (replication.relate, latency_rise.relate, connection_storm.relate)
