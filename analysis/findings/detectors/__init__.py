"""Every detector: `detect(ctx) -> list[Finding]`, one module per kind, each declaring its `DETECTOR` record
(`record.Detector`); the registries below are read from those records. `MODULES` is every module of this
folder but the record's own, so a new detector cannot be left out: it runs in its record's `order`."""

from __future__ import annotations

import importlib
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from analysis.findings.detectors import replication
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
# which let go of the GIL, so two share two cores (a week's detectors take a fifth less time).
AT_ONCE = 2
# Kind -> the record of the detector that emits it.
RECORDS: dict[str, Detector] = {kind: m.DETECTOR for m in MODULES for kind in m.DETECTOR.kinds}
# Kind -> the kinds its mechanism can set off (incidents group along these).
LINKS: dict[str, tuple[str, ...]] = {kind: record.sets_off for kind, record in RECORDS.items()}
# Kinds the log's operations cannot explain, and kinds every member of a replica set sees (merged across nodes).
NOT_ATTRIBUTED = tuple(kind for kind, record in RECORDS.items() if not record.attributed)
REPLICA_SET_WIDE = tuple(kind for kind, record in RECORDS.items() if record.replica_set_wide)
# Kinds that are a moment, not a condition (an election): marked, and context unless during another finding.
MOMENTS = tuple(kind for kind, record in RECORDS.items() if kind in record.moments)


def detect(ctx: Context) -> list[Finding]:
    """Every detector's findings on `ctx`, in their records' order."""
    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="detector") as pool:
        return [finding for found in pool.map(lambda detector: detector(ctx), DETECTORS) for finding in found]


def explained_by(candidate: str) -> tuple[str, ...]:
    """The kinds whose chains the root-cause candidate (`record.CANDIDATES`) is tested for, in detector order."""
    return tuple(kind for kind, record in RECORDS.items() if candidate in record.explained_by)


def bearing_settings(kinds) -> set[str]:
    """The settings whose outliers bear on any of `kinds` (`configuration`)."""
    return {setting for kind in kinds if kind in RECORDS for setting in RECORDS[kind].settings}


# Run after every detector, each returning the findings again: findings that change meaning beside others.
RELATE = (replication.relate,)
