//! Legacy text (mongod/mongos 2.2 to 4.2) log lines straight into columns.
//!
//! Grammar (docs/log-format.md §6, mtools `logevent.py`):
//! `<ts> [<sev> <COMPONENT>] [<ctx>] <op> <ns> <details> name:value ... <N>ms`.
//! Slow operations are the lines whose text starts with a CRUD/command verb and
//! ends in a duration; every other line with a timestamp is an event. A block
//! is cut into line ranges decoded in parallel, as JSON lines are (`mod.rs`),
//! into the same slow-op columns and the text event columns.
//!
//! Lines are read as the former Python decoder read them, whose results these
//! must equal (tests/test_logs_text_native.py): as text decoded with U+FFFD for
//! bad UTF-8, with Python's whitespace, word characters and digits (`pystr`).
//! Years of ctime stamps (≤ 2.4, which print none) depend on the lines before:
//! they are settled in line order once the ranges are decoded.

use std::borrow::Cow;
use std::sync::LazyLock;

use rayon::prelude::*;
use regex::Regex;

use super::columns::{SlowColumns, TextEventColumns};
use super::rows::{db_and_coll, plan_kind, utc_millis, COLLECTION_COMMANDS};
use super::shell::{self, Unread};
use super::text_events::text_values;
use super::{pystr, ranges, Block, Problem, MAX_LISTED_PROBLEMS, RANGE_BYTES};

/// Problem snippets are this many characters of the line, as the Python decoder cut them.
const SNIPPET_CHARS: usize = 200;

static LINE: LazyLock<Regex> = LazyLock::new(|| {
    pystr::regex(concat!(
        r"^(?P<ts>",
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?",
        r"|(?P<weekday>[A-Z][a-z]{2}) (?P<month>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?",
        r")",
        r"(?: +(?P<sev>[FEWID]\d?) +(?P<comp>[A-Z_]+|-))?",
        r"(?: +\[(?P<ctx>[^\]]*)\])?",
        // The text is the rest of the line.
        r" *",
    ))
});

/// What comes before a line's text (LINE's groups), and where the text starts.
#[derive(Debug, PartialEq)]
struct Head<'a> {
    ts: &'a str,
    weekday: Option<&'a str>,
    month: Option<&'a str>,
    day: Option<&'a str>,
    hms: Option<&'a str>,
    fraction: Option<&'a str>,
    sev: Option<&'a str>,
    comp: Option<&'a str>,
    ctx: Option<&'a str>,
    end: usize,
}

/// The head of a line as LINE reads it: read by hand when what decides it is ASCII
/// (nearly every line; the regex's captures cost more than the rest of the line),
/// else by LINE itself, whose digits are Unicode ones.
fn head(line: &str) -> Option<Head<'_>> {
    ascii_head(line).or_else(|| regex_head(line))
}

fn regex_head(line: &str) -> Option<Head<'_>> {
    let m = LINE.captures(line)?;
    let group = |name: &str| m.name(name).map(|g| g.as_str());
    Some(Head {
        ts: group("ts")?,
        weekday: group("weekday"),
        month: group("month"),
        day: group("day"),
        hms: group("hms"),
        fraction: group("fraction"),
        sev: group("sev"),
        comp: group("comp"),
        ctx: group("ctx"),
        end: m.get(0)?.end(),
    })
}

