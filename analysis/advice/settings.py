"""What each setting advice may touch means to the server, and where it is set.

The facts the validator (`analysis.advice.vetting`) and the advice's words rest on:
- WiredTiger's `wiredtiger_open` / `reconfigure` bounds: eviction_target and eviction_trigger
  10-100 % of the cache (above 100, bytes), eviction_dirty_* and eviction_updates_* at least 1 %,
  eviction threads 1-20, a target below its trigger (WiredTiger rejects the configuration otherwise).
  Application threads start evicting when the cache passes a trigger: a trigger at or below the
  level the node usually runs at makes them evict all the time.
- mongod's checkpointer sleeps syncdelay seconds between checkpoints; 0 turns periodic checkpoints off.
- Ticket pools: before 7.0 a fixed pool of 128; from 7.0 the server sizes the pools by throughput
  probing unless the parameter is set, and 0 is how it reports "not set" (it means probing, not an
  empty pool).
- mongod's default cache is 50 % of (RAM - 1 GB), at least 256 MB; the rest of the RAM holds
  connections, index builds and the file system's cache.
- transactionLifetimeLimitSeconds (at least 1, 60 by default) is how long a multi-document transaction may
  live, idle time included: a reaper that wakes every half of it (at most every 60 s) aborts the older ones
  (log id 20707). While it lives, the transaction pins every update since its snapshot in the cache. A
  longer limit only lets it pin longer, so it is only ever lowered; and a lower one aborts the legitimate
  transactions that run longer, rolling back their writes, which the advice must say.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The cache is not all of mongod's memory: connections, index builds and the OS's cache of
# compressed blocks need the rest of the host's RAM.
MAX_CACHE_SHARE_OF_RAM = 0.8
MIN_CACHE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Meaning:
    label: str  # as a DBA names it
    how: str  # where it is set (a value in braces is filled in)
    meaning: str  # what the server does with it
    minimum: float | None = None  # the least value ever proposed
    maximum: float | None = None  # the most (cache: the host's RAM decides)
    never: dict[float, str] = field(default_factory=dict)  # values never proposed, and why
    level: str | None = None  # a trigger: the series column of the level it acts on
    below: str | None = None  # a target: the trigger it must stay under
    only_lower: str | None = None  # why a value above the current one is never proposed
    caveat: str | None = None  # what every proposal of it must warn of


def _runtime(key: str) -> str:
    return f'wiredTigerEngineRuntimeConfig: "{key}={{value}}"'


MEANINGS: dict[str, Meaning] = {
    "checkpoint_interval": Meaning(
        "syncdelay",
        "setParameter syncdelay, or storage.syncPeriodSecs",
        "seconds mongod's checkpointer sleeps between one checkpoint's end and the next one's start",
        minimum=10,
        maximum=299,
        never={0: "syncdelay 0 turns periodic checkpoints off"},
    ),
    "eviction_target": Meaning(
        "eviction_target",
        _runtime("eviction_target"),
        "cache fill (% of the cache) background eviction works down to",
        minimum=10,
        maximum=99,
        below="eviction_trigger",
    ),
    "eviction_trigger": Meaning(
        "eviction_trigger",
        _runtime("eviction_trigger"),
        "cache fill (% of the cache) past which application threads evict",
        minimum=10,
        maximum=99,
        level="cache_fill_pct",
    ),
    "eviction_dirty_target": Meaning(
        "eviction_dirty_target",
        _runtime("eviction_dirty_target"),
        "dirty data (% of the cache) background eviction writes down to",
        minimum=1,
        maximum=99,
        below="eviction_dirty_trigger",
    ),
    "eviction_dirty_trigger": Meaning(
        "eviction_dirty_trigger",
        _runtime("eviction_dirty_trigger"),
        "dirty data (% of the cache) past which application threads evict",
        minimum=1,
        maximum=99,
        level="cache_dirty_pct",
    ),
    "eviction_updates_target": Meaning(
        "eviction_updates_target",
        _runtime("eviction_updates_target"),
        "update bytes (% of the cache) background eviction works down to",
        minimum=1,
        maximum=99,
        below="eviction_updates_trigger",
    ),
    "eviction_updates_trigger": Meaning(
        "eviction_updates_trigger",
        _runtime("eviction_updates_trigger"),
        "update bytes (% of the cache) past which application threads evict",
        minimum=1,
        maximum=99,
        level="cache_updates_pct",
    ),
    "eviction_threads_min": Meaning(
        "eviction threads_min",
        'wiredTigerEngineRuntimeConfig: "eviction=(threads_min={value})"',
        "eviction worker threads always running",
        minimum=1,
        maximum=20,
    ),
    "eviction_threads_max": Meaning(
        "eviction threads_max",
        'wiredTigerEngineRuntimeConfig: "eviction=(threads_max={value})"',
        "eviction worker threads at most",
        minimum=1,
        maximum=20,
    ),
    "cache_size": Meaning(
        "cacheSizeGB", "storage.wiredTiger.engineConfig.cacheSizeGB", "the WiredTiger cache's size", minimum=MIN_CACHE_BYTES
    ),
    "close_idle_time": Meaning(
        "close_idle_time",
        'storage.wiredTiger.engineConfig.configString: "file_manager=(close_idle_time={value})"',
        "seconds an unused data handle stays open before the sweep closes it (0: never closed)",
        minimum=30,
        never={0: "close_idle_time 0 never closes idle handles"},
    ),
    "close_handle_minimum": Meaning(
        "close_handle_minimum",
        'storage.wiredTiger.engineConfig.configString: "file_manager=(close_handle_minimum={value})"',
        "open handles below which the sweep closes none",
        minimum=0,
    ),
    "read_tickets": Meaning(
        "read ticket pool",
        "setParameter storageEngineConcurrentReadTransactions (wiredTigerConcurrentReadTransactions before 7.0)",
        "concurrent storage-engine read transactions; on 7.0+ 0 (unset) lets throughput probing size the pool",
        minimum=1,
        never={0: "a ticket pool of 0 is not a pool size"},
    ),
    "write_tickets": Meaning(
        "write ticket pool",
        "setParameter storageEngineConcurrentWriteTransactions (wiredTigerConcurrentWriteTransactions before 7.0)",
        "concurrent storage-engine write transactions; on 7.0+ 0 (unset) lets throughput probing size the pool",
        minimum=1,
        never={0: "a ticket pool of 0 is not a pool size"},
    ),
    "transaction_lifetime_limit": Meaning(
        "transactionLifetimeLimitSeconds",
        "setParameter transactionLifetimeLimitSeconds={value}, at runtime or at start-up",
        "seconds a multi-document transaction may live, idle time included, before the periodic reaper aborts it",
        minimum=1,
        only_lower="a longer lifetime only lets an open transaction pin history longer",
        caveat="that transactions running longer are aborted and their writes rolled back",
    ),
}


def default_cache_bytes(memory_mb: int | None) -> float | None:
    """mongod's default WiredTiger cache on a host (or container) of `memory_mb`: 50 % of (its memory - 1 GB), at least
    256 MB."""
    if not memory_mb:
        return None
    return max(256 * 2**20, 0.5 * (memory_mb * 2**20 - 2**30))


def max_cache_bytes(memory_mb: int | None) -> float | None:
    """The largest cache a host of `memory_mb` can give mongod."""
    return MAX_CACHE_SHARE_OF_RAM * memory_mb * 2**20 if memory_mb else None
