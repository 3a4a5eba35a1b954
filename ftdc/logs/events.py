"""What kind of event a non-slow-query line is, and its typed values.

JSON lines are classified by message id (docs/log-format.md §5: match on the id,
never on `msg`); legacy text lines, which have no id, by their text, natively
(native/src/logs/text_events.rs), into the same columns, TYPED_COLUMNS.
"""

import re

import msgspec

TYPED_COLUMNS = (
    "kind",
    "duration_ms",
    "connection_count",
    "remote",
    "driver",
    "app_name",
    "new_state",
    "old_state",
    "version",
    "host",
    "text",
)
# `text` holds: the message of WiredTiger lines, the wiredtiger_open string of
# storage_config lines (22315, or the legacy "wiredtiger_open config:" line),
# the whole text of other legacy lines.

KIND_BY_ID = {
    22430: "wiredtiger",  # refined to checkpoint / checkpoint_progress below
    22943: "connection_accepted",
    22944: "connection_ended",
    22942: "connection_refused",
    51800: "client_metadata",
    21358: "state_change",
    21215: "election",
    4615652: "election",
    21450: "election",
    21438: "election",
    21444: "election",
    21580: "election",
    # "Stepping down from primary, because a new term has begun": another member was elected while this one was primary.
    21402: "new_term_stepdown",
    # A role change asked for (src/mongo/db/repl: repl_set_commands.cpp, replication_coordinator_impl_elect_v1.cpp):
    # the primary told to step down, a member told to step up, a member taking the primary by priority or to catch up.
    21579: "stepdown_requested",  # "Attempting to step down in response to replSetStepDown command"
    4615661: "stepup_requested",  # "Starting an election due to step up request"
    4615660: "priority_takeover",  # "Starting an election for a priority takeover"
    4615662: "catchup_takeover",  # "Starting an election for a catchup takeover"
    4615611: "startup",
    23403: "build_info",
    22315: "storage_config",
    23377: "shutdown",
    23166: "log_rotation",
    20697: "log_rotation",
    20536: "flow_control",
    22411: "slow_wt_transaction",
    6496400: "slow_network",
    6983000: "slow_network",
    5479200: "ttl",
    8373000: "ticket_stall",
    # The periodic reaper aborting a transaction older than transactionLifetimeLimitSeconds
    # (killAllExpiredTransactions, kill_sessions_local.cpp; component COMMAND).
    20707: "transaction_expired",
    51801: "applied_op",
    20525: "storage_stats_failed",
}
TYPED_IDS = frozenset(KIND_BY_ID)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int64(digits: str) -> int | None:
    """The value of a run of decimal digits, None beyond int64. The length is
    checked first: int() refuses texts of over 4300 digits, and takes time
    quadratic in their length."""
    if len(digits) > 19:
        return None
    value = int(digits)
    return value if value <= INT64_MAX else None


# Checkpoint progress messages (WiredTiger txn_ckpt.c / meta_ckpt.c).
_CHECKPOINT_RAN = re.compile(r"Checkpoint (?:ran|took) (?:for )?(\d+) seconds")
_CHECKPOINT_RUNNING = re.compile(r"Checkpoint has been running for (\d+) seconds")


def checkpoint_kind(text: str) -> tuple[str, int | None] | None:
    """(kind, duration ms) for a WiredTiger checkpoint message, else None."""
    if (m := _CHECKPOINT_RAN.search(text)) is not None:
        return "checkpoint", _seconds_as_ms(m.group(1))
    if (m := _CHECKPOINT_RUNNING.search(text)) is not None:
        return "checkpoint_progress", _seconds_as_ms(m.group(1))
    if "saving checkpoint snapshot" in text or "WT_SESSION.checkpoint" in text:
        return "checkpoint", None
    return None


def _seconds_as_ms(digits: str) -> int | None:
    seconds = int64(digits)
    return seconds * 1000 if seconds is not None and seconds <= INT64_MAX // 1000 else None