/// LINE's match on a line whose bytes up to the last one looked at are ASCII (where LINE's
/// `\d` is `[0-9]`), else None: then LINE decides. Each optional group is tried as the
/// regex tries it, backtracking included.
fn ascii_head(line: &str) -> Option<Head<'_>> {
    let b = line.as_bytes();
    let seen = std::cell::Cell::new(0);
    let at = |i: usize| {
        seen.set(seen.get().max(i));
        b.get(i).copied().unwrap_or(0)
    };
    let digit = |i: usize| at(i).is_ascii_digit();
    let digits = |from: usize, n: usize| (from..from + n).all(digit);
    let spaces = |mut i: usize| {
        while at(i) == b' ' {
            i += 1;
        }
        i
    };
    let fraction = |p: usize| {
        if at(p) == b'.' && digit(p + 1) {
            let mut q = p + 1;
            while digit(q) {
                q += 1;
            }
            q
        } else {
            p
        }
    };
    let mut h = Head { ts: "", weekday: None, month: None, day: None, hms: None, fraction: None, sev: None, comp: None, ctx: None, end: 0 };
    let iso = digits(0, 4)
        && at(4) == b'-'
        && digits(5, 2)
        && at(7) == b'-'
        && digits(8, 2)
        && at(10) == b'T'
        && digits(11, 2)
        && at(13) == b':'
        && digits(14, 2)
        && at(16) == b':'
        && digits(17, 2);
    let mut p = if iso {
        let mut p = fraction(19);
        if at(p) == b'Z' {
            p += 1;
        } else if matches!(at(p), b'+' | b'-') && digits(p + 1, 2) {
            if at(p + 3) == b':' && digits(p + 4, 2) {
                p += 6;
            } else if digits(p + 3, 2) {
                p += 5;
            }
        }
        p
    } else {
        let word = |i: usize| at(i).is_ascii_uppercase() && at(i + 1).is_ascii_lowercase() && at(i + 2).is_ascii_lowercase();
        if !(word(0) && at(3) == b' ' && word(4) && at(7) == b' ') {
            return None;
        }
        let day_at = spaces(8);
        let day_end = if digit(day_at) && digit(day_at + 1) && at(day_at + 2) == b' ' {
            day_at + 2
        } else if digit(day_at) && at(day_at + 1) == b' ' {
            day_at + 1
        } else {
            return None;
        };
        let t = day_end + 1;
        if !(digits(t, 2) && at(t + 2) == b':' && digits(t + 3, 2) && at(t + 5) == b':' && digits(t + 6, 2)) {
            return None;
        }
        let end = fraction(t + 8);
        (h.weekday, h.month, h.day, h.hms) = (Some(&line[..3]), Some(&line[4..7]), Some(&line[day_at..day_end]), Some(&line[t..t + 8]));
        h.fraction = (end > t + 8).then(|| &line[t + 9..end]);
        end
    };
    h.ts = &line[..p];
    // (?: +(?P<sev>[FEWID]\d?) +(?P<comp>[A-Z_]+|-))?
    let s = spaces(p);
    if s > p && matches!(at(s), b'F' | b'E' | b'W' | b'I' | b'D') {
        let sev_end = if digit(s + 1) && at(s + 2) == b' ' { s + 2 } else { s + 1 };
        let c = spaces(sev_end);
        if c > sev_end {
            let comp_end = if at(c) == b'-' {
                c + 1
            } else {
                let mut e = c;
                while at(e).is_ascii_uppercase() || at(e) == b'_' {
                    e += 1;
                }
                e
            };
            if comp_end > c {
                (h.sev, h.comp) = (Some(&line[s..sev_end]), Some(&line[c..comp_end]));
                p = comp_end;
            }
        }
    }
    // (?: +\[(?P<ctx>[^\]]*)\])?
    let l = spaces(p);
    if l > p && at(l) == b'[' {
        if let Some(r) = memchr::memchr(b']', &b[l + 1..]) {
            h.ctx = Some(&line[l + 1..l + 1 + r]);
            p = l + 1 + r + 1;
        }
    }
    h.end = spaces(p);
    let looked = (seen.get() + 1).min(b.len());
    b[..looked].is_ascii().then_some(h)
}

// 2.x-4.2 print lines over 10 KB as this warning followed by a shortened line.
const OVERSIZE_WORDS: &str = "warning: log line attempted (";
static OVERSIZE: LazyLock<Regex> =
    LazyLock::new(|| pystr::regex(r"^warning: log line attempted \((\d+)k\) over max size \(\d+k\), printing beginning and end \.\.\. "));

const VERBS: [&str; 7] = ["command", "query", "update", "remove", "insert", "getmore", "killcursors"];

static COUNTERS: LazyLock<Regex> = LazyLock::new(|| {
    pystr::regex(r"(keysExamined|docsExamined|nscanned|nscannedObjects|nreturned|numYields|writeConflicts|reslen|errCode|code):(\d+)")
});
static PLAN: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"planSummary: ([A-Z_]+(?: \{[^}]*\})?(?:, [A-Z_]+(?: \{[^}]*\})?)*)"));
static APP_NAME: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r#"appName: "((?:[^"\\]|\\.)*)""#));
static COMMAND_NAME: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"command: (\w+) \{"));
static FIRST_KEY: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r#"command: \{ "?(\$?\w+)"?:"#));
static HASHES: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"(queryHash|planCacheKey):([0-9A-F]+)"));
static ERR_NAME: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"errName:(\w+)"));
static LOCK_WAITS: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"timeAcquiringMicros: \{ ([^}]*) \}"));
static NUMBERS: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"\d+"));
static FLOW_CONTROL: LazyLock<Regex> = LazyLock::new(|| pystr::regex(r"flowControl:\{ [^}]*timeAcquiringMicros: (\d+)"));
static STORAGE: LazyLock<[Regex; 7]> = LazyLock::new(|| {
    [
        r"bytesRead: (\d+)",
        r"timeReadingMicros: (\d+)",
        r"bytesWritten: (\d+)",
        r"timeWritingMicros: (\d+)",
        r"cache: (\d+)",
        r"schemaLock: (\d+)",
        r"handleLock: (\d+)",
    ]
    .map(pystr::regex)
});

/// UTC milliseconds of a stamp in years 1-9999 (Python's datetime range). Others are left
/// to polars with their text, which the reader then reports as a problem showing the stamp.
fn utc_millis_in_range(stamp: &str) -> Option<i64> {
    utc_millis(stamp).filter(|ms| (-62_135_596_800_000..=253_402_300_799_999).contains(ms))
}

/// Years for ctime stamps, which have none (≤ 2.4).
///
/// The first stamp takes the latest year, not after `hint` (the file's
/// modification year), whose calendar puts that date on the printed weekday;
/// later stamps roll into the next year when the month goes backwards. Carried
/// from block to block of a file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Years {
    pub hint: i64,
    pub year: Option<i64>,
    pub month: u32,
}

