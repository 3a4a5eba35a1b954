//! One decoded line as one row of slow_ops or events: the values it carries,
//! those derived from them (UTC time, command name, namespace, plan kind,
//! shape) and the names of the values dropped for their type.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::columns::{EventColumns, SlowColumns, MAX_VIEW_BYTES};
use super::line::{text, timestamp, EventLine, Field, LockWaits, SlowAttr, SlowLine};
use super::{shape, FastMap};

/// A range's shape views by command text (commands without an originating one).
pub(super) type Interned = FastMap<Box<str>, Option<u128>>;

/// A non-optional string (`ctx`, `s`, …): "" when absent, dropped when null or wrong.
fn text_or_empty<'s>(f: &'s Field<Cow<'_, str>>, name: &'static str, dropped: &mut Vec<&'static str>) -> &'s str {
    if f.is_null_or_wrong() {
        dropped.push(name);
    }
    text(f).unwrap_or("")
}

/// UTC milliseconds of `YYYY-MM-DDTHH:MM:SS.mmm` with `Z`, `±HH:MM` or
/// `±HHMM`: every form mongod writes. Anything else (None) is left to polars.
pub fn utc_millis(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.')];
    if b.len() < 24 || separators.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second, millis) = (num(11, 2)?, num(14, 2)?, num(17, 2)?, num(20, 3)?);
    let offset_minutes = match &b[23..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), ..] => {
            let minutes_at = if b.get(26) == Some(&b':') { 27 } else { 26 };
            if b.len() != minutes_at + 2 {
                return None;
            }
            let (h, m) = (num(24, 2)?, num(minutes_at, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' {
                h * 60 + m
            } else {
                -(h * 60 + m)
            }
        }
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&month) || day < 1 || day > month_days[month as usize - 1] || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second) * 1000 + millis)
}

/// The command name: the first key of the command document as written, as
/// the regex `^\{\s*"([^"]+)"` reads it (escapes are not decoded).
fn first_key(command: &str) -> Option<&str> {
    let rest = command.strip_prefix('{')?.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix('"')?;
    let key = &rest[..rest.find('"')?];
    (!key.is_empty()).then_some(key)
}

/// Commands on one collection that mongod logs against `<db>.$cmd`.
pub(super) const COLLECTION_COMMANDS: [&str; 5] = ["insert", "update", "delete", "findAndModify", "findandmodify"];

/// The collection a write command names: its first value, when that is a plain string
/// (`{"update":"orders",...}` -> `orders`; escapes are not decoded, so such names are left alone).
fn command_target(command: &str) -> Option<&str> {
    let rest = command.strip_prefix('{')?.trim_start_matches([' ', '\t', '\n', '\r']).strip_prefix('"')?;
    let rest = &rest[rest.find('"')? + 1..];
    let rest = rest
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .strip_prefix(':')?
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .strip_prefix('"')?;
    let name = &rest[..rest.find('"')?];
    (!name.is_empty() && !name.contains('\\')).then_some(name)
}

/// The namespace of a slow operation: write commands logged against `<db>.$cmd` are
/// about the collection they name (docs/log-format.md §4), so `shop.$cmd` becomes `shop.orders`.
fn operation_ns<'a>(ns: Option<&'a str>, name: Option<&str>, command: Option<&'a str>) -> Option<std::borrow::Cow<'a, str>> {
    let db = ns?.strip_suffix(".$cmd");
    match (db, name, command) {
        (Some(db), Some(name), Some(command)) if COLLECTION_COMMANDS.contains(&name) => match command_target(command) {
            Some(coll) => Some(format!("{db}.{coll}").into()),
            None => ns.map(Into::into),
        },
        _ => ns.map(Into::into),
    }
}

