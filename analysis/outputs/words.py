"""What the reports call things: a finding's kind by its detector's name, an evidence key by a label, an evidence
value as people read it, a time with its zone. Rendered here, at the edge: the data keeps its identifiers (the JSON
carries them as keys), the prose a support engineer forwards never shows one.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import fields, is_dataclass
from typing import Any

from analysis.advice import wording
from analysis.advice.recommendation import Recommendation
from analysis.findings.detectors import kind_name
from analysis.incidents.incident import MECHANISMS, Incident
from analysis.series.checkpoints import SEEN_IN
from analysis.settings import SETTINGS
from analysis.text import duration, milliseconds, pct
from ftdc.timeutil import say_time, say_window

# Evidence keys whose words are not their parts read one by one.
LABELS = {
    "carried_by": "carried by (the log's slow operations)",
    "held_s": "held for (s)",
    "query_hash": "query hash",
    "p_value": "p-value",
    "ns": "namespace",
    "app": "application",
    "op": "operation",
    "dirty_pct_peak": "dirty data at its peak (% of the cache)",
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
    "expected_by_chance": "spikes expected by chance",
    "plan_summary": "plan",
    "would_tell": "would tell",
    "serverstatus_ms": "serverStatus took (ms)",
    "app_evict_seconds": "application threads evicting (thread-seconds)",
    "app_evicted_pages": "pages application threads evicted",
    "app_wait_seconds": "application threads waiting for the cache (thread-seconds)",
    "peak_app_wait_threads": "application threads waiting at the peak",
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
}
_UNITS = {"s": "s", "ms": "ms", "pct": "%", "mb": "MB", "gb": "GB", "bytes": "bytes"}


def label(key: str) -> str:
    """An evidence key in words: `writes_per_s` is "writes per second", `checkpoint_longest_s` "checkpoint longest (s)"."""
    if key in LABELS:
        return LABELS[key]
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
    sentences give (`42 %`, not `0.425`), milliseconds as `text.ms` says them, a mean concurrency to one decimal as the
    culprit's sentence has it ("2.1 running at once")."""
    parts = key.split("_")
    if parts[-1] == "share":
        return pct(value)
    if "ms" in parts:
        return milliseconds(value)
    if key == "concurrency":
        return f"{value:,.1f}"
    return _number(value)


def said(value: Any, offset: dt.timedelta | None = None) -> str:
    """An evidence value as a sentence's part: numbers grouped, times with their zone, a nested record's keys in words."""
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
    if is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in fields(value) if f.repr}
    if isinstance(value, dict):
        return ", ".join(f"{label(str(k))} {_value(str(k), v, offset)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        parts = [said(v, offset) for v in value]
        return "; ".join(f"({p})" if isinstance(v, dict) or is_dataclass(v) else p for p, v in zip(parts, value))
    return str(value)


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


def evidence_rows(evidence: dict[str, Any], offset: dt.timedelta | None = None) -> list[tuple[str, str]]:
    """(label, value) for each piece of evidence, as a report shows it."""
    return [(label(k), _value(k, v, offset)) for k, v in evidence.items()]


def _value(key: str, value: Any, offset: dt.timedelta | None) -> str:
    """An evidence value under its key: a name of the code (a setting, a mechanism) in words, a number with the
    prose's rounding (`_rounded`), else `said`."""
    if key in _NAMED_VALUES and isinstance(value, str):
        return _NAMED_VALUES[key](value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _rounded(key, value)
    return said(value, offset)


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


def window(start: dt.datetime | None, end: dt.datetime | None, offset: dt.timedelta | None = None) -> str:
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
        ("Contributing" if c.kind == "configuration" else "Also considered", f"{root_kind(c.kind)}: {c.summary}")
        for c in incident.candidates
    ]
