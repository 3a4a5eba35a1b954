"""What the reports call things: a finding's kind by its detector's name, an evidence key by a label, an evidence
value as people read it, a time with its zone. Rendered here, at the edge: the data keeps its identifiers (the JSON
carries them as keys), the prose a support engineer forwards never shows one.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from analysis.advice import wording
from analysis.advice.recommendation import Recommendation
from analysis.findings.culprits import operation_seconds
from analysis.findings.detectors import kind_name
from analysis.incidents.incident import MECHANISMS, Incident, RootCause
from analysis.series.checkpoints import SEEN_IN, InWindow
from analysis.settings import SETTINGS
from analysis.text import duration, first_and_last, mb_per_s, milliseconds, pct
from ftdc.timeutil import Offset, say_time, say_window

# Evidence keys whose words are not their parts read one by one.
LABELS = {
    "carried_by": "carried by (the log's slow operations)",
    "held_s": "operation-seconds working (less the log's waits)",
    "query_hash": "query hash",
    "p_value": "p-value",
    "ns": "namespace",
    "app": "application",
    "op": "operation",
    "dirty_pct_peak": "dirty data at its peak (% of the cache)",
    "dirty_pct_at_longest_checkpoint": "dirty data when the longest checkpoint started (% of the cache)",
    "operations_per_s_all": "operations per second, all classes",
    "checkpoints_in_window": "checkpoints in the window",
    "checkpoint_usual_s": "usual checkpoint (s)",
    "checkpoint_every_s": "a checkpoint every (s)",
    "writes_per_s_before": "writes per second before",
    "concurrency": "running at once on average",
    "share": "share of the slow operations' time",
    "time_share": "share of the window spent checkpointing",
    "checkpoint_time_share": "share of the window spent checkpointing",
    "aligned_time_share": "share of the time in a checkpoint or the sampling period after one",
    "usual_s": "usual checkpoint (s)",
    "usual_of": "checkpoints the usual is the median of",
    "usual_since": "the usual rests on checkpoints since",
    "writes_changed": "writes changed",
    "dhandles_peak": "data handles at their peak",
    "dhandles_first": "data handles at the capture's first sample",
    "deleted": "documents deleted",
    "expected_by_chance": "spikes expected by chance",
    "plan_summary": "plan",
    "would_tell": "would tell",
    "serverstatus_ms": "serverStatus took (ms)",
    "app_evict_seconds": "application threads evicting (thread-seconds)",
    "app_evicted_pages": "pages application threads evicted",
    "app_wait_seconds": "application threads waiting for the cache (thread-seconds)",
    "peak_app_wait_threads": "application threads waiting at the peak",
    "util_pct_mean": "busy on average (%)",
    "usual_util_pct": "busy in its usual hours (%)",
    "await_ms_median": "median wait per request (ms)",
    "await_ms_peak": "longest wait per request (ms)",
    "await_ms_mean": "wait per request on average (ms)",
    "usual_await_ms": "usual wait per request (ms)",
    "device_mb_per_s": "the device read and wrote",
    "seconds_in_checkpoints": "seconds of the window inside checkpoints",
    "device_usual_mb_per_s": "the device's usual throughput",
    "device_read_mb_per_s": "the device read",
    "device_write_mb_per_s": "the device wrote",
    "mongod_read_mb_per_s": "mongod read from its data files",
    "mongod_write_mb_per_s": "mongod wrote to its data files",
    "checkpoint_write_mb_per_s": "checkpoints wrote",
    "journal_write_mb_per_s": "mongod wrote to its journal",
    "another_process_io": "another process's I/O",
}
# A key's parts said in words; units go last, in parentheses.
_PARTS = {
    "ns": "namespace",
    "app": "application",
    "ops": "operations",
    "dhandles": "data handles",
    "util": "utilisation",
    "ttl": "TTL",
    "min": "minimum",
    "max": "maximum",
    "avg": "mean",
    "getmore": "getMore batches",  # the opcounter, as the panels name it
    "await": "wait per request",
}
_UNITS = {"s": "s", "ms": "ms", "pct": "%", "mb": "MB", "gb": "GB", "bytes": "bytes"}


def label(key: str) -> str:
    """An evidence key in words: `writes_per_s` is "writes per second", `checkpoint_longest_s` "checkpoint longest (s)"."""
    if key in LABELS:
        return LABELS[key]
    key = key.removesuffix("_mb_per_s")  # its value says its unit, MB/s (`_rounded`)
    text = re.sub(r"_per_s(?=_|$)", "_per_second", key)
    words, units = [], []
    for part in text.split("_"):
        if part in _UNITS:
            units.append(_UNITS[part])
        elif part:
            words.append(_PARTS.get(part, part))
    said = " ".join(words) or key
    return f"{said} ({', '.join(units)})" if units else said


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _rounded(key: str, value: float) -> str:
    """A number under its key, with the rounding the prose quotes it with: a share (0..1) as the percentage the
    sentences give (`42 %`, not `0.425`), a percentage to a tenth (`22.7`, not `22.67`), milliseconds as `text.ms` says
    them, a mean concurrency to one decimal as the culprit's sentence has it ("2.1 running at once")."""
    parts = key.split("_")
    if parts[-1] == "share":
        return pct(value)
    if "pct" in parts and isinstance(value, float):
        return f"{value:,.1f}"  # a share of the cache to a tenth, as every sentence says it ("dirty 22.7 %")
    if "ms" in parts:
        return milliseconds(value)
    if key == "concurrency":
        return f"{value:,.1f}"
    if key == "held_s":
        return operation_seconds(value)
    if key.endswith("_mb_per_s"):
        return mb_per_s(value)  # as the sentences say a throughput
    return _number(value)


