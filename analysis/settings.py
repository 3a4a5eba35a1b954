"""One record per setting: everything the project knows of a setting the analysis reads or advice may change.

A record says what the setting is (its name as a DBA says it, its unit, what the server does with it), its
default on each version and where that default is published, where a node's value comes from (a key of
WiredTiger's configuration strings, setParameter / getParameter names) and where a DBA sets it, and what
advice may do with it: its sensible bounds, the values the server reads specially, the trigger a target
stays under, the level a trigger is compared with, which way a value the node set on purpose is never
moved (and what that would do), and what a value away from the default trades.
`analysis.series.thresholds` reads a node's values through these records, `analysis.advice` proposes and
vets changes with them; `tests/test_setting_registry.py` holds every setting named in `analysis/` to a record.

The facts, and where they come from:
- WiredTiger's `wiredtiger_open` / `reconfigure` bounds (`dist/api_data.py`): eviction_target and
  eviction_trigger 10-100 % of the cache (above 100, bytes), eviction_dirty_* and eviction_updates_* at
  least 1 %, eviction threads 1-20, a target below its trigger (WiredTiger rejects the configuration
  otherwise); 4.4+ derives the updates settings as half the dirty ones (`conn_cache.c`). Application
  threads start evicting when the cache passes a trigger (`__wt_eviction_needed`): a trigger at or below the
  level the node usually runs at makes them evict all the time.
- mongod's checkpointer sleeps syncdelay seconds between checkpoints; 0 turns periodic checkpoints off.
- Ticket pools: before 7.0 a fixed pool of 128; from 7.0 the server sizes the pools by throughput probing
  unless the parameter is set, and 0 is how it reports "not set" (probing, not an empty pool).
- mongod's default cache is 50 % of (RAM - 1 GB), at least 256 MB; the rest of the RAM holds connections,
  index builds and the file system's cache.
- transactionLifetimeLimitSeconds (at least 1, 60 by default, 4.0+) is how long a multi-document transaction
  may live, idle time included: a reaper that wakes every half of it (at most every 60 s) aborts the older
  ones (log id 20707). While it lives, the transaction pins every update since its snapshot in the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

UNITS = ("%", "s", "count", "bytes")  # "%" of the cache (values above 100 are bytes)
DIRECTIONS = ("higher", "lower")
# The cache is not all of mongod's memory: connections, index builds and the OS's cache of
# compressed blocks need the rest of the host's RAM.
MAX_CACHE_SHARE_OF_RAM = 0.8
MIN_CACHE_BYTES = 256 * 2**20
# First version whose ticket pools are sized by throughput probing unless set.
PROBING_VERSION = (7, 0)
# First version whose WiredTiger has eviction_updates_target and eviction_updates_trigger.
UPDATES_VERSION = (4, 4)


@dataclass(frozen=True)
class SettingRecord:
    name: str  # how the analysis names it (a key of `Thresholds`, `Recommendation.setting`)
    label: str  # as a DBA names it
    unit: str  # one of UNITS
    meaning: str  # what the server does with it
    default: float | None  # the default a node's timeline starts from when nothing set it
    # Where that default is published, as a value's source reads: said inside a value's parentheses ("60 s (mongod's
    # default for storage.syncPeriodSecs / syncdelay)"), so without parentheses of its own.
    default_source: str
    how: str  # where a DBA sets it (a value in braces is filled in)
    wt_key: str | None = None  # its key in a WiredTiger configuration string
    parameters: tuple[str, ...] = ()  # setParameter / getParameter names that set it
    # The default from each version on, where it differs from `default` ((major, minor), value; None: not a fixed value).
    defaults_by_version: tuple[tuple[tuple[int, int], float | None], ...] = ()
    minimum: float | None = None  # the least value ever proposed
    minimum_why: str = ""  # why nothing below `minimum` is proposed, where it is more than a bound of the server's
    maximum: float | None = None  # the most (cache: the host's RAM decides)
    never: dict[float, str] = field(default_factory=dict)  # values never proposed, and why
    level: str | None = None  # a trigger: the series column of the level it acts on
    below: str | None = None  # a target: the trigger it must stay under
    only_lower: str | None = None  # why a value above the current one is never proposed
    caveat: str | None = None  # what every proposal of it must warn of
    harmful: str | None = None  # the way (DIRECTIONS) a value the node set on purpose is never moved
    harm: str = ""  # what moving it that way does
    trades: dict[str, str] = field(default_factory=dict)  # a value above or below the default: what it trades
    # The first version (major, minor) that has it; None: every version the analysis reads. A node before it shows
    # no value of it and gets no advice about it.
    since: tuple[int, int] | None = None

    def exists_on(self, version: tuple[int, int] | None) -> bool:
        """The setting is there on `version` (major, minor); assumed so when the version is not known."""
        return self.since is None or version is None or version >= self.since

    def default_on(self, version: tuple[int, int] | None) -> float | None:
        """The published default on `version` (major, minor); `default` when the version is not known."""
        value = self.default
        for since, changed in self.defaults_by_version:
            if version is not None and version >= since:
                value = changed
        return value


def _runtime(key: str) -> str:
    return f'wiredTigerEngineRuntimeConfig: "{key}={{value}}"'


def _configstring(key: str) -> str:
    return f'storage.wiredTiger.engineConfig.configString: "file_manager=({key}={{value}})"'


WT_DEFAULT = "WiredTiger default"
NOT_RECORDED = "not recorded"
TICKETS_DEFAULT = "not set: 128 before 7.0; 7.0+ sizes it by throughput probing"
# What raising a target or lowering a trigger does to eviction, and what moving them the other way trades.
LATER_EVICTION = (
    "background eviction would start later, with the cache fuller, nearer the trigger where application threads evict"
)
SOONER_APPLICATION = "application threads would start evicting sooner, in the operations' own time"
EARLIER_TARGET = "background eviction starts earlier and keeps more of the cache free, for more eviction work and fewer pages kept in the cache"
LATER_TARGET = "more pages stay cached, for less headroom before application threads must evict"
HIGHER_TRIGGER = "application threads join eviction later, for a fuller cache and less headroom when it tips over"
LOWER_TRIGGER = "the cache keeps more headroom, for application threads evicting sooner, in the operations' own time"


def _target(name: str, level: str, minimum: float, default: float, trigger: str) -> SettingRecord:
    return SettingRecord(
        name,
        name,
        "%",
        f"{level} (% of the cache) background eviction works down to",
        default,
        WT_DEFAULT,
        _runtime(name),
        wt_key=name,
        minimum=minimum,
        maximum=99,
        below=trigger,
        harmful="higher",
        harm=LATER_EVICTION,
        trades={"lower": EARLIER_TARGET, "higher": LATER_TARGET},
    )


def _trigger(name: str, level: str, column: str, minimum: float, default: float) -> SettingRecord:
    return SettingRecord(
        name,
        name,
        "%",
        f"{level} (% of the cache) past which application threads evict",
        default,
        WT_DEFAULT,
        _runtime(name),
        wt_key=name,
        minimum=minimum,
        maximum=99,
        level=column,
        harmful="lower",
        harm=SOONER_APPLICATION,
        trades={"higher": HIGHER_TRIGGER, "lower": LOWER_TRIGGER},
    )


def _updates(dirty: SettingRecord, name: str, **changed) -> SettingRecord:
    """4.4+: an updates setting is half its dirty one unless set (`conn_cache.c`): no fixed default. WiredTiger has
    them from the durable history of 4.4 on (docs/metrics.md): 4.2 neither reads nor accepts them."""
    return replace(
        dirty,
        name=name,
        label=name,
        wt_key=name,
        how=_runtime(name),
        meaning=dirty.meaning.replace("dirty data", "update bytes"),
        default=None,
        default_source=f"{WT_DEFAULT}: half of {dirty.name}",
        since=UPDATES_VERSION,
        **changed,
    )


def _threads(name: str, key: str, meaning: str) -> SettingRecord:
    return SettingRecord(
        name,
        f"eviction {key}",
        "count",
        meaning,
        4,
        f"mongod's default for eviction.{key}",
        f'wiredTigerEngineRuntimeConfig: "eviction=({key}={{value}})"',
        wt_key=f"eviction.{key}",
        minimum=1,
        maximum=20,
        harmful="lower",
        harm="fewer threads would evict, so application threads take over sooner",
        trades={"higher": "more threads evict in the background, for CPU taken from the workload"},
    )


def _tickets(rw: str) -> SettingRecord:
    parameter = f"Concurrent{rw.capitalize()}Transactions"
    return SettingRecord(
        f"{rw}_tickets",
        f"{rw} ticket pool",
        "count",
        f"concurrent storage-engine {rw} transactions; on 7.0+ 0 (unset) lets throughput probing size the pool",
        None,
        TICKETS_DEFAULT,
        f"setParameter storageEngine{parameter}, or wiredTiger{parameter} before 7.0",
        parameters=(f"wiredTiger{parameter}", f"storageEngine{parameter}"),
        defaults_by_version=(((0, 0), 128.0), (PROBING_VERSION, None)),
        minimum=1,
        never={0: "a ticket pool of 0 is not a pool size"},
        # A fixed pool turns probing off (7.0+) and lets as many operations into the storage engine whether it keeps up or not.
        caveat=(
            f"that a fixed pool lets that many {rw}s into the storage engine however slow it gets"
            " (on 7.0+ it also turns throughput probing off, which shrinks the pool when the engine slows)"
        ),
        trades={
            "lower": "fewer operations run inside the storage engine at once, for longer queues in front of it",
            "higher": "more operations run inside the storage engine at once, for more contention inside it when the disk or cache is the limit",
        },
    )


_DIRTY_TARGET = _target("eviction_dirty_target", "dirty data", 1, 5, "eviction_dirty_trigger")
_DIRTY_TRIGGER = _trigger("eviction_dirty_trigger", "dirty data", "cache_dirty_pct", 1, 20)

RECORDS: tuple[SettingRecord, ...] = (
    _target("eviction_target", "cache fill", 10, 80, "eviction_trigger"),
    _trigger("eviction_trigger", "cache fill", "cache_fill_pct", 10, 95),
    _DIRTY_TARGET,
    _DIRTY_TRIGGER,
    _updates(_DIRTY_TARGET, "eviction_updates_target", below="eviction_updates_trigger"),
    _updates(_DIRTY_TRIGGER, "eviction_updates_trigger", level="cache_updates_pct"),
    _threads("eviction_threads_min", "threads_min", "eviction worker threads always running"),
    _threads("eviction_threads_max", "threads_max", "eviction worker threads at most"),
    # checkpoint=(wait=N) in the open string starts WiredTiger's own checkpoint server every N seconds
    # (older mongod wrote its syncdelay there; a configString can set it on any version).
    SettingRecord(
        "checkpoint_interval",
        "syncdelay",
        "s",
        "seconds mongod's checkpointer sleeps between one checkpoint's end and the next one's start",
        60,
        "mongod's default for storage.syncPeriodSecs / syncdelay",
        "setParameter syncdelay, or storage.syncPeriodSecs",
        wt_key="checkpoint.wait",
        parameters=("syncdelay",),
        # Never proposed below the default: MongoDB's production notes keep syncPeriodSecs at its default, and changing
        # syncdelay at runtime does not change how often recent versions checkpoint (SERVER-75162). A node's interval
        # raised above the default is proposed back to it.
        minimum=60,
        minimum_why=(
            "MongoDB's guidance keeps syncPeriodSecs at its default of 60 s, and on recent versions a shorter syncdelay "
            "set at runtime does not make checkpoints run more often (SERVER-75162)"
        ),
        maximum=299,
        never={0: "syncdelay 0 turns periodic checkpoints off"},
        trades={
            "lower": "each checkpoint writes less, for a checkpoint running nearly all the time",
            "higher": "checkpoints run less often, for each one writing a longer build-up of dirty data at once",
        },
    ),
    SettingRecord(
        "cache_size",
        "cacheSizeGB",
        "bytes",
        "the WiredTiger cache's size",
        None,
        "mongod's default: 50 % of the RAM less 1 GB, at least 256 MB",
        "storage.wiredTiger.engineConfig.cacheSizeGB",
        wt_key="cache_size",
        minimum=MIN_CACHE_BYTES,
        harmful="lower",
        harm="a smaller cache holds less of the working set",
        trades={
            "lower": "memory is left to other processes and the file system's cache, for a cache that holds less of the working set",
            "higher": "more of the working set stays cached, for less memory left to connections, index builds and the file system's cache",
        },
    ),
    SettingRecord(
        "close_idle_time",
        "close_idle_time",
        "s",
        "seconds an unused data handle stays open before the sweep closes it (0: never closed)",
        None,
        NOT_RECORDED,
        _configstring("close_idle_time"),
        wt_key="file_manager.close_idle_time",
        minimum=30,
        never={0: "close_idle_time 0 never closes idle handles"},
        harmful="higher",
        harm="idle handles would stay open longer",
    ),
    SettingRecord(
        "close_handle_minimum",
        "close_handle_minimum",
        "count",
        "open handles below which the sweep closes none",
        None,
        NOT_RECORDED,
        _configstring("close_handle_minimum"),
        wt_key="file_manager.close_handle_minimum",
        minimum=0,
        harmful="higher",
        harm="the sweep would close fewer idle handles",
    ),
    _tickets("read"),
    _tickets("write"),
    SettingRecord(
        "transaction_lifetime_limit",
        "transactionLifetimeLimitSeconds",
        "s",
        "seconds a multi-document transaction may live, idle time included, before the periodic reaper aborts it",
        60,
        "mongod's default for transactionLifetimeLimitSeconds",
        "setParameter transactionLifetimeLimitSeconds={value}, at runtime or at start-up",
        parameters=("transactionLifetimeLimitSeconds",),
        minimum=1,
        only_lower="a longer lifetime only lets an open transaction pin history longer",
        caveat="that transactions running longer are aborted and their writes rolled back",
        # A lifetime raised on purpose is there for transactions that run that long: lowering it aborts them.
        harmful="lower",
        harm="the transactions it was raised for would be aborted and their writes rolled back",
        trades={
            "higher": "long transactions can finish, for an open or abandoned one pinning history in the cache that much longer",
            "lower": "an abandoned transaction is aborted sooner, for legitimate transactions running longer being aborted",
        },
    ),
)
SETTINGS: dict[str, SettingRecord] = {r.name: r for r in RECORDS}
CACHE_PERCENTAGES = tuple(r.name for r in RECORDS if r.unit == "%")
TICKET_POOLS = ("read_tickets", "write_tickets")
# Parameters that set a setting directly (setParameter at start-up, getParameter at runtime).
PARAMETERS = {parameter: r.name for r in RECORDS for parameter in r.parameters}
DEFAULT_SOURCES = tuple(dict.fromkeys(r.default_source for r in RECORDS))


def default_cache_bytes(memory_mb: int | None) -> float | None:
    """mongod's default WiredTiger cache on a host (or container) of `memory_mb`: 50 % of (its memory - 1 GB), at least
    256 MB."""
    if not memory_mb:
        return None
    return max(256 * 2**20, 0.5 * (memory_mb * 2**20 - 2**30))


def max_cache_bytes(memory_mb: int | None) -> float | None:
    """The largest cache a host of `memory_mb` can give mongod."""
    return MAX_CACHE_SHARE_OF_RAM * memory_mb * 2**20 if memory_mb else None
