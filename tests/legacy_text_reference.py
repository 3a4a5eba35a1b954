"""The former Python decoder of legacy text logs, kept as the reference the native one
(native/src/logs/text.rs) is checked against: `decode_text_block` gives the frames
`ftdc.logs.reader.decode_text_block` gave before text lines were decoded natively. It is
not used by the package; tests/test_logs_text_native.py compares the two on every real
text log sample and on damaged lines.
"""

import calendar
import datetime as dt
import re

import polars as pl

from ftdc.logs import columns
from ftdc.logs.columns import SLOW_OPS_BEFORE_JOINS, _started, drop_implausible_durations, drop_unreadable_ts, parse_ts
from ftdc.logs.events import INT64_MAX, TYPED_COLUMNS, checkpoint_kind, int64
from ftdc.logs.problems import ProblemLog
from ftdc.logs.reader import BlockResult, _no_events, _no_slow_ops, decode_json_block
from ftdc.logs.schema import RAW_EVENTS, SLOW_OPS, _raw
from ftdc.logs.shapes import shape_of_command

# ---------------------------------------------------------------------------
# ftdc/logs/py

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<punct>[{}\[\]:,])
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<regex>/(?:[^/\\\n]|\\.)+/[a-z]*)
    | (?P<word>(?:new\s+)?[^\s{}\[\]:,()"']+(?:\((?:[^()"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')*\))?)
    )""",
    re.VERBOSE,
)


# Deeper documents have no shape: the native shaper reads JSON with a limit of
# 128 levels (serde_json's), and the recursion here stays far from Python's.
MAX_DEPTH = 100


class ShellSyntaxError(ValueError):
    pass


class NestedTooDeep(ValueError):
    """A document nested deeper than MAX_DEPTH. Unlike a syntax error, which is
    the shell's own output format this reader does not know, it is reported."""


def balanced_end(text: str, start: int) -> int:
    """Index just past the brace/bracket group opening at `start`, skipping strings."""
    depth, i, quote = 0, start, None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ShellSyntaxError("unbalanced document")


def parse(text: str):
    """Parse one shell document into dicts, lists and literal strings."""
    tokens = [(m.lastgroup, m.group(m.lastgroup)) for m in _TOKEN.finditer(text) if m.lastgroup]
    value, pos = _value(tokens, 0, 0)
    return value


def _value(tokens, pos, depth):
    if pos >= len(tokens):
        raise ShellSyntaxError("document ends early")
    kind, text = tokens[pos]
    if kind == "punct" and text in ("{", "["):
        if depth == MAX_DEPTH:
            raise NestedTooDeep(f"document nested deeper than {MAX_DEPTH} levels")
        return (_object if text == "{" else _array)(tokens, pos + 1, depth + 1)
    if kind == "punct":
        raise ShellSyntaxError(f"unexpected {text!r}")
    if kind == "string":
        return text[1:-1], pos + 1
    return text, pos + 1


def _object(tokens, pos, depth):
    out = {}
    while pos < len(tokens):
        kind, text = tokens[pos]
        if kind == "punct" and text == "}":
            return out, pos + 1
        if kind == "punct" and text == ",":
            pos += 1
            continue
        key = text[1:-1] if kind == "string" else text
        if pos + 1 >= len(tokens) or tokens[pos + 1] != ("punct", ":"):
            raise ShellSyntaxError("key without value")
        out[key], pos = _value(tokens, pos + 2, depth)
    raise ShellSyntaxError("object not closed")


def _array(tokens, pos, depth):
    out = []
    while pos < len(tokens):
        kind, text = tokens[pos]
        if kind == "punct" and text == "]":
            return out, pos + 1
        if kind == "punct" and text == ",":
            pos += 1
            continue
        item, pos = _value(tokens, pos, depth)
        out.append(item)
    raise ShellSyntaxError("array not closed")


def document_after(text: str, label: str):
    """Parse the document that follows `label` (e.g. "query: "), or None.
    Raises NestedTooDeep."""
    at = text.find(label)
    if at < 0:
        return None
    start = text.find("{", at + len(label))
    # The label may name the command before its document: "command: find { ... }".
    if start < 0 or text[at + len(label) : start].strip(" ").count(" ") > 0:
        return None
    try:
        return parse(text[start : balanced_end(text, start)])
    except ShellSyntaxError:
        return None


# ---------------------------------------------------------------------------
# ftdc/logs/events.py (text lines)

# Legacy text events (≤ 4.2), in the order they are tried.
_TEXT_RULES = [
    (
        "connection_accepted",
        re.compile(r"connection accepted from (?P<remote>\S+) #\d+ \((?P<count>\d+) connections? now open\)"),
    ),
    ("connection_ended", re.compile(r"end connection (?P<remote>\S+) \((?P<count>\d+) connections? now open\)")),
    (
        "client_metadata",
        re.compile(
            r"received client metadata from (?P<remote>\S+) \S+: .*?driver: \{ name: \"(?P<driver>[^\"]*)\", version: \"(?P<driver_version>[^\"]*)\""
        ),
    ),
    ("startup", re.compile(r"(?:MongoDB|MongoS version \S+) starting ?: pid=\d+ port=(?P<port>\d+) .*?host=(?P<host>\S+)")),
    ("build_info", re.compile(r"^db version v(?P<version>\S+?),?(?: |$)")),
    ("storage_config", re.compile(r"^wiredtiger_open config: (?P<config>.*)$")),
    ("state_change", re.compile(r"transition to (?P<new_state>[A-Z]+)(?: from (?P<old_state>[A-Z]+))?")),
    ("stepdown_requested", re.compile(r"^Attempting to step down in response to replSetStepDown command")),
    ("stepup_requested", re.compile(r"^Starting an election due to step up request")),
    ("priority_takeover", re.compile(r"^Starting an election for a priority takeover")),
    ("catchup_takeover", re.compile(r"^Starting an election for a catchup takeover")),
    ("new_term_stepdown", re.compile(r"^stepping down from primary, because a new term has begun", re.IGNORECASE)),
    ("election", re.compile(r"election|stepping down|stepdown", re.IGNORECASE)),
    ("shutdown", re.compile(r"got signal|Received signal|dbexit|shutdown: going to|Now exiting")),
    ("log_rotation", re.compile(r"[Ll]og rotation")),
    (
        "transaction_expired",
        re.compile(
            r"^Aborting transaction with txnNumber \d+ on session with lsid .* because it has been running for longer than "
            r"'transactionLifetimeLimitSeconds'"
        ),
    ),
    ("slow_transaction", re.compile(r"^transaction parameters:.* (?P<duration>\d+)ms$")),
    ("slow_network", re.compile(r"DNS resolution .* took (?P<duration>\d+)ms|Slow network")),
    ("slow_wt_transaction", re.compile(r"Slow WT transaction")),
]
_APPLICATION_NAME = re.compile(r"application: \{ name: \"([^\"]*)\"")


def text_values(text: str) -> tuple:
    """Typed columns of a legacy text line (everything after the context)."""
    duration = count = remote = driver = app = new_state = old_state = version = host = None
    kind = "other"
    found = checkpoint_kind(text) if ("heckpoint" in text) else None
    if found is not None:
        kind, duration = found
    else:
        for rule_kind, pattern in _TEXT_RULES:
            m = pattern.search(text)
            if m is None:
                continue
            kind = rule_kind
            groups = m.groupdict()
            remote = groups.get("remote")
            count = int64(groups["count"]) if groups.get("count") else None
            duration = int64(groups["duration"]) if groups.get("duration") else None
            if groups.get("driver"):
                driver = f"{groups['driver']} {groups['driver_version']}".strip()
                app_match = _APPLICATION_NAME.search(text)
                app = app_match.group(1) if app_match else None
            if groups.get("host"):
                host = f"{groups['host']}:{groups['port']}"
            version = groups.get("version")
            new_state, old_state = groups.get("new_state"), groups.get("old_state")
            # The storage engine's open string is what analyses read thresholds from.
            text = groups.get("config", text)
            break
    return kind, duration, count, remote, driver, app, new_state, old_state, version, host, text


# ---------------------------------------------------------------------------
# ftdc/logs/schema.py, columns.py (text slow ops)

RAW_SLOW_OPS_ONLY = {
    "t": pl.String,
    # The command name and the shape computed from shell syntax.
    "command_name": pl.String,
    "legacy_shape": pl.String,
}

RAW_SLOW_OPS = _raw(
    RAW_SLOW_OPS_ONLY,
    SLOW_OPS,
    (
        "t",
        "component",
        "connection",
        "op_type",
        "ns",
        "app_name",
        "command_json",
        "originating_command_json",
        "command_name",
        "legacy_shape",
        "plan_summary",
        "keys_examined",
        "docs_examined",
        "nreturned",
        "num_yields",
        "query_hash",
        "plan_cache_key",
        "query_shape_hash",
        "ok",
        "err_name",
        "err_code",
        "reslen",
        "write_conflicts",
        "lock_wait_micros",
        "flow_control_micros",
        "cache_wait_micros",
        "schema_lock_wait_micros",
        "handle_lock_wait_micros",
        "bytes_read",
        "read_micros",
        "bytes_written",
        "write_micros",
        "execution_queued_micros",
        "execution_admissions",
        "ingress_queued_micros",
        "working_ms",
        "cpu_nanos",
        "remote",
        "duration_ms",
        "truncated",
        "truncated_size",
        "line",
    ),
)


def finish_slow_ops(raw: pl.DataFrame, file: str) -> pl.DataFrame:
    """Derived columns of legacy text slow ops (`schema.RAW_SLOW_OPS`); `node`
    and `client` are added across files later."""
    is_statement = pl.col("component") == "WRITE"
    namespace = pl.col("ns").str.splitn(".", 2)
    return (
        raw.with_columns(
            ts=parse_ts(),
            write_statement=is_statement.fill_null(False),
            command=pl.col("command_name"),
            db=namespace.struct.field("field_0"),
            coll=namespace.struct.field("field_1"),
            plan_kind=pl.col("plan_summary").str.extract(r"^([A-Z_]+)"),
            shape=pl.col("legacy_shape"),
            file=pl.lit(file, pl.String),
        )
        .with_columns(started=_started())
        .select(SLOW_OPS_BEFORE_JOINS)
    )


def raw_frame(columns: dict, schema: dict) -> pl.DataFrame:
    """A frame from column lists; scalar None stands for an all-null column."""
    height = len(columns["line"])
    return pl.DataFrame(
        {name: (columns[name] if columns.get(name) is not None else [None] * height) for name in schema},
        schema=schema,
        strict=False,
    )


# ---------------------------------------------------------------------------
# ftdc/logs/legacy_text.py

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
            values = dict(zip(TYPED_COLUMNS, text_values(body)))
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
        row["lock_wait_micros"] = total if total is not None and total <= INT64_MAX else None
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
    except NestedTooDeep as exc:
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
    return document_after(body, f"command: {m.group(1)} " if m else "command: ")


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
    statement = document_after(body, "command: ")
    if isinstance(statement, dict):  # 3.6+ WRITE lines log the statement {q: ..., u: ...}
        return shape_of_command(statement)
    originating = document_after(body, "originatingCommand: ")
    if isinstance(originating, dict):
        return shape_of_command(originating)
    query = document_after(body, "query: ")
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


# ---------------------------------------------------------------------------
# ftdc/logs/reader.py


def decode_text_block(file: str, data: bytes, years: YearTracker) -> BlockResult:
    """One block of a legacy text log; JSON lines in it (4.4+ appended after an
    in-place upgrade) go to the JSON decoder and keep their own line numbers."""
    problem_log = ProblemLog(file)
    raw_slow, raw_evts = decode_text(data.decode("utf-8", "replace"), problem_log, years)
    if raw_slow["line"] or raw_evts["line"]:
        slow = finish_slow_ops(drop_implausible_durations(raw_frame(raw_slow, RAW_SLOW_OPS), problem_log), file)
        evts = columns.finish_events(raw_frame(raw_evts, RAW_EVENTS), file)
    else:  # no log line: a file of junk costs its problems, not a dozen polars steps (20,000 of them took 88 s)
        slow, evts = _no_slow_ops(), _no_events()
    problems = problem_log.frame()
    lines = data.split(b"\n")
    json_at = pl.Series("line", [n for n, line in enumerate(lines, 1) if line.lstrip().startswith(b"{")], dtype=pl.Int64)
    if len(json_at):
        block = b"\n".join(lines[n - 1] for n in json_at)
        _, json_slow, json_evts, json_problems, _ = decode_json_block(file, block, len(block))
        original = pl.lit(json_at).gather(pl.col("line") - 1)
        by_line = lambda frames: pl.concat(frames, how="vertical_relaxed").sort("line", nulls_last=True)  # noqa: E731
        slow = by_line([slow, json_slow.with_columns(original)])
        evts = by_line([evts, json_evts.with_columns(original)])
        problems = by_line([problems, json_problems.with_columns(original)])
    return file, slow, evts, problems, len(lines) - (not data or data.endswith(b"\n"))
