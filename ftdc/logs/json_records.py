"""msgspec types for the JSON (4.4+) log lines, holding only what the frames need.

Typed decoding lets msgspec skip every other attribute without building Python
objects for it, which is what makes the reader fast on logs that are almost all
slow-query lines. `msgspec.Raw` keeps sub-documents (the command, `truncated`) as
the exact bytes the server wrote. Structs are `gc=False`: they hold no cycles,
and keeping a million of them out of the cyclic collector saves seconds.
"""

from typing import Optional

import msgspec


class _Struct(msgspec.Struct, gc=False):
    pass


class Date(_Struct):
    date: str = msgspec.field(name="$date")


class StorageData(_Struct):
    bytesRead: Optional[int] = None
    timeReadingMicros: Optional[int] = None
    bytesWritten: Optional[int] = None
    timeWritingMicros: Optional[int] = None


class StorageWaits(_Struct):
    cache: Optional[int] = None
    schemaLock: Optional[int] = None
    handleLock: Optional[int] = None


class Storage(_Struct):
    data: Optional[StorageData] = None
    timeWaitingMicros: Optional[StorageWaits] = None


class Queue(_Struct):
    admissions: Optional[int] = None
    totalTimeQueuedMicros: Optional[int] = None


class Queues(_Struct):
    execution: Optional[Queue] = None
    ingress: Optional[Queue] = None


class FlowControl(_Struct):
    timeAcquiringMicros: Optional[int] = None


class SlowQueryAttr(_Struct):
    """`attr` of id 51803, see LOG-FORMAT.md §2."""

    type: Optional[str] = None
    ns: Optional[str] = None
    appName: Optional[str] = None
    command: msgspec.Raw = msgspec.Raw(b"")
    originatingCommand: msgspec.Raw = msgspec.Raw(b"")
    planSummary: Optional[str] = None
    keysExamined: Optional[int] = None
    docsExamined: Optional[int] = None
    nreturned: Optional[int] = None
    numYields: Optional[int] = None
    writeConflicts: Optional[int] = None
    queryHash: Optional[str] = None
    planCacheShapeHash: Optional[str] = None
    planCacheKey: Optional[str] = None
    queryShapeHash: Optional[str] = None
    ok: Optional[float] = None
    errName: Optional[str] = None
    errCode: Optional[int] = None
    reslen: Optional[int] = None
    # Lock waits are summed over resources and modes from the text (columns.py).
    locks: msgspec.Raw = msgspec.Raw(b"")
    flowControl: Optional[FlowControl] = None
    storage: Optional[Storage] = None
    queues: Optional[Queues] = None
    workingMillis: Optional[int] = None
    cpuNanos: Optional[int] = None
    remote: Optional[str] = None
    durationMillis: Optional[int] = None


class SlowQueryLine(_Struct):
    t: Date
    c: str
    id: int
    ctx: str = ""
    attr: Optional[SlowQueryAttr] = None
    truncated: msgspec.Raw = msgspec.Raw(b"")
    size: msgspec.Raw = msgspec.Raw(b"")


class EventLine(_Struct):
    t: Date
    s: str = ""
    c: str = ""
    id: Optional[int] = None
    ctx: str = ""
    msg: str = ""
    attr: msgspec.Raw = msgspec.Raw(b"")


class Driver(_Struct):
    name: Optional[str] = None
    version: Optional[str] = None


class Application(_Struct):
    name: Optional[str] = None


class ClientDoc(_Struct):
    driver: Optional[Driver] = None
    application: Optional[Application] = None


class BuildInfo(_Struct):
    version: Optional[str] = None


class EventAttr(_Struct):
    """Attributes of the event ids that get typed columns (events.TYPED_IDS)."""

    connectionCount: Optional[int] = None
    remote: Optional[str] = None
    doc: Optional[ClientDoc] = None
    newState: Optional[str] = None
    oldState: Optional[str] = None
    # A string in 4.4-5.2, an object in 5.3+ (LOG-FORMAT.md §5).
    message: msgspec.Raw = msgspec.Raw(b"")
    durationMillis: Optional[int] = None
    buildInfo: Optional[BuildInfo] = None
    host: Optional[str] = None
    port: Optional[int] = None


def coerce(struct_type: type, mapping: dict) -> tuple[msgspec.Struct, list[str]]:
    """Build `struct_type` from an already parsed dict, field by field.

    Used on a line whose attributes have unexpected types (strict decoding
    failed): an odd value costs that value, not the line. Returns the struct and
    the names of the fields that were dropped.
    """
    values, dropped = {}, []
    for field in msgspec.structs.fields(struct_type):
        if field.encode_name not in mapping:
            continue
        value = mapping[field.encode_name]
        try:
            if field.type is msgspec.Raw:
                values[field.name] = msgspec.Raw(msgspec.json.encode(value))
            else:
                values[field.name] = msgspec.convert(value, field.type)
        except (msgspec.ValidationError, TypeError):
            dropped.append(field.encode_name)
    return struct_type(**values), dropped