def said(value: Any, offset: Offset = None, within: str = "") -> str:
    """An evidence value as a sentence's part: numbers grouped, times with their zone, a nested record's keys in words
    (`_part`: without the words of `within`, the label of the key it is under)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, dt.datetime):
        return say_time(value, offset)
    if isinstance(value, dt.timedelta):
        return duration(value.total_seconds())
    if isinstance(value, Recommendation):
        return wording.text(value)
    if isinstance(value, InWindow):
        return checkpoints_told(value, offset)
    if is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in fields(value) if f.repr}
    if isinstance(value, dict):
        return ", ".join(f"{_part(within, str(k))} {_value(str(k), v, offset)}" for k, v in value.items())
    if isinstance(value, (list, tuple)) and len(value) > 2 and all(isinstance(v, dt.datetime) for v in value):
        # A loop's 282 restarts: their count, the first and the last (the JSON holds each).
        return first_and_last(list(value), lambda t: say_time(t, offset))
    if isinstance(value, (list, tuple)):
        parts = [said(v, offset) for v in value]
        return "; ".join(f"({p})" if isinstance(v, dict) or is_dataclass(v) else p for p, v in zip(parts, value))
    return str(value)


def _part(within: str, key: str) -> str:
    """A nested record's key in words: its label without the words its record's label (`within`) already says, as
    "deleted" under "documents per second", not "documents deleted"."""
    words = label(key).split(" ")
    kept = [w for w in words if w not in within.split(" ")]
    return " ".join(kept) if kept and len(kept) < len(words) else " ".join(words)


def carriers_told(carried: Sequence[dict[str, Any]]) -> str:
    """The log's slow operations carrying a load, each in words: `shop.orders update, 90 runs, 100 % of the slow
    operations' time, from orders-service`."""
    return "; ".join(
        f"{c.get('ns') or 'an unknown namespace'} {c.get('command') or 'operations'}, {c['runs']:,} run{'s' if c['runs'] != 1 else ''}, "
        f"{pct(c['share'])} of the slow operations' time" + (f", from {c['app']}" if c.get("app") else "")
        for c in carried
    )


# Evidence whose value is a list of records a report says in a sentence of its own.
_RECORDS = {"carried_by": carriers_told}


def setting_name(setting: str) -> str:
    """A setting (`analysis.series.thresholds` key) by the name the customer sets it by: `checkpoint_interval` is syncdelay."""
    return SETTINGS[setting].label if setting in SETTINGS else label(setting)


# Evidence whose value is itself a name of the code, and how a report says it.
_NAMED_VALUES = {
    "setting": setting_name,
    "mechanism": lambda m: MECHANISMS.get(m, m.replace("_", " ")),
    "checkpoint_source": lambda s: SEEN_IN.get(s, s),
    "source": lambda s: SEEN_IN.get(s, s),  # a checkpoint's; a setting's source is already words
}


def checkpoints_told(counted: InWindow, offset: Offset = None) -> str:
    """The checkpoints of a window as one sentence: `30 in 03:00:30 – 03:29:55 UTC, up to 25 s against a usual 1.9 s (the
    median of the 59 in the hour before 03:00:30 UTC), checkpointing 42 % of the time`."""
    return (
        f"{counted.count:,} in {say_window(counted.start, counted.end, offset)}, {counted.against_usual()}, "
        f"checkpointing {pct(counted.time_share)} of the time"
    )


# Evidence keys whose fact another value of the same evidence already says whole, so a report lists it once: the
# checkpoints of a window (one sentence) say their count, longest, share and usual; the load's change says whether the
# writes changed. The JSON keeps every key.
SAID_BY = {
    "checkpoints_in_window": (
        "checkpoints",
        "checkpoint_longest_s",
        "checkpoint_time_share",
        "checkpoint_usual_s",
        "checkpoints_before",
    ),
    "load_change": ("writes_changed",),
    "carried_by": ("ns",),  # the namespace the first of them ran on
}
# Evidence a root cause keeps for the JSON that its block in a report does not list: the finding it rests on (the card
# names its findings), the detector's thresholds and metric paths (the finding's own text explains them, where its
# evidence lists them), the mechanism (the cause's heading says it in words), and a stall of the whole server (the
# cause's sentence says its record whole: how long serverStatus took, the sampling, when it recurred).
NOT_LISTED = ("finding", "thresholds", "metrics", "mechanism", "server_stall", "told_in_headline", "checkpoints_slower")


