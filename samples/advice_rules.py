"""The advice rules of issues 18 and 39, checked from the outside on a finished analysis (not through the
validator that enforces them): nothing harmful, nothing contradictory, `current` the node's own value.

    advice_problems(analysis) -> list[str]   # empty when every recommendation the report makes is sound
"""

from __future__ import annotations

import re

import polars as pl

from analysis.advice.wording import text
from analysis.findings.context import major_minor
from analysis.settings import SETTINGS
from ftdc.frames import TIME_COLUMN

# Names that mean nothing to a reader: constants (MIN_S, EPISODE_GAP), source files (api_data.py, conn_cache.c),
# sections of our documents (§5 of the metrics page), local paths.
INTERNAL = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[\w/]+\.(?:py|c|rst)\b|METRICS\.md|§\s*\d|/(?:work|home|tmp|root|Users)/")

# Where application threads join eviction: the trigger and the level it is compared with (% of the cache); the
# trigger each target stays under. Facts from the settings' records; the rules are checked here, apart from the validator.
TRIGGER_LEVELS = {name: record.level for name, record in SETTINGS.items() if record.level}
TARGET_OF = {name: record.below for name, record in SETTINGS.items() if record.below}
WRITES = {"update", "delete", "findAndModify", "findandmodify", "bulkWrite"}


# Findings whose mechanism is the storage engine not keeping up; root causes that read the working set through the cache.
STORAGE_ENGINE = {"cache_pressure", "checkpoint_stall", "disk_saturation"}
SCANS = {"collscan", "index_build"}
# Words of advice that only a replica set's member can follow.
MEMBERS_ONLY = re.compile(r"secondar|one member at a time|step(?:ping)? (?:it )?down", re.I)
# Words that send the reader back to the report instead of saying what to do, or make it hang on a condition.
NOT_AN_ACTION = re.compile(r"^(?:Read this|Look at .* in the same window|Check the disk during)|\bonly (?:when|if)\b")
# Checkpoints taking this share of a window ran back to back: a shorter interval starts none sooner.
BACK_TO_BACK = 0.5
# mongod's syncdelay (storage.syncPeriodSecs) by default: the one value advice may propose for it.
SYNCDELAY_DEFAULT_S = 60


def made(analysis) -> list[tuple[object, object, object, str, object]]:
    """(recommendation, start, end, where, incident or None) for every piece of advice the report makes about this node."""
    out = []
    of = {f_id: i for i in analysis.incidents for f_id in i.finding_ids}
    for i in analysis.incidents:
        for cause in [i.root_cause, *i.candidates]:
            out += [(r, i.start, i.end, f"{i.id} cause", i) for r in cause.recommendations]
        out += [(r, i.start, i.end, i.id, i) for r in i.recommendations]
    for f in analysis.findings:
        i = of.get(f.id)
        out += [(r, f.start, f.end, f.id, i) for r in f.recommendations]
        out += [(r, f.start, f.end, f"{f.id} culprit", i) for c in f.culprits + f.causes for r in c.recommendations]
    return out


def _standalone(analysis) -> bool:
    states = analysis.series["repl_state"].drop_nulls() if "repl_state" in analysis.series.columns else None
    return analysis.node.replica_set is None and (states is None or states.is_empty())


def _secondary_within(analysis, start, end) -> bool:
    if "repl_state" not in analysis.series.columns or start is None:
        return False
    return bool((analysis.series.filter(pl.col(TIME_COLUMN).is_between(start, end))["repl_state"] == 2).any())


def _role_recorded(analysis, start, end) -> bool:
    if "repl_state" not in analysis.series.columns:
        return False
    states = analysis.series.select(TIME_COLUMN, "repl_state").drop_nulls()
    return (states if start is None else states.filter(pl.col(TIME_COLUMN).is_between(start, end))).height > 0


def _held(findings) -> bool:
    """An operation in the log held the findings' resource: it spent half its time there working, not waiting."""
    return any(c.held_s >= c.overlap_s / 2 for f in findings for c in f.culprits + f.causes)


def _checkpoint_share(analysis, start, end) -> float:
    """The share of [start, end] checkpoints ran (each clipped to it; overlapping ones counted once)."""
    if start is None or end is None or end <= start:
        return 0.0
    busy, cursor = 0.0, start
    for c in sorted(analysis.checkpoints, key=lambda c: c.start):
        a, b = max(c.start, cursor), min(c.end, end)
        if b > a:
            busy += (b - a).total_seconds()
            cursor = b
    return busy / (end - start).total_seconds()