/// Monday 0 to Sunday 6 of a date in years 1-9999, None for no such date.
fn weekday(year: i64, month: u32, day: u32) -> Option<i64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) || day < 1 || day > month_days[month as usize - 1] {
        return None;
    }
    // Days since 1970-01-01 (a Thursday), H. Hinnant's days_from_civil.
    let (m, d) = (i64::from(month), i64::from(day));
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    Some((era * 146_097 + doe - 719_468 + 3).rem_euclid(7))
}

impl Years {
    pub fn new(hint: i64) -> Self {
        Years { hint, year: None, month: 0 }
    }

    fn year_for(&mut self, weekday_name: Option<i64>, month: u32, day: i64) -> i64 {
        let year = match self.year {
            None => {
                let day = u32::try_from(day).ok();
                let fits = |y: i64| weekday_name.is_some() && day.is_some_and(|d| weekday(y, month, d) == weekday_name);
                ((self.hint - 27)..=self.hint).rev().find(|&y| fits(y)).unwrap_or(self.hint)
            }
            Some(year) if month < self.month => year + 1,
            Some(year) => year,
        };
        self.year = Some(year);
        self.month = month;
        year
    }
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// A ctime stamp waiting for its year: its row, and the parts of the stamp.
struct Ctime {
    slow: bool,
    row: usize,
    weekday: Option<i64>,
    month: u32,
    day: i64,
    hms: String,
    millis: String,
}

impl Ctime {
    /// The stamp as ISO text, taken as UTC.
    fn iso(&self, years: &mut Years) -> String {
        let year = years.year_for(self.weekday, self.month, self.day);
        format!("{year:04}-{:02}-{:02}T{}.{}Z", self.month, self.day, self.hms, self.millis)
    }
}

/// The decoded lines of one block of a text log, with what the caller completes:
/// the JSON lines in it and the ctime years to carry to the next block.
pub struct TextBlock {
    pub block: Block,
    /// (line number, start, end) of each line that is JSON (4.4+ appended after an
    /// in-place upgrade), for the JSON decoder.
    pub json_lines: Vec<(i64, usize, usize)>,
    pub years: Years,
}

struct Partial {
    slow: SlowColumns,
    events: TextEventColumns,
    problems: Vec<Problem>,
    unlisted: u64,
    lines: i64,
    ctime: Vec<Ctime>,
    json_lines: Vec<(i64, usize, usize)>,
}

impl Partial {
    fn problem(&mut self, number: i64, reason: String, line: &str) {
        if self.problems.len() >= MAX_LISTED_PROBLEMS {
            self.unlisted += 1;
            return;
        }
        let text = line.chars().take(SNIPPET_CHARS).collect();
        self.problems.push(Problem { line: number, reason, text });
    }
}

fn is_ascii_space(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// (verb, namespace, details, duration digits) of a slow operation's text
/// (right-stripped), else None.
///
/// The text starts with `<verb> <namespace> ` and its duration is the longest run
/// of ASCII digits before the final "ms", after an optional space.
fn slow_op(text: &str) -> Option<(&'static str, &str, &str, &str)> {
    let (verb, rest) = VERBS.iter().find_map(|&v| text.strip_prefix(v).and_then(|r| r.strip_prefix(' ')).map(|r| (v, r)))?;
    let ns_end = rest.find(pystr::is_space).unwrap_or(rest.len());
    if ns_end == 0 || !rest[ns_end..].starts_with(' ') || !text.ends_with("ms") {
        return None;
    }
    let details_at = text.len() - rest.len() + ns_end + 1;
    let end = text.len() - 2;
    let start = text[..end].trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if start == end {
        return None;
    }
    let details = &text[details_at..start];
    Some((verb, &rest[..ns_end], details.strip_suffix(' ').unwrap_or(details), &text[start..end]))
}

fn command_name<'a>(verb: &'static str, body: &'a str) -> &'a str {
    match verb {
        "command" => {
            COMMAND_NAME.captures(body).or_else(|| FIRST_KEY.captures(body)).and_then(|c| c.get(1)).map_or("command", |m| m.as_str())
        }
        "query" => "find",
        "getmore" => "getMore",
        "killcursors" => "killCursors",
        _ => verb,
    }
}

/// The counters of `body` (`name:digits`, not after a word character or a dot),
/// each occurrence overwriting the one before.
fn counters(body: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(c) = COUNTERS.captures_at(body, at) {
            let whole = c.get(0).expect("group 0");
            let before = body[..whole.start()].chars().next_back();
            if before.is_some_and(|b| b == '.' || pystr::is_word(b)) {
                // Not a match here; a match may start at the next character.
                at = whole.start() + body[whole.start()..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            at = whole.end();
            return Some((c.get(1).expect("group 1").as_str(), c.get(2).expect("group 2").as_str()));
        }
        None
    })
}

/// The shape of the logged command (parsed already for `command` lines), or of a command
/// built from the older `query:` forms (a statement `{q: ...}`, a find's filter and sort).
fn legacy_shape(verb: &str, body: &str, command: Option<&serde_json::Map<String, serde_json::Value>>) -> Result<Option<String>, Unread> {
    use serde_json::{Map, Value};
    if verb == "command" {
        return Ok(command.and_then(shell::shape_of));
    }
    if let Some(statement) = shell::document_after(body, "command: ")? {
        // 3.6+ WRITE lines log the statement {q: ..., u: ...}
        return Ok(shell::shape_of(&statement));
    }
    if let Some(originating) = shell::document_after(body, "originatingCommand: ")? {
        return Ok(shell::shape_of(&originating));
    }
    let Some(query) = shell::document_after(body, "query: ")? else { return Ok(None) };
    let wrapped = |pairs: Vec<(&str, Value)>| -> Map<String, Value> { pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() };
    if verb == "update" || verb == "remove" {
        return Ok(shell::shape_of(&wrapped(vec![("q", Value::Object(query))])));
    }
    // 2.x wraps modifiers: { query: {...}, orderby: {...} } or { $query: ..., $orderby: ... }
    for (inner, order) in [("query", "orderby"), ("$query", "$orderby")] {
        if let Some(filter @ Value::Object(_)) = query.get(inner) {
            let mut find = wrapped(vec![("find", Value::from(1)), ("filter", filter.clone())]);
            if let Some(sort) = query.get(order) {
                find.insert("sort".into(), sort.clone());
            }
            return Ok(shell::shape_of(&find));
        }
    }
    Ok(shell::shape_of(&wrapped(vec![("find", Value::from(1)), ("filter", Value::Object(query))])))
}

/// Numbers found in the line, with whether each was within int64.
struct Numbers {
    found: Vec<(&'static str, Option<i64>)>,
}

impl Numbers {
    fn set(&mut self, column: &'static str, value: Option<i64>) {
        match self.found.iter_mut().find(|(c, _)| *c == column) {
            Some(slot) => slot.1 = value,
            None => self.found.push((column, value)),
        }
    }
    fn get(&self, column: &str) -> Option<i64> {
        self.found.iter().find(|(c, _)| *c == column).and_then(|(_, v)| *v)
    }
}

/// Number columns in the order their problems name them.
const NUMBER_COLUMNS: [&str; 17] = [
    "duration_ms",
    "keys_examined",
    "docs_examined",
    "nreturned",
    "num_yields",
    "write_conflicts",
    "reslen",
    "err_code",
    "lock_wait_micros",
    "flow_control_micros",
    "bytes_read",
    "read_micros",
    "bytes_written",
    "write_micros",
    "cache_wait_micros",
    "schema_lock_wait_micros",
    "handle_lock_wait_micros",
];

fn counter_column(name: &str) -> &'static str {
    match name {
        "keysExamined" | "nscanned" => "keys_examined",
        "docsExamined" | "nscannedObjects" => "docs_examined",
        "nreturned" => "nreturned",
        "numYields" => "num_yields",
        "writeConflicts" => "write_conflicts",
        "reslen" => "reslen",
        _ => "err_code", // errCode, code
    }
}

/// A slow operation's time: UTC milliseconds, else the stamp's text for polars to read.
struct Stamp<'a> {
    ts: Option<i64>,
    t: Option<&'a str>,
}

/// The envelope of a line: its stamp and what comes before the text.
struct Envelope<'a> {
    component: Option<&'a str>,
    ctx: Option<&'a str>,
    truncated: Option<String>,
}

