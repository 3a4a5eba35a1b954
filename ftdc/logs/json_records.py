"""msgspec types for the attributes of the event lines that get typed columns.

The native decoder (native/src/logs/) hands these attributes over as JSON
text; typed decoding skips every attribute the event columns do not use.
`msgspec.Raw` keeps `message` as the exact bytes the server wrote. Structs are
`gc=False`: they hold no cycles.
"""

from typing import Annotated

import msgspec

# Integers are checked against int64 as they are decoded: a larger one (say
# 2**64 - 1) would otherwise stay a Python int that no int64 column can hold.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _Struct(msgspec.Struct, gc=False):
    pass


class Driver(_Struct):
    name: str | None = None
    version: str | None = None


class Application(_Struct):
    name: str | None = None


class ClientDoc(_Struct):
    driver: Driver | None = None
    application: Application | None = None


class BuildInfo(_Struct):
    version: str | None = None


class Uuid(_Struct):
    uuid: str | None = msgspec.field(default=None, name="$uuid")


class TxnCounter(_Struct):
    txnNumber: Int64 | None = None


class EventAttr(_Struct):
    """Attributes of the event ids that get typed columns (events.TYPED_IDS)."""

    connectionCount: Int64 | None = None
    remote: str | None = None
    doc: ClientDoc | None = None
    newState: str | None = None
    oldState: str | None = None
    # A string in 4.4-5.2, an object in 5.3+ (docs/log-format.md §5).
    message: msgspec.Raw = msgspec.Raw(b"")
    durationMillis: Int64 | None = None
    buildInfo: BuildInfo | None = None
    host: str | None = None
    port: Int64 | None = None
    # 22315 "Opening WiredTiger": the whole wiredtiger_open string (cache, eviction, checkpoint settings).
    config: str | None = None
    # 20707, the reaper's abort: the session (its lsid's UUID) and the transaction number, alone (4.4-5.x) or with the
    # retry counter (6.0+).
    sessionId: Uuid | None = None
    txnNumber: Int64 | None = None
    txnNumberAndRetryCounter: TxnCounter | None = None
    # 5479200, a TTL pass: the collection and the index it deleted through, and how many documents.
    namespace: str | None = None
    index: str | None = None
    numDeleted: Int64 | None = None


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
