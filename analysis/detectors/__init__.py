"""Every detector: `detect(ctx) -> list[Finding]`, one module per kind."""

from . import (
    cache_pressure,
    checkpoint_stall,
    connection_storm,
    context,
    dhandle_pressure,
    disk_saturation,
    replication,
    throughput_dip,
    ticket_exhaustion,
    ttl_burst,
)

DETECTORS = (
    checkpoint_stall.detect,
    cache_pressure.detect,
    ticket_exhaustion.detect,
    ttl_burst.detect,
    disk_saturation.detect,
    dhandle_pressure.detect,
    throughput_dip.detect,
    connection_storm.detect,
    replication.detect,
    context.detect,
)

# Run after every detector: findings that change meaning beside others.
RELATE = (replication.relate,)