def _mostly_mongod(analysis, finding) -> bool:
    """mongod's own reads and writes (its data files and its journal) were half the saturated device's throughput or more."""
    rows = analysis.series.filter(pl.col(TIME_COLUMN).is_between(finding.start, finding.end))
    device = f"disk_mb_per_s.{finding.evidence['device']}"
    own = [c for c in ("mongod_read_mb_per_s", "mongod_write_mb_per_s", "journal_write_mb_per_s") if c in rows.columns]
    if device not in rows.columns or len(own) < 3:
        return False
    return sum(rows[c].mean() or 0 for c in own) >= 0.5 * (rows[device].mean() or 0)


def _shape_runs(analysis, rec):
    """The logged run times (ms) of the query whose culprit made the maxTimeMS `rec`, or None."""
    from analysis.findings.culprits import runs_of

    if analysis.logs is None:
        return None
    for f in analysis.findings:
        for c in f.culprits + f.causes:
            if any((r.action, r.target, r.operation) == (rec.action, rec.target, rec.operation) for r in c.recommendations):
                return runs_of(analysis.logs.slow_ops, c)["duration_ms"]
    return None


def fits_the_node(analysis, rec, start, end, where: str, incident) -> list[str]:
    """Issue 39's rules: topology, version, the node's own configuration, the runs a limit stops, the incident it answers."""
    problems = []
    words = text(rec)
    if NOT_AN_ACTION.search(rec.what):
        problems.append(f"{where}: {words!r} is not an action")
    if _standalone(analysis) and (rec.action == "read_from_secondaries" or MEMBERS_ONLY.search(words)):
        problems.append(f"{where}: a standalone told {words!r}")
    if rec.action == "read_from_secondaries" and _secondary_within(analysis, start, end):
        problems.append(f"{where}: a node that was a secondary in the window told to move its reads to a secondary")
    if rec.action == "read_from_secondaries" and not _role_recorded(analysis, start, end):
        problems.append(f"{where}: a node whose replica set state is not recorded told to move its reads to a secondary")
    about = incident.findings if incident else [f for f in analysis.findings if where.startswith(f.id)]
    if rec.assumes in ("operations_held", "operations_unnamed") and not _held(about):
        problems.append(f"{where}: {words!r} about operations that held a resource, and the log shows none that did")
    if (
        rec.setting == "checkpoint_interval"
        and rec.proposed < (rec.current.value or 0)
        and (share := _checkpoint_share(analysis, start, end)) >= BACK_TO_BACK
    ):
        problems.append(f"{where}: checkpoints more often where they already ran {share:.0%} of the window")
    kinds = {f.kind for f in incident.findings} if incident else set()
    mechanism = incident.root_cause.evidence.get("mechanism") if incident else None
    if rec.caveat and "no scan is behind the fill" in rec.caveat and mechanism in SCANS:
        problems.append(f"{where}: {words!r} in an incident whose root cause is {mechanism}")
    version = major_minor(analysis.node.version)
    if rec.setting in ("read_tickets", "write_tickets") and rec.current.value is None and version and version >= (7, 0):
        if kinds & STORAGE_ENGINE or mechanism in SCANS or not rec.caveat:
            problems.append(
                f"{where}: a fixed ticket pool on {analysis.node.version} against {sorted(kinds)} / {mechanism}: {words!r}"
            )
    if rec.setting and rec.current.origin == "configured" and rec.current.value is not None:
        record = SETTINGS[rec.setting]
        default = record.default_on(version)
        way = "higher" if rec.proposed > rec.current.value else "lower"
        if record.harmful == way and rec.current.value != default:
            problems.append(f"{where}: {rec.setting} set to {rec.current.value} on purpose (default {default}) moved {way}")
    if rec.action == "add_max_time_ms":
        runs = _shape_runs(analysis, rec)
        if runs is not None and runs.len():
            if rec.proposed < (runs.median() or 0):
                problems.append(f"{where}: maxTimeMS {rec.proposed:g} ms below the median run {runs.median():g} ms")
            if not (runs > rec.proposed).any():
                problems.append(f"{where}: maxTimeMS {rec.proposed:g} ms stops none of the {runs.len()} runs")
        if not rec.caveat:
            problems.append(f"{where}: maxTimeMS without what becomes of the runs it stops")
    return problems


def _usual(analysis, column: str):
    return analysis.series.select(pl.col(column).median()).item() if column in analysis.series.columns else None