def _wiredtiger_text(raw_message: bytes, dropped: list[str]) -> str | None:
    """The message text: a string in 4.4-5.2, `{..., "msg": ...}` in 5.3+."""
    try:
        message = msgspec.json.decode(raw_message)
    except msgspec.DecodeError:
        return None
    except RecursionError:  # msgspec recurses per nesting level
        dropped.append("message")
        return None
    if isinstance(message, dict):
        message = message.get("msg")
    return message if isinstance(message, str) else None


def typed_values(event_id: int | None, component: str, msg: str, attr, dropped: list[str]) -> tuple:
    """Typed columns of a JSON line; `attr` is a json_records.EventAttr or None.
    Attributes that cannot be read are added to `dropped`."""
    kind = "other" if event_id is None else KIND_BY_ID.get(event_id, "other")
    duration = count = remote = driver = app = new_state = old_state = version = host = text = None
    if attr is not None:
        duration, count, remote = attr.durationMillis, attr.connectionCount, attr.remote
        new_state, old_state = attr.newState, attr.oldState
        if attr.doc is not None:
            if attr.doc.driver is not None:
                driver = " ".join(p for p in (attr.doc.driver.name, attr.doc.driver.version) if p)
            if attr.doc.application is not None:
                app = attr.doc.application.name
        if attr.buildInfo is not None:
            version = attr.buildInfo.version
        if attr.host is not None:
            host = attr.host if attr.port is None else f"{attr.host}:{attr.port}"
        if attr.message:
            text = _wiredtiger_text(attr.message, dropped)
        if attr.config is not None:
            text = attr.config
        if event_id == 20707:
            text = _expired_text(attr)
        if event_id == 5479200:
            text = _ttl_text(attr)
    if (event_id == 22430 or component.startswith("WT")) and text is not None:
        kind = "wiredtiger"
        found = checkpoint_kind(text)
        if found is None and component == "WTCHKPT":
            found = ("checkpoint", None)
        if found is not None:
            kind, duration = found
    return kind, duration, count, remote, driver, app, new_state, old_state, version, host, text


# The holder of a transaction the reaper aborted, in the words of 4.2's line (which the text column holds whole there):
# "... txnNumber 7 on session with lsid <UUID> ..." (the UUID bare, or as `{ id: UUID("...") ...`).
_EXPIRED_HOLDER = re.compile(r"txnNumber (\d+) on session with lsid (?:\{ id: UUID\(\")?([0-9A-Fa-f-]{36})")


def _expired_text(attr) -> str | None:
    """A 4.4+ reaper abort's holder as 4.2's line words it, so one reading serves both (`expired_holder`)."""
    number = attr.txnNumberAndRetryCounter.txnNumber if attr.txnNumberAndRetryCounter is not None else attr.txnNumber
    session = attr.sessionId.uuid if attr.sessionId is not None else None
    if number is None or session is None:
        return None
    return f"Aborting transaction with txnNumber {number} on session with lsid {session}"


def expired_holder(text: str | None) -> tuple[str, int] | None:
    """(session UUID, transaction number) of a reaper abort's text, either log format; None when it names neither."""
    found = _EXPIRED_HOLDER.search(text or "")
    return (found.group(2).lower(), int(found.group(1))) if found else None


def _ttl_text(attr) -> str | None:
    """A TTL pass's collection, index and documents deleted (5479200), as `ttl_pass` reads them back."""
    if attr.namespace is None:
        return None
    return msgspec.json.encode({"ns": attr.namespace, "index": attr.index, "deleted": attr.numDeleted}).decode()


def ttl_pass(text: str | None) -> tuple[str, str | None, int | None] | None:
    """(namespace, index, documents deleted) of a TTL pass line's text; None when it names no namespace."""
    try:
        found = msgspec.json.decode(text or "")
    except msgspec.DecodeError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("ns"), str):
        return None
    index, deleted = found.get("index"), found.get("deleted")
    return found["ns"], index if isinstance(index, str) else None, deleted if isinstance(deleted, int) else None
