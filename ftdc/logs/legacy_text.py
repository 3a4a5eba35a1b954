"""Decode legacy text logs (mongod/mongos 2.2 to 4.2) into raw column lists.

Grammar (docs/log-format.md §6, mtools `logevent.py`):
`<ts> [<sev> <COMPONENT>] [<ctx>] <op> <ns> <details> name:value ... <N>ms`.
Slow operations are the lines whose text starts with a CRUD/command verb and
ends in a duration; every other line with a timestamp is an event.
"""

import calendar
import datetime as dt
import re

import polars as pl

from . import events, shell_docs
from .columns import drop_unreadable_ts
from .events import int64
from .problems import ProblemLog
from .schema import RAW_EVENTS, RAW_SLOW_OPS
from .shapes import shape_of_command

_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_CTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?"
_LINE = re.compile(
    rf"^(?P<ts>{_ISO}|{_CTIME})"
    r"(?: +(?P<sev>[FEWID]\d?) +(?P<comp>[A-Z_]+|-))?"
    r"(?: +\[(?P<ctx>[^\]]*)\])?"
    # Matched on the right-stripped line: a lazy `(.*?)\s*$` retries the
    # trailing whitespace from every position, quadratic on a long run of it.
    r" *(?P<text>.*)"
)
_CTIME_PARTS = re.compile(r"([A-Z][a-z]{2}) ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d)(?:\.(\d+))?")
_MONTHS = {name: i for i, name in enumerate(calendar.month_abbr) if name}
_WEEKDAYS = {name: i for i, name in enumerate(calendar.day_abbr)}

# 2.x-4.2 print lines over 10 KB as this warning followed by a shortened line.
_OVERSIZE = re.compile(r"^warning: log line attempted \((\d+)k\) over max size \(\d+k\), printing beginning and end \.\.\. ")

# A slow operation: this head, details, then the duration `[ ]<digits>ms` at
# the end, which slow_op finds without a regex (see there).
_SLOW_OP_HEAD = re.compile(r"(command|query|update|remove|insert|getmore|killcursors) (\S+) ")
_DIGITS = "0123456789"
_COUNTERS = re.compile(
    r"(?<![\w.])(keysExamined|docsExamined|nscanned|nscannedObjects|nreturned|numYields|writeConflicts|reslen|errCode|code):(\d+)"
)
_COUNTER_COLUMN = {
    "keysExamined": "keys_examined",
    "nscanned": "keys_examined",
    "docsExamined": "docs_examined",
    "nscannedObjects": "docs_examined",
    "nreturned": "nreturned",
    "numYields": "num_yields",
    "writeConflicts": "write_conflicts",
    "reslen": "reslen",
    "errCode": "err_code",
    "code": "err_code",
}
_PLAN = re.compile(r"planSummary: ([A-Z_]+(?: \{[^}]*\})?(?:, [A-Z_]+(?: \{[^}]*\})?)*)")
_APP_NAME = re.compile(r'appName: "((?:[^"\\]|\\.)*)"')
_COMMAND_NAME = re.compile(r"command: (\w+) \{")
_FIRST_KEY = re.compile(r"command: \{ \"?(\$?\w+)\"?:")
_HASHES = re.compile(r"(queryHash|planCacheKey):([0-9A-F]+)")
_ERR_NAME = re.compile(r"errName:(\w+)")
_LOCK_WAITS = re.compile(r"timeAcquiringMicros: \{ ([^}]*) \}")
_NUMBERS = re.compile(r"\d+")
_FLOW_CONTROL = re.compile(r"flowControl:\{ [^}]*timeAcquiringMicros: (\d+)")
_STORAGE = {
    "bytes_read": re.compile(r"bytesRead: (\d+)"),
    "read_micros": re.compile(r"timeReadingMicros: (\d+)"),
    "bytes_written": re.compile(r"bytesWritten: (\d+)"),
    "write_micros": re.compile(r"timeWritingMicros: (\d+)"),
    "cache_wait_micros": re.compile(r"cache: (\d+)"),
    "schema_lock_wait_micros": re.compile(r"schemaLock: (\d+)"),
    "handle_lock_wait_micros": re.compile(r"handleLock: (\d+)"),
}
_NUMBER_COLUMNS = (
    "duration_ms",
    *dict.fromkeys(_COUNTER_COLUMN.values()),
    "lock_wait_micros",
    "flow_control_micros",
    *_STORAGE,
)
_COMMAND_OF_OP = {"query": "find", "getmore": "getMore", "killcursors": "killCursors"}