impl SlowColumns {
    /// One slow-operation line; problems of values that could not be read go to `reasons`.
    fn push_text(
        &mut self,
        op: (&'static str, &str, &str, &str),
        stamp: Stamp,
        envelope: &Envelope,
        number: i64,
        reasons: &mut Vec<String>,
    ) {
        let (verb, ns, details, ms) = op;
        let mut numbers = Numbers { found: vec![("duration_ms", pystr::int64(ms))] };
        let name = command_name(verb, details);
        let app_name = APP_NAME.captures(details).and_then(|c| c.get(1)).map(|m| m.as_str());
        let plan = PLAN.captures(details).and_then(|c| c.get(1)).map(|m| m.as_str());
        for (counter, digits) in counters(details) {
            numbers.set(counter_column(counter), pystr::int64(digits));
        }
        let (mut query_hash, mut plan_cache_key) = (None, None);
        for c in HASHES.captures_iter(details) {
            let value = c.get(2).map(|m| m.as_str());
            if &c[1] == "queryHash" {
                query_hash = value;
            } else {
                plan_cache_key = value;
            }
        }
        let err_name = ERR_NAME.captures(details).and_then(|c| c.get(1)).map(|m| m.as_str());
        let ok = !(err_name.is_some() || details.contains("exception:") || details.contains(" ok:0 "));
        let mut waits = LOCK_WAITS.captures_iter(details).peekable();
        if waits.peek().is_some() {
            let mut total = Some(0i64);
            for group in waits {
                for n in NUMBERS.find_iter(&group[1]) {
                    total = match (total, pystr::int64(n.as_str())) {
                        (Some(t), Some(n)) => t.checked_add(n),
                        _ => None,
                    };
                }
            }
            numbers.set("lock_wait_micros", total);
        }
        if let Some(c) = FLOW_CONTROL.captures(details) {
            numbers.set("flow_control_micros", pystr::int64(&c[1]));
        }
        if let Some(at) = details.find("storage:{") {
            let storage = &details[at..];
            let columns = [
                "bytes_read",
                "read_micros",
                "bytes_written",
                "write_micros",
                "cache_wait_micros",
                "schema_lock_wait_micros",
                "handle_lock_wait_micros",
            ];
            for (pattern, column) in STORAGE.iter().zip(columns) {
                if let Some(c) = pattern.captures(storage) {
                    numbers.set(column, pystr::int64(&c[1]));
                }
            }
        }
        // Numbers are set only where found, so a missing one was beyond int64.
        let beyond: Vec<&str> =
            NUMBER_COLUMNS.iter().copied().filter(|c| numbers.found.iter().any(|(f, v)| f == c && v.is_none())).collect();
        if !beyond.is_empty() {
            reasons.push(format!("beyond int64, dropped: {}", beyond.join(", ")));
        }
        let command = if verb == "command" {
            let label = COMMAND_NAME.captures(details).map_or(Cow::Borrowed("command: "), |c| format!("command: {} ", &c[1]).into());
            shell::document_after(details, &label)
        } else {
            Ok(None)
        };
        let shaped =
            command.and_then(|command| Ok((legacy_shape(verb, details, command.as_ref())?, operation_ns(ns, name, command.as_ref()))));
        let (shape, ns) = shaped.unwrap_or_else(|_| {
            reasons.push(format!("no shape: document nested deeper than {} levels", shell::MAX_DEPTH));
            (None, Cow::Borrowed(ns))
        });
        self.ts.push(stamp.ts);
        self.t.push(stamp.t);
        self.component.push(envelope.component);
        self.connection.push(envelope.ctx);
        self.op_type.push(Some(verb));
        self.command.push(Some(name));
        self.write_statement.push(Some(envelope.component == Some("WRITE")));
        self.ns.push(Some(&ns));
        let (db, coll) = db_and_coll(Some(&ns));
        self.db.push(db);
        self.coll.push(coll);
        self.app_name.push(app_name);
        self.command_json.push(None);
        self.originating_command_json.push(None);
        self.shape.push(shape.as_deref());
        self.plan_summary.push(plan);
        self.plan_kind.push(plan.and_then(plan_kind));
        self.keys_examined.push(numbers.get("keys_examined"));
        self.docs_examined.push(numbers.get("docs_examined"));
        self.nreturned.push(numbers.get("nreturned"));
        self.num_yields.push(numbers.get("num_yields"));
        self.query_hash.push(query_hash);
        self.plan_cache_key.push(plan_cache_key);
        self.query_shape_hash.push(None);
        self.ok.push(Some(ok));
        self.err_name.push(err_name);
        self.err_code.push(numbers.get("err_code"));
        self.reslen.push(numbers.get("reslen"));
        self.write_conflicts.push(numbers.get("write_conflicts"));
        self.lock_wait_micros.push(numbers.get("lock_wait_micros"));
        self.flow_control_micros.push(numbers.get("flow_control_micros"));
        self.cache_wait_micros.push(numbers.get("cache_wait_micros"));
        self.schema_lock_wait_micros.push(numbers.get("schema_lock_wait_micros"));
        self.handle_lock_wait_micros.push(numbers.get("handle_lock_wait_micros"));
        self.bytes_read.push(numbers.get("bytes_read"));
        self.read_micros.push(numbers.get("read_micros"));
        self.bytes_written.push(numbers.get("bytes_written"));
        self.write_micros.push(numbers.get("write_micros"));
        self.execution_queued_micros.push(None);
        self.execution_admissions.push(None);
        self.ingress_queued_micros.push(None);
        self.working_ms.push(None);
        self.cpu_nanos.push(None);
        self.remote.push(None);
        self.duration_ms.push(numbers.get("duration_ms"));
        self.truncated.push(envelope.truncated.as_deref());
        self.truncated_size.push(None);
        self.line.push(Some(number));
    }
}

/// `shop.$cmd` of an update of `orders` is `shop.orders`.
fn operation_ns<'a>(ns: &'a str, name: &str, command: Option<&serde_json::Map<String, serde_json::Value>>) -> Cow<'a, str> {
    match (ns.strip_suffix(".$cmd"), command.and_then(|c| c.get(name))) {
        (Some(db), Some(serde_json::Value::String(target))) if COLLECTION_COMMANDS.contains(&name) && !target.is_empty() => {
            format!("{db}.{target}").into()
        }
        _ => ns.into(),
    }
}