/// The plan kind: the leading `[A-Z_]+` of the plan summary (`IXSCAN { a: 1 }`).
pub(super) fn plan_kind(summary: &str) -> Option<&str> {
    let end = summary.bytes().position(|b| !(b.is_ascii_uppercase() || b == b'_')).unwrap_or(summary.len());
    (end > 0).then(|| &summary[..end])
}

/// `db` and `coll` of a namespace: split at the first dot, as polars' `splitn(".", 2)`.
pub(super) fn db_and_coll(ns: Option<&str>) -> (Option<&str>, Option<&str>) {
    match ns.map(|ns| ns.split_once('.').ok_or(ns)) {
        None => (None, None),
        Some(Ok((db, coll))) => (Some(db), Some(coll)),
        Some(Err(db)) => (Some(db), None),
    }
}

impl SlowColumns {
    /// The shape of the command: computed once per distinct command text in a
    /// range, its bytes stored once per range.
    fn push_shape(&mut self, command: Option<&str>, originating: Option<&str>, interned: &mut Interned) {
        let Some(command) = command else { return self.shape.push_view(None) };
        if originating.is_none() {
            if let Some(&view) = interned.get(command) {
                return self.shape.push_view(view);
            }
        }
        let shape = shape::cached_query_shape(command, originating);
        let view = shape.filter(|s| s.len() <= MAX_VIEW_BYTES).map(|s| self.shape.view_of(s.as_bytes()));
        if originating.is_none() {
            interned.insert(command.into(), view);
        }
        self.shape.push_view(view);
    }

    pub(super) fn push(&mut self, line: &SlowLine, number: i64, interned: &mut Interned, dropped: &mut Vec<&'static str>) {
        static NO_ATTR: SlowAttr<'static> = SlowAttr {
            op_type: Field::Absent,
            ns: Field::Absent,
            app_name: Field::Absent,
            command: None,
            originating_command: None,
            plan_summary: Field::Absent,
            keys_examined: Field::Absent,
            docs_examined: Field::Absent,
            nreturned: Field::Absent,
            num_yields: Field::Absent,
            write_conflicts: Field::Absent,
            query_hash: Field::Absent,
            plan_cache_shape_hash: Field::Absent,
            plan_cache_key: Field::Absent,
            query_shape_hash: Field::Absent,
            ok: Field::Absent,
            err_name: Field::Absent,
            err_code: Field::Absent,
            reslen: Field::Absent,
            locks: LockWaits(None),
            flow_control: Field::Absent,
            storage: Field::Absent,
            queues: Field::Absent,
            working_millis: Field::Absent,
            cpu_nanos: Field::Absent,
            remote: Field::Absent,
            duration_millis: Field::Absent,
        };
        if line.c.is_null_or_wrong() {
            dropped.push("c");
        }
        let connection = text_or_empty(&line.ctx, "ctx", dropped);
        if line.attr.is_wrong() {
            dropped.push("attr");
        }
        let a = line.attr.get().unwrap_or(&NO_ATTR);
        dropped.extend(a.wrong().map(attr_name));
        let int = |f: &Field<i64>| f.get().copied();
        let storage = a.storage.get();
        let data = storage.and_then(|s| s.data.get());
        let waits = storage.and_then(|s| s.time_waiting_micros.get());
        let queues = a.queues.get();
        let execution = queues.and_then(|q| q.execution.get());
        let ingress = queues.and_then(|q| q.ingress.get());

