"""Decode a block of JSON (4.4+) log lines into raw column lists.

Lines go through a byte pre-filter on the message id: slow-query lines (id 51803)
are decoded with the slow-query type, every other line with the event type. The
routing is checked after decoding, so a line the filter misjudged is decoded
again with the right type rather than lost. A line that is not valid JSON, or
not a log object, is one problem; a line whose attributes have unexpected types
keeps its other attributes (json_records.coerce).
"""

from dataclasses import dataclass, field
from operator import attrgetter

import msgspec
import orjson

from . import events
from .json_records import (
    EventAttr,
    EventLine,
    SlowQueryAttr,
    SlowQueryLine,
    coerce,
)
from .problems import ProblemLog

SLOW_QUERY_ID = 51803
SLOW_QUERY_MARK = b'"id":51803'
_decode_slow = msgspec.json.Decoder(SlowQueryLine).decode
_decode_event = msgspec.json.Decoder(EventLine).decode
_decode_event_attr = msgspec.json.Decoder(EventAttr).decode


def _raw_text(raw) -> str:
    return str(raw, "utf-8")  # msgspec.Raw supports the buffer protocol



@dataclass
class JsonBlock:
    """Decoded lines of one block: the records and their 1-based line numbers."""

    slow: list = field(default_factory=list)
    slow_lines: list = field(default_factory=list)
    slow_raw: list = field(default_factory=list)
    events: list = field(default_factory=list)
    event_lines: list = field(default_factory=list)


def decode_lines(lines: list[bytes], first_line: int, problems: ProblemLog) -> JsonBlock:
    block = JsonBlock()
    slow, slow_lines, slow_raw = block.slow.append, block.slow_lines.append, block.slow_raw.append
    for number, line in enumerate(lines, first_line):
        if SLOW_QUERY_MARK in line:
            try:
                record = _decode_slow(line)
            except msgspec.ValidationError:
                record = _lenient(line, number, problems)
            except msgspec.DecodeError as exc:
                problems.add(number, f"not JSON: {exc}", line)
                continue
            if record is None:
                continue
            if record.id == SLOW_QUERY_ID:
                slow(record)
                slow_lines(number)
                slow_raw(line)
                continue
        if not line.strip():
            problems.add(number, "blank line", line)
            continue
        try:
            record = _decode_event(line)
        except msgspec.ValidationError:
            record = _lenient(line, number, problems)
        except msgspec.DecodeError as exc:
            problems.add(number, f"not JSON: {exc}", line)
            continue
        if record is None:
            continue
        if record.id == SLOW_QUERY_ID:  # missed by the byte filter (unusual spacing)
            record = _lenient(line, number, problems)
            if record is not None:
                slow(record)
                slow_lines(number)
                slow_raw(line)
            continue
        block.events.append(record)
        block.event_lines.append(number)
    return block


def _lenient(line: bytes, number: int, problems: ProblemLog):
    """Decode a valid JSON line whose fields have unexpected types, or report it."""
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        problems.add(number, f"not JSON: {exc}", line)
        return None
    if not isinstance(parsed, dict):
        problems.add(number, "not a log object", line)
        return None
    is_slow = parsed.get("id") == SLOW_QUERY_ID
    record, dropped = coerce(SlowQueryLine if is_slow else EventLine, parsed)
    if "t" in dropped or "t" not in parsed:
        problems.add(number, "no timestamp", line)
        return None
    if is_slow and isinstance(parsed.get("attr"), dict):
        record.attr, dropped_attr = coerce(SlowQueryAttr, parsed["attr"])
        dropped = [name for name in dropped if name != "attr"] + [f"attr.{n}" for n in dropped_attr]
    if dropped:
        problems.add(number, "unexpected types, dropped: " + ", ".join(dropped), line)
    return record


def _field(values: list, name: str) -> list:
    """`value.name` for each optional struct, None where the struct is missing."""
    return [None if v is None else getattr(v, name) for v in values]


def _text_or_none(raws) -> list:
    return [_raw_text(raw) if raw else None for raw in raws]


def _lock_texts(lines: list[bytes], raws) -> list:
    """`locks` as text where the line waited for a lock at all, else None.

    The waits are summed vectorised in columns.finish_slow_ops; most lines have
    none, and the byte test skips them without converting anything.
    """
    return [str(raw, "utf-8") if b'"timeAcquiringMicros":{' in line else None for line, raw in zip(lines, raws)]


