"""Column names and dtypes of the frames the log reader returns.

One place for them, so the JSON decoder, the text decoder and the tests agree.
"""

import polars as pl

from ftdc.logs.events import TYPED_COLUMNS

UTC_MS = pl.Datetime("ms", "UTC")

SLOW_OPS = {
    "ts": UTC_MS,
    "started": UTC_MS,
    "duration_ms": pl.Int64,
    "node": pl.String,
    "component": pl.String,
    "op_type": pl.String,
    "command": pl.String,
    # True for the per-statement WRITE lines that repeat part of a write command's
    # COMMAND line (one of the same connection covers their time); counts and latency
    # sums must skip them. A WRITE line no command line covers is an operation of its own.
    "write_statement": pl.Boolean,
    "ns": pl.String,
    "db": pl.String,
    "coll": pl.String,
    "plan_summary": pl.String,
    "plan_kind": pl.String,
    "keys_examined": pl.Int64,
    "docs_examined": pl.Int64,
    "nreturned": pl.Int64,
    "num_yields": pl.Int64,
    "query_hash": pl.String,
    "plan_cache_key": pl.String,
    "query_shape_hash": pl.String,
    "shape": pl.String,
    "app_name": pl.String,
    "client": pl.String,
    "connection": pl.String,
    "remote": pl.String,
    "ok": pl.Boolean,
    "err_name": pl.String,
    "err_code": pl.Int64,
    "reslen": pl.Int64,
    "cache_wait_micros": pl.Int64,
    "schema_lock_wait_micros": pl.Int64,
    "handle_lock_wait_micros": pl.Int64,
    "bytes_read": pl.Int64,
    "read_micros": pl.Int64,
    "bytes_written": pl.Int64,
    "write_micros": pl.Int64,
    "execution_queued_micros": pl.Int64,
    "execution_admissions": pl.Int64,
    "ingress_queued_micros": pl.Int64,
    "working_ms": pl.Int64,
    "cpu_nanos": pl.Int64,
    "lock_wait_micros": pl.Int64,
    "flow_control_micros": pl.Int64,
    "write_conflicts": pl.Int64,
    "truncated": pl.String,
    "truncated_size": pl.String,
    "command_json": pl.String,
    "originating_command_json": pl.String,
    "file": pl.String,
    "line": pl.Int64,
}


def _raw(own: dict, final: dict, names: tuple) -> dict:
    """Raw columns `names`, in order: dtypes from `own`, else from the final schema."""
    return {name: own.get(name) or final[name] for name in names}


EVENTS = {
    "ts": UTC_MS,
    "started": UTC_MS,
    "node": pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "component": pl.String,
    "id": pl.Int64,
    "ctx": pl.String,
    "msg": pl.String,
    "duration_ms": pl.Int64,
    "connection_count": pl.Int64,
    "remote": pl.String,
    "driver": pl.String,
    "app_name": pl.String,
    "new_state": pl.String,
    "old_state": pl.String,
    "version": pl.String,
    "text": pl.String,
    "file": pl.String,
    "line": pl.Int64,
}

# Raw event columns in the order the decoders fill them: the timestamp text
# and the start-up `host`, then, with their final dtypes, ones EVENTS has (the typed ones in the
# order events.TYPED_COLUMNS gives them).
RAW_EVENTS_ONLY = {"t": pl.String, "host": pl.String}
RAW_EVENTS = _raw(
    RAW_EVENTS_ONLY,
    EVENTS,
    ("t", "severity", "component", "id", "ctx", "msg", *TYPED_COLUMNS, "line"),
)

PROBLEMS = {
    "file": pl.String,
    "line": pl.Int64,
    "reason": pl.String,
    "text": pl.String,
}


def empty(schema: dict) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