impl TextEventColumns {
    fn push_text(&mut self, body: &str, stamp: Stamp, severity: Option<&str>, envelope: &Envelope, number: i64) {
        let v = text_values(body);
        self.ts.push(stamp.ts);
        self.t.push(stamp.t);
        self.severity.push(severity);
        self.component.push(envelope.component);
        self.id.push(None);
        self.ctx.push(envelope.ctx);
        self.msg.push(Some(body));
        self.kind.push(Some(v.kind));
        self.duration_ms.push(v.duration_ms);
        self.connection_count.push(v.connection_count);
        self.remote.push(v.remote);
        self.driver.push(v.driver.as_deref());
        self.app_name.push(v.app_name);
        self.new_state.push(v.new_state);
        self.old_state.push(v.old_state);
        self.version.push(v.version);
        self.host.push(v.host.as_deref());
        // Null where the text is the whole message (all but the storage engine's open string):
        // legacy_text.decode_block takes msg's strings there rather than a second copy of each.
        self.text.push((!std::ptr::eq(v.text, body)).then_some(v.text));
        self.line.push(Some(number));
    }
}

fn decode_range(range: &[u8], offset: usize) -> Partial {
    let lines = memchr::memchr_iter(b'\n', range).count() + 1;
    let mut out = Partial {
        slow: SlowColumns::default(),
        events: TextEventColumns::with_capacity(lines),
        problems: Vec::new(),
        unlisted: 0,
        lines: 0,
        ctime: Vec::new(),
        json_lines: Vec::new(),
    };
    let mut reasons = Vec::new();
    let mut start = 0;
    let mut number = 0i64;
    while start < range.len() {
        let end = memchr::memchr(b'\n', &range[start..]).map_or(range.len(), |i| start + i);
        let bytes = &range[start..end];
        number += 1;
        if bytes.iter().position(|b| !is_ascii_space(b)).is_some_and(|i| bytes[i] == b'{') {
            out.json_lines.push((number, offset + start, offset + end));
        }
        start = end + 1;
        let text = String::from_utf8_lossy(bytes);
        let line = text.strip_suffix('\r').unwrap_or(&text);
        let stripped = pystr::rstrip(line);
        if stripped.is_empty() {
            out.problem(number, "blank line".into(), line);
            continue;
        }
        let Some(m) = head(stripped) else {
            // A JSON line (4.4+ appended after an in-place upgrade) is the JSON decoder's.
            if !stripped.trim_start_matches(pystr::is_space).starts_with('{') {
                out.problem(number, "no timestamp".into(), line);
            }
            continue;
        };
        let ctime = match m.month {
            None => None,
            Some(month) => match MONTHS.iter().position(|&name| name == month) {
                None => {
                    out.problem(number, "no timestamp".into(), line);
                    continue;
                }
                Some(i) => Some(Ctime {
                    slow: false,
                    row: 0,
                    weekday: WEEKDAYS.iter().position(|&w| Some(w) == m.weekday).map(|i| i as i64),
                    month: i as u32 + 1,
                    // One or two digits: always a number.
                    day: m.day.and_then(pystr::int64).unwrap_or_default(),
                    hms: m.hms.unwrap_or_default().to_string(),
                    millis: {
                        let fraction: String = m.fraction.unwrap_or("0").chars().take(3).collect();
                        format!("{fraction:0<3}")
                    },
                }),
            },
        };
        let stamp = m.ts;
        let mut body = &stripped[m.end..];
        let mut envelope = Envelope { component: m.comp, ctx: m.ctx, truncated: None };
        // The regex's literal first: its captures cost a microsecond even on the lines it cannot match.
        if let Some(oversize) = body.starts_with(OVERSIZE_WORDS).then(|| OVERSIZE.captures(body)).flatten() {
            envelope.truncated = Some(format!("\"line of {} KB shortened by the server\"", &oversize[1]));
            body = &body[oversize.get(0).map_or(0, |w| w.end())..];
        }
        // A ctime stamp's time is set once its year is known.
        let ts = if ctime.is_some() { None } else { utc_millis_in_range(stamp) };
        let t = (ctime.is_none() && ts.is_none()).then_some(stamp);
        if let Some(op) = slow_op(body) {
            reasons.clear();
            out.slow.push_text(op, Stamp { ts, t }, &envelope, number, &mut reasons);
            for reason in reasons.drain(..) {
                out.problem(number, reason, line);
            }
            if let Some(c) = ctime {
                out.ctime.push(Ctime { slow: true, row: out.slow.line.values.len() - 1, ..c });
            }
        } else {
            out.events.push_text(body, Stamp { ts, t }, m.sev, &envelope, number);
            if let Some(c) = ctime {
                out.ctime.push(Ctime { slow: false, row: out.events.line.values.len() - 1, ..c });
            }
        }
    }
    out.lines = number;
    out
}