        let t = timestamp(&line.t);
        let ts = t.and_then(utc_millis);
        self.ts.push(ts);
        self.t.push(t.filter(|_| ts.is_none()));
        let component = text(&line.c);
        self.component.push(component);
        self.connection.push(Some(connection));
        let op_type = text(&a.op_type);
        self.op_type.push(op_type);
        // A WRITE line is one statement of a write command, named by its type.
        let is_statement = component == Some("WRITE");
        let command = a.command.map(RawValue::get);
        let name = command.and_then(first_key);
        self.command.push(op_type.filter(|_| is_statement).or(name));
        self.write_statement.push(Some(is_statement));
        let ns = operation_ns(text(&a.ns), name.filter(|_| !is_statement), command);
        let ns = ns.as_deref();
        self.ns.push(ns);
        let (db, coll) = db_and_coll(ns);
        self.db.push(db);
        self.coll.push(coll);
        self.app_name.push(text(&a.app_name));
        self.command_json.push(command);
        let originating = a.originating_command.map(RawValue::get);
        self.originating_command_json.push(originating);
        self.push_shape(command, originating, interned);
        let plan = text(&a.plan_summary);
        self.plan_summary.push(plan);
        self.plan_kind.push(plan.and_then(plan_kind));
        self.keys_examined.push(int(&a.keys_examined));
        self.docs_examined.push(int(&a.docs_examined));
        self.nreturned.push(int(&a.nreturned));
        self.num_yields.push(int(&a.num_yields));
        self.query_hash.push(text(&a.query_hash).or(text(&a.plan_cache_shape_hash)));
        self.plan_cache_key.push(text(&a.plan_cache_key));
        self.query_shape_hash.push(text(&a.query_shape_hash));
        let err_name = text(&a.err_name);
        // No `ok` but an error name: the operation failed.
        self.ok.push(a.ok.get().map(|&ok| ok != 0.0).or(err_name.map(|_| false)));
        self.err_name.push(err_name);
        self.err_code.push(int(&a.err_code));
        self.reslen.push(int(&a.reslen));
        self.write_conflicts.push(int(&a.write_conflicts));
        self.lock_wait_micros.push(a.locks.0);
        self.flow_control_micros.push(a.flow_control.get().and_then(|f| int(&f.time_acquiring_micros)));
        self.cache_wait_micros.push(waits.and_then(|w| int(&w.cache)));
        self.schema_lock_wait_micros.push(waits.and_then(|w| int(&w.schema_lock)));
        self.handle_lock_wait_micros.push(waits.and_then(|w| int(&w.handle_lock)));
        self.bytes_read.push(data.and_then(|d| int(&d.bytes_read)));
        self.read_micros.push(data.and_then(|d| int(&d.time_reading_micros)));
        self.bytes_written.push(data.and_then(|d| int(&d.bytes_written)));
        self.write_micros.push(data.and_then(|d| int(&d.time_writing_micros)));
        self.execution_queued_micros.push(execution.and_then(|q| int(&q.total_time_queued_micros)));
        self.execution_admissions.push(execution.and_then(|q| int(&q.admissions)));
        self.ingress_queued_micros.push(ingress.and_then(|q| int(&q.total_time_queued_micros)));
        self.working_ms.push(int(&a.working_millis));
        self.cpu_nanos.push(int(&a.cpu_nanos));
        self.remote.push(text(&a.remote));
        self.duration_ms.push(int(&a.duration_millis));
        self.truncated.push(line.truncated.map(RawValue::get));
        self.truncated_size.push(line.size.map(RawValue::get));
        self.line.push(Some(number));
    }
}

