"""The advice rules of issue 18, checked from the outside on a finished analysis (not through the
validator that enforces them): nothing harmful, nothing contradictory, `current` the node's own value.

    advice_problems(analysis) -> list[str]   # empty when every recommendation the report makes is sound
"""

from __future__ import annotations

import re

import polars as pl

from analysis.advice.wording import text
from analysis.settings import SETTINGS

# Names that mean nothing to a reader: constants (MIN_S, EPISODE_GAP), source files (api_data.py, conn_cache.c),
# sections of our documents (§5 of the metrics page), local paths.
INTERNAL = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[\w/]+\.(?:py|c|rst)\b|METRICS\.md|§\s*\d|/(?:work|home|tmp|root|Users)/")

# Where application threads join eviction: the trigger and the level it is compared with (% of the cache); the
# trigger each target stays under. Facts from the settings' records; the rules are checked here, apart from the validator.
TRIGGER_LEVELS = {name: record.level for name, record in SETTINGS.items() if record.level}
TARGET_OF = {name: record.below for name, record in SETTINGS.items() if record.below}
WRITES = {"update", "delete", "findAndModify", "findandmodify", "bulkWrite"}


def made(analysis) -> list[tuple[object, object, object, str]]:
    """(recommendation, start, end, where) for every piece of advice the report makes about this node."""
    out = []
    for i in analysis.incidents:
        for cause in [i.root_cause, *i.candidates]:
            out += [(r, i.start, i.end, f"{i.id} cause") for r in cause.recommendations]
        out += [(r, i.start, i.end, i.id) for r in i.recommendations]
    for f in analysis.findings:
        out += [(r, f.start, f.end, f.id) for r in f.recommendations]
        out += [(r, f.start, f.end, f"{f.id} culprit") for c in f.culprits + f.causes for r in c.recommendations]
    return out


def _usual(analysis, column: str):
    return analysis.series.select(pl.col(column).median()).item() if column in analysis.series.columns else None


def advice_problems(analysis) -> list[str]:
    problems = []
    proposed: dict[str, set] = {}
    t = analysis.thresholds
    for rec, start, end, where in made(analysis):
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
        if name == "checkpoint_interval" and not 10 <= rec.proposed < 300:
            problems.append(
                f"{where}: syncdelay {rec.proposed} proposed (0 turns checkpoints off; seconds or many minutes are the problem)"
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
    for f in analysis.findings:
        breaches = f.evidence.get("breaches") if f.kind == "cache_pressure" else None
        if breaches and "fill" not in breaches and f.recommendations and f.recommendations[0].action == "resize":
            problems.append(f"{f.id}: dirty data past its trigger first told to buy cache")
        if breaches and {"dirty", "updates"} & set(breaches) and f.recommendations and f.recommendations[0].action == "resize":
            problems.append(f"{f.id}: a breach driven by dirty data first told to buy cache")
    return problems