def advice_problems(analysis) -> list[str]:
    problems = []
    proposed: dict[str, set] = {}
    t = analysis.thresholds
    for rec, start, end, where, incident in made(analysis):
        problems += fits_the_node(analysis, rec, start, end, where, incident)
        words = text(rec)
        if INTERNAL.search(words) or "culprits below" in words:  # the console prints no culprit table below its advice
            problems.append(f"{where}: {words!r} names internals or a table that may not be shown")
        if rec.action == "add_max_time_ms" and rec.operation in WRITES and not rec.caveat:
            problems.append(f"{where}: maxTimeMS on a {rec.operation} without saying it stays partly applied")
        name = rec.setting
        if name is None:
            continue
        proposed.setdefault(name, set()).add(rec.proposed)
        had = {s.value for s in t.in_effect(name, start, end)}
        measured = name == "cache_size" and had == {None}
        if rec.current.value not in had and not measured:
            problems.append(f"{where}: {name} quoted as {rec.current.value}, the node had {had}")
        if (rec.current.origin == "inferred") != rec.current.source.startswith("inferred"):
            problems.append(f"{where}: {name} from {rec.current.source!r} said to be {rec.current.origin}")
        if rec.proposed == rec.current.value:
            problems.append(f"{where}: {name} proposed at the value it has, {rec.proposed}")
        if name == "checkpoint_interval" and rec.proposed != SYNCDELAY_DEFAULT_S:
            problems.append(
                f"{where}: syncdelay {rec.proposed} proposed (only mongod's default {SYNCDELAY_DEFAULT_S} s is: MongoDB keeps "
                "syncPeriodSecs at its default, and SERVER-75162 reports a shorter syncdelay changes nothing at runtime)"
            )
        if name.endswith("_tickets") and (rec.current.value == 0 or rec.proposed < 1):
            problems.append(f"{where}: {name} {rec.current.value} → {rec.proposed} (0 is throughput probing on 7.0+)")
        if name in TRIGGER_LEVELS and (usual := _usual(analysis, TRIGGER_LEVELS[name])) is not None and rec.proposed <= usual:
            problems.append(f"{where}: {name}={rec.proposed} where the node usually runs ({usual:.1f} %)")
        if (
            name in TARGET_OF
            and (trigger := t.within(start, end).value(TARGET_OF[name])) is not None
            and trigger <= 100
            and rec.proposed >= trigger
        ):
            problems.append(f"{where}: {name}={rec.proposed} not below {TARGET_OF[name]}={trigger}")
        if name.startswith("eviction_threads") and not 1 <= rec.proposed <= 20:
            problems.append(f"{where}: {name}={rec.proposed} outside WiredTiger's 1-20")
        if name == "transaction_lifetime_limit" and not (1 <= rec.proposed < rec.current.value and rec.caveat):
            problems.append(
                f"{where}: transactionLifetimeLimitSeconds {rec.current.value} → {rec.proposed} (only ever lowered, to 1 s at least, "
                "saying that longer transactions are aborted)"
            )
        if name == "cache_size" and analysis.node.memory_mb and rec.proposed > 0.8 * analysis.node.memory_mb * 2**20:
            problems.append(f"{where}: a {rec.proposed / 2**30:.1f} GB cache on {analysis.node.memory_mb} MB of RAM")
    problems += [
        f"{name} proposed at {sorted(values)}: one setting, one value" for name, values in proposed.items() if len(values) > 1
    ]
    for i in analysis.incidents:
        aimed = {r.action for r in i.recommendations if r.target is not None and r.action == "read_from_secondaries"}
        problems += [
            f"{i.id}: {text(r)!r} beside advice aimed at a namespace for the same action"
            for r in i.recommendations
            if r.target is None and r.setting is None and r.action in aimed
        ]
    for f in analysis.findings:
        if f.kind == "disk_saturation" and f.recommendations:
            if f.evidence.get("mechanism") == "another_process" and f.recommendations[0].action != "investigate":
                problems.append(f"{f.id}: another process did the I/O, and the first fix is not to find it")
            if any(r.action == "batch_writes" for r in f.recommendations) and not _mostly_mongod(analysis, f):
                problems.append(f"{f.id}: told to reduce mongod's own load without its I/O being most of the device's")
        breaches = f.evidence.get("breaches") if f.kind == "cache_pressure" else None
        if breaches and "fill" not in breaches and f.recommendations and f.recommendations[0].action == "resize":
            problems.append(f"{f.id}: dirty data past its trigger first told to buy cache")
        if breaches and {"dirty", "updates"} & set(breaches) and f.recommendations and f.recommendations[0].action == "resize":
            problems.append(f"{f.id}: a breach driven by dirty data first told to buy cache")
    return problems
