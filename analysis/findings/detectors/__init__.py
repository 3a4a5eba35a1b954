"""Every detector: `detect(ctx) -> list[Finding]`, one module per kind, each declaring its `DETECTOR` record
(`record.Detector`); the registries below are read from those records."""

from analysis.findings.detectors import (
    cache_pressure,
    checkpoint_stall,
    connection_storm,
    node_events,
    dhandle_pressure,
    disk_saturation,
    replication,
    restart_loop,
    throughput_dip,
    ticket_exhaustion,
    ttl_burst,
)
from analysis.findings.detectors.record import Detector

MODULES = (
    checkpoint_stall,
    cache_pressure,
    ticket_exhaustion,
    ttl_burst,
    disk_saturation,
    dhandle_pressure,
    throughput_dip,
    connection_storm,
    replication,
    restart_loop,
    node_events,
)
DETECTORS = tuple(m.detect for m in MODULES)
# Kind -> the record of the detector that emits it.
RECORDS: dict[str, Detector] = {kind: m.DETECTOR for m in MODULES for kind in m.DETECTOR.kinds}
# Kind -> the kinds its mechanism can set off (incidents group along these).
LINKS: dict[str, tuple[str, ...]] = {kind: record.causes for kind, record in RECORDS.items()}
# Kinds the log's operations cannot explain, and kinds every member sees (merged across nodes).
NOT_ATTRIBUTED = tuple(kind for kind, record in RECORDS.items() if not record.attributed)
CROSS_KINDS = tuple(kind for kind, record in RECORDS.items() if record.cross_node)

# Run after every detector: findings that change meaning beside others.
RELATE = (replication.relate,)
