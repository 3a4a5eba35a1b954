"""A shard's chunk migrations as a root-cause candidate: migrations began (or the range deleter removed the donated
documents) in the window of a finding whose mechanism they can be, as the finding itself counted them.

A donor reads the chunk's documents through its cache and sends them; the recipient inserts them and builds their
index entries; after the move the donor's range deleter removes them. Each is work the clients did not ask for, on the
same cache, disk and tickets: operations slow while it runs. The finding counts them once (its evidence); this tells
them as the cause, with what moving chunks costs and what bounds it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from analysis.advice.recommendation import advise
from analysis.findings.context import Context
from analysis.findings.detectors import explained_by
from analysis.findings.finding import Finding
from analysis.incidents.incident import RootCause

MIGRATION_KINDS = explained_by("chunk_migration")


def chunk_migrations(ctx: Context, kinds: dict[str, list[Finding]], start: dt.datetime, end: dt.datetime) -> list[RootCause]:
    """The migrations the chain's findings counted in their windows, the most of them first: one candidate."""
    counted = [
        (f, f.evidence["migrations"])
        for kind in MIGRATION_KINDS
        for f in kinds.get(kind, [])
        if isinstance(f.evidence.get("migrations"), dict)
    ]
    if not counted:
        return []
    _, moved = max(counted, key=lambda c: (c[1]["chunk_migrations"], c[1]["range_deleted_documents"]))
    parts = []
    if moved["chunk_migrations"]:
        n = moved["chunk_migrations"]
        parts.append(f"{n:,} chunk migration{'s' if n != 1 else ''} on this shard")
    if moved["range_deleted_documents"]:
        parts.append(f"{moved['range_deleted_documents']:,} documents removed by the range deleter")
    if not parts:
        parts.append(f"{moved['log_lines']:,} lines of chunk migrations in the log")
    # Counted by the rise's finding (its id in `findings`), which stays the title's effect: the migrations → the rise.
    evidence: dict[str, Any] = {"mechanism": "chunk_migration", **moved}
    return [
        RootCause(
            kind="workload",
            summary="The balancer's chunk migrations: " + " and ".join(parts) + " while operations ran slower",
            evidence=evidence,
            headline="Chunk migrations (" + " and ".join(parts) + ")",
            findings=[f.id for f, _ in counted],
            recommendations=[
                advise(
                    "change_workload",
                    "Set a balancing window (config.settings, balancer activeWindow) to the hours of least load, so that "
                    "chunks move when the clients do not need the shard",
                    "migrations read, copy and later delete the chunks' documents through the same cache and disks as the "
                    "clients' operations",
                )
            ],
        )
    ]