def evidence_rows(evidence: dict[str, Any], offset: Offset = None) -> list[tuple[str, str]]:
    """(label, value) for each piece of evidence, as a report shows it: each fact once (`SAID_BY`), none for a value
    not known (not "query hash: -")."""
    said_elsewhere = {k for key, keys in SAID_BY.items() if evidence.get(key) is not None for k in keys}
    return [(label(k), _value(k, v, offset)) for k, v in evidence.items() if k not in said_elsewhere and v is not None]


def cause_rows(cause: RootCause, offset: Offset = None) -> list[tuple[str, str]]:
    """A root cause's evidence as its block lists it: its facts, each once, without what is not one (`NOT_LISTED`) nor
    the load's change where its heading says it ("under a steady load", `cause_kind`)."""
    heading = ("load_change", *SAID_BY["load_change"]) if cause_kind(cause) != root_kind(cause.kind) else ()
    return evidence_rows({k: v for k, v in cause.evidence.items() if k not in NOT_LISTED and k not in heading}, offset)


def _value(key: str, value: Any, offset: Offset) -> str:
    """An evidence value under its key: a name of the code (a setting, a mechanism) in words, a number with the
    prose's rounding (`_rounded`), else `said`."""
    if key in _NAMED_VALUES and isinstance(value, str):
        return _NAMED_VALUES[key](value)
    if key in _RECORDS and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return _RECORDS[key](value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _rounded(key, value)
    return said(value, offset, label(key))


def sentence(text: str) -> str:
    """`text` opening a sentence: its first letter raised, nothing else touched."""
    return text[:1].upper() + text[1:]


def no_log_note(looked: Sequence[str], beside: Sequence[str]) -> str:
    """Where the search for a mongod log looked (the paths given, the folders holding each diagnostic.data) when it found
    none, and what cannot be seen without one: the terminal and every report say this one sentence."""
    blind = "the operations, their clients, index builds and transactions behind an incident cannot be seen without one"
    where = f"looked in {', '.join(looked)}" if looked else "looked where the FTDC was given"  # none: paths redacted
    where += f" and beside diagnostic.data in {', '.join(beside)}" if beside else ""
    return f"no mongod log found: {where}; {blind} (--log names one)"


def kind(kind: str, resource: str | None = None) -> str:
    """A finding's kind (and the resource it is about) as the reports say it."""
    return kind_name(kind) + (f" ({resource})" if resource else "")


def kind_heading(kind_: str, resource: str | None = None) -> str:
    """`kind` opening a line: its first letter raised, the rest as the record names it ("TTL deletion burst", where
    `str.capitalize` lowered it to "Ttl deletion burst")."""
    text = kind(kind_, resource)
    return text[:1].upper() + text[1:]


# A root cause's kind (`incident.ROOT_KINDS`) as the reports say it.
ROOT_KINDS = {
    "operation": "an operation",
    "configuration": "the configuration",
    "resource": "a resource",
    "workload": "the workload",
    "restart": "a restart",
    "undetermined": "not determined",
}


def root_kind(kind: str) -> str:
    return ROOT_KINDS.get(kind, kind.replace("_", " "))


# A write load that did not change, as a root cause's heading says it: not "the workload", as if it rose, but what the
# numbers show (dirty data written out too slowly under it, by checkpoints or eviction).
STEADY_LOAD = "dirty data written out too slowly under a steady load"
# The same load where dirty data was below its target when the longest checkpoint began: the checkpoints slowed.
SLOWER_CHECKPOINTS = "checkpoints far slower than usual under a steady load"


def cause_kind(cause: RootCause) -> str:
    """What a root cause is, as its heading says it: its kind in words (`root_kind`), but a steady write load by what
    its numbers show, not "the workload"."""
    if cause.evidence.get("mechanism") == "write_load" and cause.evidence.get("load_change") == "unchanged":
        return SLOWER_CHECKPOINTS if cause.evidence.get("checkpoints_slower") else STEADY_LOAD
    return root_kind(cause.kind)


def window(start: dt.datetime | None, end: dt.datetime | None, offset: Offset = None) -> str:
    """`start – end UTC (how long)`, with the log's own time where its offset differs, as every card and headline
    gives a window."""
    if not (start and end):
        return "no window"
    return f"{say_window(start, end, offset)} ({duration((end - start).total_seconds())})"


def considered(incident: Incident) -> list[tuple[str, str]]:
    """The other causes weighed for the root cause, in rank order, as (heading, sentence): a setting far from what mongod
    or WiredTiger would choose that sets off or worsens the mechanism is a contributing cause, the rest were considered.
    Every format says them beside the root cause (the JSON's `candidates`)."""
    return [
        ("Contributing" if c.kind == "configuration" else "Also considered", f"{cause_kind(c)}: {c.summary}")
        for c in incident.candidates
    ]