class YearTracker:
    """Years for ctime stamps, which have none (≤ 2.4).

    The first stamp takes the latest year, not after `hint` (the file's
    modification year), whose calendar puts that date on the printed weekday;
    later stamps roll into the next year when the month goes backwards.
    """

    def __init__(self, hint: int):
        self.hint = hint
        self.year: int | None = None
        self.month = 0

    def year_for(self, weekday: int, month: int, day: int) -> int:
        if self.year is None:
            self.year = next(
                (y for y in range(self.hint, self.hint - 28, -1) if _weekday_is(y, month, day, weekday)),
                self.hint,
            )
        elif month < self.month:
            self.year += 1
        self.month = month
        return self.year


def _weekday_is(year: int, month: int, day: int, weekday: int) -> bool:
    try:
        return dt.date(year, month, day).weekday() == weekday
    except ValueError:
        return False


def iso_timestamp(stamp: str, years: YearTracker) -> str | None:
    """The stamp as ISO text with an offset; ctime stamps are taken as UTC."""
    if stamp[0].isdigit():
        return stamp
    m = _CTIME_PARTS.match(stamp)
    if m is None or m.group(2) not in _MONTHS:
        return None
    weekday, month, day = _WEEKDAYS.get(m.group(1), -1), _MONTHS[m.group(2)], int(m.group(3))
    year = years.year_for(weekday, month, day)
    millis = (m.group(5) or "0")[:3].ljust(3, "0")
    return f"{year:04d}-{month:02d}-{day:02d}T{m.group(4)}.{millis}Z"


def decode_text(text: str, problems: ProblemLog, years: YearTracker) -> tuple[dict, dict]:
    """Raw slow-op and event columns (schema.RAW_SLOW_OPS / RAW_EVENTS) of a
    text log, or of one block of it: `years` carries ctime years across blocks."""
    slow = {name: [] for name in RAW_SLOW_OPS}
    evts = {name: [] for name in RAW_EVENTS}
    # Lines end at "\n" only, as in JSON logs: str.splitlines() would also cut
    # at form feeds and other separators inside an operation's strings.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        stripped = line.rstrip()
        if not stripped:
            problems.add(number, "blank line", line)
            continue
        m = _LINE.match(stripped)
        ts = iso_timestamp(m.group("ts"), years) if m else None
        if ts is None:
            # A JSON line (4.4+ appended after an in-place upgrade) is the JSON decoder's.
            if not stripped.lstrip().startswith("{"):
                problems.add(number, "no timestamp", line)
            continue
        body, component = m.group("text"), m.group("comp")
        oversize = _OVERSIZE.match(body)
        if oversize:
            body = body[oversize.end() :]
        op = slow_op(body)
        if op is not None:
            row, reasons = slow_op_row(*op, component)
            for reason in reasons:
                problems.add(number, reason, line)
            row.update(
                t=ts,
                connection=m.group("ctx"),
                line=number,
                truncated=f'"line of {oversize.group(1)} KB shortened by the server"' if oversize else None,
            )
            for name in RAW_SLOW_OPS:
                slow[name].append(row.get(name))
        else:
            values = dict(zip(events.TYPED_COLUMNS, events.text_values(body)))
            values.update(t=ts, severity=m.group("sev"), component=component, id=None, ctx=m.group("ctx"), msg=body, line=number)
            for name in RAW_EVENTS:
                evts[name].append(values.get(name))
    return _without_unreadable_ts(slow, problems), _without_unreadable_ts(evts, problems)


def _without_unreadable_ts(table: dict, problems: ProblemLog) -> dict:
    """The rows whose stamp reads as a time: the patterns above accept, say,
    month 13 or February 30, which are reported as no timestamp."""
    if not table["t"]:
        return table
    stamps = pl.DataFrame({"t": table["t"], "line": table["line"]}, schema={"t": pl.String, "line": pl.Int64})
    kept = drop_unreadable_ts(stamps.with_row_index("row"), problems)["row"]
    if len(kept) == stamps.height:
        return table
    return {name: [values[i] for i in kept] for name, values in table.items()}


def slow_op(text: str) -> tuple[str, str, str, str] | None:
    r"""(verb, namespace, details, duration digits) of a slow operation's text
    (right-stripped), else None.

    Its duration is the longest run of ASCII digits before the final "ms", after
    an optional space. It is found by stripping digits from the end: a regex
    `(.*?) ?(\d+)ms$` retries the digits from every position, quadratic on a
    long run of them.
    """
    head = _SLOW_OP_HEAD.match(text)
    if head is None or not text.endswith("ms"):
        return None
    end = len(text) - 2
    start = len(text[:end].rstrip(_DIGITS))
    if start == end:
        return None
    # The head ends in a space, so the digits start at or after its end.
    return head.group(1), head.group(2), text[head.end() : start].removesuffix(" "), text[start:end]