/// Decodes the text log lines of `data` (split at `\n`, a final empty piece is no
/// line), numbering them from `first_line`; `years` carries ctime years from the
/// file's blocks before.
pub fn decode_text_block(data: &[u8], first_line: i64, years: Years) -> TextBlock {
    decode_text_ranges(data, first_line, years, RANGE_BYTES)
}

fn decode_text_ranges(data: &[u8], first_line: i64, mut years: Years, range_bytes: usize) -> TextBlock {
    let pieces: Vec<(&[u8], usize)> =
        ranges(data, range_bytes).into_iter().map(|r| (r, r.as_ptr() as usize - data.as_ptr() as usize)).collect();
    let partials: Vec<Partial> = pieces.into_par_iter().map(|(r, offset)| decode_range(r, offset)).collect();
    let mut out = TextBlock {
        block: Block { slow_ops: Vec::new(), events: Vec::new(), problems: Vec::new(), unlisted: 0, lines: 0 },
        json_lines: Vec::new(),
        years,
    };
    let mut base = first_line - 1;
    for mut p in partials {
        // Years in line order: each range's stamps after the ranges before it.
        for c in p.ctime.drain(..) {
            let iso = c.iso(&mut years);
            let ts = utc_millis_in_range(&iso);
            let (ts_column, t_column) = if c.slow { (&mut p.slow.ts, &mut p.slow.t) } else { (&mut p.events.ts, &mut p.events.t) };
            ts_column.set(c.row, ts);
            if ts.is_none() {
                t_column.set(c.row, &iso);
            }
        }
        p.slow.line.values.iter_mut().for_each(|n| *n += base);
        p.events.line.values.iter_mut().for_each(|n| *n += base);
        p.problems.iter_mut().for_each(|pr| pr.line += base);
        out.json_lines.extend(p.json_lines.iter().map(|&(n, s, e)| (n + base, s, e)));
        base += p.lines;
        let block = &mut out.block;
        block.lines += p.lines;
        block.slow_ops.push(p.slow.finish());
        block.events.push(p.events.finish());
        let room = MAX_LISTED_PROBLEMS - block.problems.len();
        block.unlisted += p.unlisted + p.problems.len().saturating_sub(room) as u64;
        p.problems.truncate(room);
        block.problems.append(&mut p.problems);
    }
    out.years = years;
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{bools, ints, one, rows, strs};
    use super::*;

    const SLOW: &str = r#"2019-06-18T11:59:16.516+0100 I COMMAND  [conn1] command shop.$cmd appName: "MongoDB Shell" command: update { update: "orders", updates: [ { q: { a: 5 }, u: { $set: { b: 1 } } } ], $db: "shop" } numYields:0 nscannedObjects:10 keysExamined:3 reslen:79 errCode:99999999999999999999 locks:{ Global: { acquireCount: { r: 1 }, timeAcquiringMicros: { r: 12, w: 3 } } } storage:{ data: { bytesRead: 100 }, timeWaitingMicros: { cache: 9 } } protocol:op_msg 40ms"#;
    const EVENT: &str =
        "2019-06-18T11:59:01.265+0100 I NETWORK  [listener] connection accepted from 127.0.0.1:54540 #1 (1 connection now open)";

    fn decode(text: &str) -> TextBlock {
        decode_text_block(text.as_bytes(), 1, Years::new(2019))
    }

    fn problems(block: &Block) -> Vec<(i64, &str, &str)> {
        block.problems.iter().map(|p| (p.line, p.reason.as_str(), p.text.as_str())).collect()
    }

    #[test]
    fn slow_operation_columns() {
        let text = decode(SLOW);
        let slow = &text.block.slow_ops;
        assert_eq!(rows(slow), 1);
        assert_eq!(ints(slow, "ts"), [Some(1_560_855_556_516)]);
        assert_eq!(strs(slow, "t"), [None]);
        assert_eq!((strs(slow, "op_type"), strs(slow, "command")), (vec![one("command")], vec![one("update")]));
        assert_eq!((strs(slow, "ns"), strs(slow, "coll")), (vec![one("shop.orders")], vec![one("orders")]));
        assert_eq!(strs(slow, "shape"), [one(r#"{"q":{"a":1}}"#)]);
        assert_eq!(strs(slow, "app_name"), [one("MongoDB Shell")]);
        assert_eq!((ints(slow, "docs_examined"), ints(slow, "keys_examined")), (vec![Some(10)], vec![Some(3)]));
        assert_eq!(ints(slow, "err_code"), [None]);
        assert_eq!(ints(slow, "lock_wait_micros"), [Some(15)]);
        assert_eq!((ints(slow, "bytes_read"), ints(slow, "cache_wait_micros")), (vec![Some(100)], vec![Some(9)]));
        assert_eq!((ints(slow, "duration_ms"), bools(slow, "ok")), (vec![Some(40)], vec![Some(true)]));
        assert_eq!(bools(slow, "write_statement"), [Some(false)]);
        assert_eq!(problems(&text.block), [(1, "beyond int64, dropped: err_code", SLOW.chars().take(200).collect::<String>().as_str())]);
    }

    #[test]
    fn events_problems_and_json_lines() {
        let json = r#"  {"t":{"$date":"2024-01-02T03:04:05.678Z"},"msg":"x"}"#;
        let data = format!("{EVENT}\n\n{json}\nnot a line\r\n\u{1c}{{\nWed Foo  1 00:00:00 x\n{EVENT}\r");
        let text = decode(&data);
        let events = &text.block.events;
        assert_eq!(ints(events, "line"), [Some(1), Some(7)]);
        // Times read natively, as slow operations' are: no text left for polars.
        assert_eq!(ints(events, "ts"), [Some(1_560_855_541_265), Some(1_560_855_541_265)]);
        assert_eq!(strs(events, "t"), [None, None]);
        assert_eq!(strs(events, "kind"), [one("connection_accepted"), one("connection_accepted")]);
        // The text is the message: null, for Python to take msg's strings.
        assert_eq!(strs(events, "text"), [None, None]);
        let config = decode("2019-06-18T11:59:01.265+0100 I STORAGE [initandlisten] wiredtiger_open config: create,");
        assert_eq!(strs(&config.block.events, "text"), [one("create,")]);
        assert_eq!(ints(events, "connection_count"), [Some(1), Some(1)]);
        assert_eq!(strs(events, "ctx"), [one("listener"), one("listener")]);
        assert_eq!(ints(events, "id"), [None, None]);
        // The JSON line is the JSON decoder's, a line that Python strips to `{` nobody's.
        let at = data.find(json).unwrap();
        assert_eq!(text.json_lines, [(3, at, at + json.len())]);
        assert_eq!(
            problems(&text.block),
            [(2, "blank line", ""), (4, "no timestamp", "not a line"), (6, "no timestamp", "Wed Foo  1 00:00:00 x")]
        );
        assert_eq!(text.block.lines, 7);
    }

    #[test]
    fn ctime_years_follow_weekdays_and_roll_over_across_ranges() {
        // Wed Mar 5 is 2014 (hint 2019 and back); December then January rolls into 2015.
        let mut data = String::new();
        for (i, stamp) in ["Wed Mar  5 17:14:57.407", "Mon Dec 29 10:00:00", "Thu Jan  1 10:00:00.5"].iter().cycle().take(3).enumerate() {
            data.push_str(&format!("{stamp} [conn{i}] query test.docs query: {{ a: 1 }} 29ms\n{stamp} [conn{i}] end connection\n"));
        }
        let whole = decode_text_ranges(data.as_bytes(), 1, Years::new(2019), usize::MAX);
        let split = decode_text_ranges(data.as_bytes(), 1, Years::new(2019), 10);
        for text in [&whole, &split] {
            assert_eq!(ints(&text.block.slow_ops, "ts"), [Some(1_394_039_697_407), Some(1_419_847_200_000), Some(1_420_106_400_500)]);
            assert_eq!(ints(&text.block.events, "ts"), ints(&text.block.slow_ops, "ts"));
            assert_eq!(strs(&text.block.events, "t"), [None, None, None]);
            assert_eq!(text.years, Years { hint: 2019, year: Some(2015), month: 1 });
        }
        assert_eq!(ints(&whole.block.events, "line"), ints(&split.block.events, "line"));
        let next = decode_text_block(b"Wed Mar  4 00:00:00 x", 1, whole.years);
        assert_eq!(ints(&next.block.events, "ts"), [Some(1_425_427_200_000)]);
    }

    #[test]
    fn heads_read_by_hand_as_the_regex_reads_them() {
        let regex = regex_head;
        let stamps = [
            "2019-06-18T11:59:16.516+0100",
            "2019-06-18T11:59:16",
            "2019-06-18T11:59:16.+01:5x",
            "2019-06-18T11:59:16Z",
            "Wed Mar  5 17:14:57.407",
            "Wed Mar 123 17:14:57",
            "Wed Mar 12 17:14:57.x",
            "wed Mar 1 17:14:57",
            "2019-06-18 11:59:16",
        ];
        let rests = [
            "",
            " I COMMAND  [conn1] text",
            "  I5 NET [c] x",
            " I5X [c]",
            " D -  [ctx x]] y",
            " E  a [c",
            "  [ctx]",
            " W WRITE",
            " I \u{661} [c]",
            " I COMMAND [\u{e9}] x",
            " F2  A_B   [] ",
        ];
        for stamp in stamps {
            for rest in rests {
                let line = format!("{stamp}{rest}");
                assert_eq!(head(&line), regex(&line), "{line}");
                if let Some(fast) = ascii_head(&line) {
                    assert_eq!(Some(fast), regex(&line), "{line}");
                }
            }
        }
    }

    #[test]
    fn impossible_dates_are_left_to_polars_with_their_text() {
        let lines = ["Sat Feb 30 01:02:03 [c] query a.b 5ms", "0000-01-01T00:00:00.000Z I COMMAND [c] query a.b 5ms"];
        let text = decode(&lines.map(|l| format!("{l}\n{}", l.replace(" 5ms", " x"))).join("\n"));
        for table in [&text.block.slow_ops, &text.block.events] {
            assert_eq!(ints(table, "ts"), [None, None]);
            assert_eq!(strs(table, "t"), [one("2019-02-30T01:02:03.000Z"), one("0000-01-01T00:00:00.000Z")]);
        }
    }

    #[test]
    fn legacy_query_forms_and_oversize_lines() {
        let data = concat!(
            "Wed Mar  5 17:14:57.407 [conn4] query test.docs query: { query: { foo: 33.0 }, orderby: { foo: -1.0 } } nscanned:100000 nreturned:1 29ms\n",
            "2019-06-18T11:59:16.516Z I WRITE [conn2] warning: log line attempted (12k) over max size (10k), printing beginning and end ... remove db.c query: { a: ObjectId('5d') } ndeleted:1 3ms\n",
            "2019-06-18T11:59:16.516Z I COMMAND [conn2] getmore db.c originatingCommand: { find: \"c\", filter: { x: 1 } } planSummary: IXSCAN { x: 1 } 1 ms\n",
        );
        let slow = &decode(data).block.slow_ops;
        assert_eq!(strs(slow, "command"), [one("find"), one("remove")]);
        assert_eq!(strs(slow, "shape"), [one(r#"{"filter":{"foo":1},"sort":{"foo":-1}}"#), one(r#"{"q":{"a":1}}"#)]);
        assert_eq!(strs(slow, "truncated"), [None, one("\"line of 12 KB shortened by the server\"")]);
        assert_eq!(bools(slow, "write_statement"), [Some(false), Some(true)]);
        assert_eq!(ints(slow, "keys_examined"), [Some(100_000), None]);
        // "1 ms" is no duration: the line is an event.
        assert_eq!(rows(slow), 2);
    }
}