/// `attr.<name>` for the problem text, without allocating per line.
fn attr_name(name: &'static str) -> &'static str {
    macro_rules! prefixed {
        ($($n:literal),+) => {
            match name { $($n => concat!("attr.", $n),)+ _ => "attr" }
        };
    }
    prefixed!(
        "type",
        "ns",
        "appName",
        "planSummary",
        "keysExamined",
        "docsExamined",
        "nreturned",
        "numYields",
        "writeConflicts",
        "queryHash",
        "planCacheShapeHash",
        "planCacheKey",
        "queryShapeHash",
        "ok",
        "errName",
        "errCode",
        "reslen",
        "flowControl",
        "storage",
        "queues",
        "workingMillis",
        "cpuNanos",
        "remote",
        "durationMillis"
    )
}

impl EventColumns {
    pub(super) fn push(&mut self, line: &EventLine, number: i64, attr_ids: &[i64], dropped: &mut Vec<&'static str>) {
        let severity = text_or_empty(&line.s, "s", dropped);
        let component = text_or_empty(&line.c, "c", dropped);
        if line.id.is_wrong() {
            dropped.push("id");
        }
        let id = line.id.get().copied();
        let ctx = text_or_empty(&line.ctx, "ctx", dropped);
        let msg = text_or_empty(&line.msg, "msg", dropped);
        self.t.push(timestamp(&line.t));
        self.severity.push(Some(severity));
        self.component.push(Some(component));
        self.id.push(id);
        self.ctx.push(Some(ctx));
        self.msg.push(Some(msg));
        let wanted = id.is_some_and(|id| attr_ids.contains(&id));
        self.attr.push(line.attr.filter(|_| wanted).map(RawValue::get));
        self.line.push(Some(number));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_every_form_mongod_writes() {
        let at = |t: &str| utc_millis(t);
        assert_eq!(at("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(at("2024-01-02T03:04:05.678+01:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-02T03:04:05.678+0100"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-02T02:04:05.678+00:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-01-01T22:04:05.678-04:00"), Some(1_704_161_045_678));
        assert_eq!(at("2024-02-29T00:00:00.000Z"), Some(1_709_164_800_000));
        assert_eq!(at("1969-12-31T23:59:59.999Z"), Some(-1));
        // Left to polars: other forms, impossible dates, junk.
        for t in [
            "2024-02-30T00:00:00.000Z",
            "2023-02-29T00:00:00.000Z",
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.6789Z",
            "2024-01-02T24:00:00.000Z",
            "2024-01-02T03:04:05.678+24:00",
            "2024-01-02T03:04:05.678+01:0",
            "2024-01-02 03:04:05.678Z",
            "2024-01-02T03:04:05.678",
            "2024-01-02T03:04:05.678Zx",
            "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}",
            "",
        ] {
            assert_eq!(at(t), None, "{t}");
        }
    }

    #[test]
    fn names_namespaces_and_plan_kinds() {
        assert_eq!(first_key(r#"{ "aggregate":"c"}"#), Some("aggregate"));
        assert_eq!(first_key(r#"{"a\"b":1}"#), Some("a\\"));
        assert_eq!(first_key(r#"{"":1}"#), None);
        assert_eq!(first_key("{}"), None);
        assert_eq!(first_key("null"), None);
        assert_eq!(db_and_coll(Some("a.b.c")), (Some("a"), Some("b.c")));
        let ns = |ns, command| operation_ns(Some(ns), Some(first_key(command).unwrap()), Some(command)).map(|c| c.into_owned());
        assert_eq!(ns("shop.$cmd", r#"{"update":"orders","updates":[]}"#).as_deref(), Some("shop.orders"));
        assert_eq!(ns("shop.$cmd", r#"{ "delete" : "a.b", "deletes":[]}"#).as_deref(), Some("shop.a.b"));
        assert_eq!(ns("admin.$cmd", r#"{"getLog":"startupWarnings"}"#).as_deref(), Some("admin.$cmd"));
        assert_eq!(ns("shop.$cmd", r#"{"update":"or\"ders"}"#).as_deref(), Some("shop.$cmd"));
        assert_eq!(ns("shop.orders", r#"{"update":"orders"}"#).as_deref(), Some("shop.orders"));
        assert_eq!(db_and_coll(Some("admin")), (Some("admin"), None));
        assert_eq!(db_and_coll(Some("x.")), (Some("x"), Some("")));
        assert_eq!(db_and_coll(None), (None, None));
        assert_eq!(plan_kind("COUNT_SCAN { a: 1 }"), Some("COUNT_SCAN"));
        assert_eq!(plan_kind("IDHACK"), Some("IDHACK"));
        assert_eq!(plan_kind("ixscan"), None);
    }
}