def slow_columns(records: list[SlowQueryLine], line_numbers: list[int], raw_lines: list[bytes]) -> dict:
    """Column lists in the order of schema.RAW_SLOW_OPS."""
    attrs = [r.attr if r.attr is not None else _EMPTY_ATTR for r in records]

    def get(name):
        return list(map(attrgetter(name), attrs))

    ok = [None if v is None else v != 0 for v in get("ok")]
    err_names = get("errName")
    ok = [o if o is not None else (None if e is None else False) for o, e in zip(ok, err_names)]
    query_hash = [q if q is not None else p for q, p in zip(get("queryHash"), get("planCacheShapeHash"))]
    storage = get("storage")
    data, waits = _field(storage, "data"), _field(storage, "timeWaitingMicros")
    queues = get("queues")
    execution, ingress = _field(queues, "execution"), _field(queues, "ingress")
    return {
        "t": [r.t.date for r in records],
        "component": list(map(attrgetter("c"), records)),
        "connection": list(map(attrgetter("ctx"), records)),
        "op_type": get("type"),
        "ns": get("ns"),
        "app_name": get("appName"),
        "command_json": _text_or_none(get("command")),
        "originating_command_json": _text_or_none(get("originatingCommand")),
        "command_name": None,
        "legacy_shape": None,
        "plan_summary": get("planSummary"),
        "keys_examined": get("keysExamined"),
        "docs_examined": get("docsExamined"),
        "nreturned": get("nreturned"),
        "num_yields": get("numYields"),
        "query_hash": query_hash,
        "plan_cache_key": get("planCacheKey"),
        "query_shape_hash": get("queryShapeHash"),
        "ok": ok,
        "err_name": err_names,
        "err_code": get("errCode"),
        "reslen": get("reslen"),
        "write_conflicts": get("writeConflicts"),
        "lock_wait_micros": None,
        "locks_json": _lock_texts(raw_lines, get("locks")),
        "flow_control_micros": _field(get("flowControl"), "timeAcquiringMicros"),
        "cache_wait_micros": _field(waits, "cache"),
        "schema_lock_wait_micros": _field(waits, "schemaLock"),
        "handle_lock_wait_micros": _field(waits, "handleLock"),
        "bytes_read": _field(data, "bytesRead"),
        "read_micros": _field(data, "timeReadingMicros"),
        "bytes_written": _field(data, "bytesWritten"),
        "write_micros": _field(data, "timeWritingMicros"),
        "execution_queued_micros": _field(execution, "totalTimeQueuedMicros"),
        "execution_admissions": _field(execution, "admissions"),
        "ingress_queued_micros": _field(ingress, "totalTimeQueuedMicros"),
        "working_ms": get("workingMillis"),
        "cpu_nanos": get("cpuNanos"),
        "remote": get("remote"),
        "duration_ms": get("durationMillis"),
        "truncated": _text_or_none(map(attrgetter("truncated"), records)),
        "truncated_size": _text_or_none(map(attrgetter("size"), records)),
        "line": line_numbers,
    }


_EMPTY_ATTR = SlowQueryAttr()


def event_columns(records: list[EventLine], line_numbers: list[int], problems: ProblemLog) -> dict:
    """Column lists in the order of schema.RAW_EVENTS."""
    columns = {name: [] for name in events.TYPED_COLUMNS}
    for record, number in zip(records, line_numbers):
        attr = None
        if record.id in events.TYPED_IDS and record.attr:
            try:
                attr = _decode_event_attr(record.attr)
            except msgspec.MsgspecError:
                try:
                    attr, dropped = coerce(EventAttr, msgspec.json.decode(record.attr))
                    problems.add(number, "unexpected types, dropped: attr." + ", attr.".join(dropped), None)
                except (msgspec.DecodeError, TypeError):
                    attr = None
        for name, value in zip(events.TYPED_COLUMNS, events.typed_values(record.id, record.c, record.msg, attr)):
            columns[name].append(value)
    return {
        "t": [r.t.date for r in records],
        "severity": list(map(attrgetter("s"), records)),
        "component": list(map(attrgetter("c"), records)),
        "id": list(map(attrgetter("id"), records)),
        "ctx": list(map(attrgetter("ctx"), records)),
        "msg": list(map(attrgetter("msg"), records)),
        **columns,
        "line": line_numbers,
    }