def slow_op_row(verb: str, ns: str, body: str, ms: str, component: str | None) -> tuple[dict, list[str]]:
    """Columns of one slow-operation line, from its verb, namespace, details
    and duration digits, and the problems of the values that could not be read."""
    row = {
        "component": component,
        "op_type": verb,
        "ns": ns,
        "duration_ms": int64(ms),
        "command_name": _command_name(verb, body),
    }
    if (m := _APP_NAME.search(body)) is not None:
        row["app_name"] = m.group(1)
    if (m := _PLAN.search(body)) is not None:
        row["plan_summary"] = m.group(1)
    for name, value in _COUNTERS.findall(body):
        row[_COUNTER_COLUMN[name]] = int64(value)
    for name, value in _HASHES.findall(body):
        row["query_hash" if name == "queryHash" else "plan_cache_key"] = value
    if (m := _ERR_NAME.search(body)) is not None:
        row["err_name"] = m.group(1)
    row["ok"] = not (row.get("err_name") or "exception:" in body or " ok:0 " in body)
    waits = _LOCK_WAITS.findall(body)
    if waits:
        micros = [int64(n) for group in waits for n in _NUMBERS.findall(group)]
        total = None if None in micros else sum(micros)
        row["lock_wait_micros"] = total if total is not None and total <= events.INT64_MAX else None
    if (m := _FLOW_CONTROL.search(body)) is not None:
        row["flow_control_micros"] = int64(m.group(1))
    storage_at = body.find("storage:{")
    if storage_at >= 0:
        storage = body[storage_at:]
        for column, pattern in _STORAGE.items():
            if (m := pattern.search(storage)) is not None:
                row[column] = int64(m.group(1))
    reasons = []
    # Numbers are set only where found, so a null one was beyond int64.
    if out_of_range := [name for name in _NUMBER_COLUMNS if name in row and row[name] is None]:
        reasons.append("beyond int64, dropped: " + ", ".join(out_of_range))
    try:
        command = _command_document(body) if verb == "command" else None
        row["legacy_shape"] = _legacy_shape(verb, body, command)
        row["ns"] = _operation_ns(ns, row["command_name"], command)
    except shell_docs.NestedTooDeep as exc:
        reasons.append(f"no shape: {exc}")
    return row, reasons


# The native JSON decoder's rule (native/src/logs/rows.rs `operation_ns`): these commands name one
# collection but are logged against `<db>.$cmd`.
COLLECTION_COMMANDS = ("insert", "update", "delete", "findAndModify", "findandmodify")


def _operation_ns(ns: str, name: str, command) -> str:
    """`shop.$cmd` of an update of `orders` is `shop.orders`."""
    if ns.endswith(".$cmd") and name in COLLECTION_COMMANDS and isinstance(command, dict):
        target = command.get(name)
        if isinstance(target, str) and target:
            return f"{ns.removesuffix('.$cmd')}.{target}"
    return ns


def _command_document(body: str):
    m = _COMMAND_NAME.search(body)
    return shell_docs.document_after(body, f"command: {m.group(1)} " if m else "command: ")


def _command_name(verb: str, body: str) -> str:
    if verb == "command":
        m = _COMMAND_NAME.search(body) or _FIRST_KEY.search(body)
        return m.group(1) if m else "command"
    return _COMMAND_OF_OP.get(verb, verb)


def _legacy_shape(verb: str, body: str, command) -> str | None:
    """The shape of the logged command (parsed already for `command` lines), or of a command
    built from the older `query:` forms (a statement `{q: ...}`, a find's filter and sort)."""
    if verb == "command":
        return shape_of_command(command) if isinstance(command, dict) else None
    statement = shell_docs.document_after(body, "command: ")
    if isinstance(statement, dict):  # 3.6+ WRITE lines log the statement {q: ..., u: ...}
        return shape_of_command(statement)
    originating = shell_docs.document_after(body, "originatingCommand: ")
    if isinstance(originating, dict):
        return shape_of_command(originating)
    query = shell_docs.document_after(body, "query: ")
    if not isinstance(query, dict):
        return None
    if verb in ("update", "remove"):
        return shape_of_command({"q": query})
    # 2.x wraps modifiers: { query: {...}, orderby: {...} } or { $query: ..., $orderby: ... }
    for inner, order in (("query", "orderby"), ("$query", "$orderby")):
        if inner in query and isinstance(query[inner], dict):
            command = {"find": 1, "filter": query[inner]}
            if order in query:
                command["sort"] = query[order]
            return shape_of_command(command)
    return shape_of_command({"find": 1, "filter": query})
