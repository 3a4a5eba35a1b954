//! JSON (4.4+) mongod log lines straight into columns.
//!
//! A block of lines is cut into line-aligned ranges that rayon decodes in
//! parallel. Each line is parsed once by serde_json into borrowed structs that
//! hold only what the frames need; every other attribute is skipped without
//! being built. A byte pre-filter on `"id":51803` picks the slow-query struct,
//! and the id is checked after parsing, so a line the filter misjudged is parsed
//! again with the other struct rather than lost.
//!
//! Customer logs are untrusted: a value of an unexpected JSON type costs that
//! value (reported as `unexpected types, dropped: …`), not the line; a line that
//! is not JSON is one problem. Nothing here panics on input.
//!
//! `line` is the serde model of a line, with its lenient leaves; `columns`
//! the Arrow column builders and the slow_ops and events tables; `rows` what
//! one line puts in a table's row; `shape` the query shapes. Here a block is
//! cut into ranges, decoded in parallel and put back in line order.

use std::collections::HashMap;

use memchr::memmem::Finder;
use rayon::prelude::*;

mod columns;
mod line;
mod pystr;
mod rows;
mod shape;
mod shell;
mod text;
mod text_events;

pub use columns::{Bools, Column, EventColumns, Ints, SlowColumns, Strs, Table};
pub use line::{
    Date, EventLine, Field, FlowControl, Leaf, LockWaits, Queue, Queues, SlowAttr, SlowLine, Storage, StorageData, StorageWaits,
};
pub use rows::utc_millis;
pub use shape::query_shape;
pub use text::{decode_text_block, TextBlock, Years};

use line::{decode_line, timestamp, without_duplicate_keys, Decoded, Failure};
use rows::Interned;

pub const SLOW_QUERY_ID: i64 = 51803;
const SLOW_QUERY_MARK: &[u8] = b"\"id\":51803";
/// Enough of a bad line to recognise it, not a whole 10 KB attribute dump.
pub const SNIPPET_BYTES: usize = 200;
/// Problems listed per block; the rest are counted (`Block::unlisted`). A file of
/// nothing but bad lines (6 million `{}` in a 17 KB gzip) would otherwise hold a
/// row, a reason and a snippet for every line. Python lists as many per block.
pub const MAX_LISTED_PROBLEMS: usize = 10_000;
/// Lines are decoded in ranges of about this size, a few per core per block.
/// Each range becomes its own Arrow chunk, and assembling chunks in Python
/// costs more than finer load balancing gains: 1 MB ranges were 40 % slower.
const RANGE_BYTES: usize = 4 << 20;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub struct Problem {
    pub line: i64,
    pub reason: String,
    pub text: String,
}

/// The decoded lines of one block: slow ops and events as one table per
/// line range (Arrow chunks, so ranges are never copied together), problems.
pub struct Block {
    pub slow_ops: Vec<Table>,
    pub events: Vec<Table>,
    pub problems: Vec<Problem>,
    /// Problems past MAX_LISTED_PROBLEMS: counted, not listed.
    pub unlisted: u64,
    /// Lines in the block, so callers can number the next block without a pass of their own.
    pub lines: i64,
}

struct Partial {
    slow: SlowColumns,
    events: EventColumns,
    problems: Vec<Problem>,
    unlisted: u64,
    lines: i64,
}

impl Partial {
    fn problem(&mut self, number: i64, reason: String, line: &[u8]) {
        if self.problems.len() >= MAX_LISTED_PROBLEMS {
            self.unlisted += 1;
            return;
        }
        let text = String::from_utf8_lossy(&line[..line.len().min(SNIPPET_BYTES)]).into_owned();
        self.problems.push(Problem { line: number, reason, text });
    }

    /// Renumbers lines by `base` (the block's line number of this range's first line).
    fn shift(&mut self, base: i64) {
        self.slow.line.values.iter_mut().for_each(|n| *n += base);
        self.events.line.values.iter_mut().for_each(|n| *n += base);
        self.problems.iter_mut().for_each(|p| p.line += base);
    }
}

fn is_blank(line: &[u8]) -> bool {
    // Python's bytes.strip() whitespace, which the text decoders share.
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

fn decode_range(range: &[u8], mark: &Finder, attr_ids: &[i64]) -> Partial {
    let lines = memchr::memchr_iter(b'\n', range).count() + 1;
    let slow = mark.find_iter(range).count().min(lines);
    let mut out = Partial {
        slow: SlowColumns::with_capacity(slow),
        events: EventColumns::with_capacity(lines - slow),
        problems: Vec::new(),
        unlisted: 0,
        lines: 0,
    };
    let mut interned = Interned::default();
    let mut dropped = Vec::new();
    let mut start = 0;
    let mut number = 0i64;
    while start < range.len() {
        let end = memchr::memchr(b'\n', &range[start..]).map_or(range.len(), |i| start + i);
        let line = &range[start..end];
        start = end + 1;
        number += 1;
        if is_blank(line) {
            out.problem(number, "blank line".into(), line);
            continue;
        }
        let rebuilt;
        let decoded = match decode_line(line, mark) {
            Err(Failure::DuplicateKey) => match without_duplicate_keys(line) {
                Ok(text) => {
                    rebuilt = text;
                    decode_line(rebuilt.as_bytes(), mark)
                }
                Err(failure) => Err(failure),
            },
            other => other,
        };
        let decoded = match decoded {
            Ok(d) => d,
            Err(Failure::Reason(reason)) => {
                out.problem(number, reason, line);
                continue;
            }
            Err(Failure::DuplicateKey) => {
                out.problem(number, "not a log object: repeated keys".into(), line);
                continue;
            }
        };
        let t = match &decoded {
            Decoded::Slow(s) => &s.t,
            Decoded::Event(e) => &e.t,
        };
        if timestamp(t).is_none() {
            out.problem(number, "no timestamp".into(), line);
            continue;
        }
        dropped.clear();
        match &decoded {
            Decoded::Slow(s) => out.slow.push(s, number, &mut interned, &mut dropped),
            Decoded::Event(e) => out.events.push(e, number, attr_ids, &mut dropped),
        }
        if !dropped.is_empty() {
            out.problem(number, format!("unexpected types, dropped: {}", dropped.join(", ")), line);
        }
    }
    out.lines = number;
    out
}

/// Line-aligned ranges of about `target` bytes (a range holds whole lines), at least one.
fn ranges(data: &[u8], target: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let mut end = (start + target).min(data.len());
        if end < data.len() {
            end = memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |i| end + i + 1);
        }
        out.push(&data[start..end]);
        start = end;
    }
    if out.is_empty() {
        out.push(data); // one empty table, so the columns are there
    }
    out
}

/// Decodes the lines of `data` (split at `\n`, a final empty piece is no line),
/// numbering them from `first_line`. `attr_ids`: event ids whose attributes are
/// returned as JSON text.
pub fn decode_block(data: &[u8], first_line: i64, attr_ids: &[i64]) -> Block {
    decode_ranges(data, first_line, attr_ids, RANGE_BYTES)
}

fn decode_ranges(data: &[u8], first_line: i64, attr_ids: &[i64], range_bytes: usize) -> Block {
    let mark = Finder::new(SLOW_QUERY_MARK);
    let partials: Vec<Partial> = ranges(data, range_bytes).into_par_iter().map(|r| decode_range(r, &mark, attr_ids)).collect();
    let mut block = Block { slow_ops: Vec::new(), events: Vec::new(), problems: Vec::new(), unlisted: 0, lines: 0 };
    let mut base = first_line - 1;
    for mut p in partials {
        p.shift(base);
        base += p.lines;
        block.lines += p.lines;
        block.slow_ops.push(p.slow.finish());
        block.events.push(p.events.finish());
        // Each range listed up to the limit; the block lists the first ones.
        let room = MAX_LISTED_PROBLEMS - block.problems.len();
        block.unlisted += p.unlisted + p.problems.len().saturating_sub(room) as u64;
        p.problems.truncate(room);
        block.problems.append(&mut p.problems);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: &str = r#"{"t":{"$date":"2024-01-02T03:04:05.678+01:00"},"s":"I",  "c":"COMMAND",  "id":51803,   "ctx":"conn7","msg":"Slow query","attr":{"type":"command","ns":"db.c","appName":"app","command":{"find":"c","filter":{"a":1}},"planSummary":"COLLSCAN","keysExamined":0,"docsExamined":10,"nreturned":1,"queryHash":"ABC","planCacheKey":"DEF","ok":1,"reslen":100,"locks":{"Global":{"acquireCount":{"r":1},"timeAcquiringMicros":{"r":12,"w":3}},"Database":{"timeAcquiringMicros":{"r":5}}},"flowControl":{"acquireCount":1,"timeAcquiringMicros":7},"storage":{"data":{"bytesRead":100,"timeReadingMicros":20},"timeWaitingMicros":{"cache":9}},"protocol":"op_msg","durationMillis":40}}"#;
    const EVENT: &str = r#"{"t":{"$date":"2024-01-02T02:00:00.000Z"},"s":"I","c":"NETWORK","id":22943,"ctx":"listener","msg":"Connection accepted","attr":{"remote":"1.2.3.4:5","connectionCount":3}}"#;

    pub(super) fn column<'t>(table: &'t Table, name: &str) -> &'t Column {
        &table.columns.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn valid(validity: &Option<Vec<u8>>, i: usize) -> bool {
        validity.as_ref().is_none_or(|bits| bits[i / 8] & (1 << (i % 8)) != 0)
    }

    pub(super) fn ints(tables: &[Table], name: &str) -> Vec<Option<i64>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Int { values, validity } = column(table, name) else { panic!("{name} is not int64") };
            out.extend(values.iter().enumerate().map(|(i, v)| valid(validity, i).then_some(*v)));
        }
        out
    }

    pub(super) fn strs(tables: &[Table], name: &str) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Str { views, buffers, validity } = column(table, name) else { panic!("{name} is not a string") };
            out.extend(views.iter().enumerate().map(|(i, view)| {
                let b = view.to_le_bytes();
                let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
                let len = word(0);
                let text = if len <= 12 { b[4..4 + len].to_vec() } else { buffers[word(8)][word(12)..word(12) + len].to_vec() };
                assert!(len <= 12 || text[..4] == b[4..8], "view prefix");
                valid(validity, i).then(|| String::from_utf8(text).unwrap())
            }));
        }
        out
    }

    pub(super) fn bools(tables: &[Table], name: &str) -> Vec<Option<bool>> {
        let mut out = Vec::new();
        for table in tables {
            let Column::Bool { bits, validity } = column(table, name) else { panic!("{name} is not bool") };
            out.extend((0..table.rows).map(|i| valid(validity, i).then(|| bits[i / 8] & (1 << (i % 8)) != 0)));
        }
        out
    }

    pub(super) fn rows(tables: &[Table]) -> usize {
        tables.iter().map(|t| t.rows).sum()
    }

    fn problems(block: &Block) -> Vec<(i64, &str)> {
        block.problems.iter().map(|p| (p.line, p.reason.as_str())).collect()
    }

    pub(super) fn one(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn slow_query_columns() {
        let block = decode_block(format!("{SLOW}\n{EVENT}\n").as_bytes(), 1, &[22943]);
        let slow = &block.slow_ops;
        assert_eq!(rows(slow), 1);
        assert!(block.problems.is_empty());
        assert_eq!(ints(slow, "ts"), [Some(1_704_161_045_678)]);
        assert_eq!(strs(slow, "t"), [None]);
        assert_eq!(strs(slow, "command"), [one("find")]);
        assert_eq!(bools(slow, "write_statement"), [Some(false)]);
        assert_eq!((strs(slow, "db"), strs(slow, "coll")), (vec![one("db")], vec![one("c")]));
        assert_eq!(strs(slow, "plan_kind"), [one("COLLSCAN")]);
        assert_eq!(strs(slow, "shape"), [one(r#"{"filter":{"a":1}}"#)]);
        assert_eq!(strs(slow, "component"), [one("COMMAND")]);
        assert_eq!(strs(slow, "connection"), [one("conn7")]);
        assert_eq!(strs(slow, "command_json"), [one(r#"{"find":"c","filter":{"a":1}}"#)]);
        assert_eq!(strs(slow, "originating_command_json"), [None]);
        assert_eq!(strs(slow, "query_hash"), [one("ABC")]);
        assert_eq!(ints(slow, "docs_examined"), [Some(10)]);
        assert_eq!(ints(slow, "lock_wait_micros"), [Some(20)]);
        assert_eq!(ints(slow, "flow_control_micros"), [Some(7)]);
        assert_eq!(ints(slow, "cache_wait_micros"), [Some(9)]);
        assert_eq!(ints(slow, "schema_lock_wait_micros"), [None]);
        assert_eq!(ints(slow, "bytes_read"), [Some(100)]);
        assert_eq!(ints(slow, "duration_ms"), [Some(40)]);
        assert_eq!(ints(slow, "working_ms"), [None]);
        assert_eq!(bools(slow, "ok"), [Some(true)]);
        assert_eq!(ints(slow, "line"), [Some(1)]);
        let events = &block.events;
        assert_eq!(rows(events), 1);
        assert_eq!(ints(events, "id"), [Some(22943)]);
        assert_eq!(strs(events, "attr"), [one(r#"{"remote":"1.2.3.4:5","connectionCount":3}"#)]);
        assert_eq!(ints(events, "line"), [Some(2)]);
    }

    #[test]
    fn attributes_only_for_ids_asked_for() {
        let block = decode_block(EVENT.as_bytes(), 1, &[1]);
        assert_eq!(strs(&block.events, "attr"), [None]);
    }

    #[test]
    fn pre_filter_misses_and_false_hits_are_decoded_by_their_id() {
        let spaced = SLOW.replace(r#""id":51803"#, r#""id": 51803"#);
        let mentions = EVENT.replace("listener", r#"\"id\":51803"#).replace(r#""remote""#, r#""x":"\"id\":51803","remote""#);
        let not_escaped = EVENT.replace(r#""msg":"Connection accepted""#, r#""msg":"\"id\":51803""#);
        let block = decode_block(format!("{spaced}\n{mentions}\n{not_escaped}").as_bytes(), 1, &[]);
        assert_eq!(ints(&block.slow_ops, "line"), [Some(1)]);
        assert_eq!(ints(&block.slow_ops, "duration_ms"), [Some(40)]);
        assert_eq!(ints(&block.events, "line"), [Some(2), Some(3)]);
        assert!(block.problems.is_empty());
    }

    #[test]
    fn hash_falls_back_to_plan_cache_shape_hash_and_error_name_means_not_ok() {
        let line = r#"{"t":{"$date":"2025-01-01T00:00:00Z"},"c":"COMMAND","id":51803,"attr":{"planCacheShapeHash":"X1","errName":"Boom","queues":{"execution":{"admissions":2,"totalTimeQueuedMicros":5}}}}"#;
        let block = decode_block(line.as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(strs(slow, "query_hash"), [one("X1")]);
        assert_eq!(bools(slow, "ok"), [Some(false)]);
        assert_eq!(ints(slow, "execution_admissions"), [Some(2)]);
        assert_eq!(ints(slow, "execution_queued_micros"), [Some(5)]);
        assert_eq!(ints(slow, "lock_wait_micros"), [None]);
        assert_eq!(strs(slow, "connection"), [one("")]);
    }

    #[test]
    fn wrong_types_cost_the_value_not_the_line() {
        let line = r#"{"t":{"$date":"2024-01-02T03:04:06.000Z"},"c":"COMMAND","id":51803,"ctx":null,"attr":{"durationMillis":"soon","ns":"db.c","ok":true,"storage":{"data":{"bytesRead":"x","timeReadingMicros":3}},"keysExamined":1.5,"command":null}}"#;
        let block = decode_block(line.as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(ints(slow, "duration_ms"), [None]);
        assert_eq!(strs(slow, "ns"), [one("db.c")]);
        assert_eq!(ints(slow, "read_micros"), [None]);
        assert_eq!(strs(slow, "command_json"), [one("null")]);
        assert_eq!(
            problems(&block),
            [(1, "unexpected types, dropped: ctx, attr.keysExamined, attr.ok, attr.storage, attr.durationMillis")]
        );
    }

    #[test]
    fn repeated_keys_keep_the_last_value() {
        let line = SLOW.replace(r#""docsExamined":10"#, r#""docsExamined":"x","storage":7,"docsExamined":11"#);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(ints(&block.slow_ops, "docs_examined"), [Some(11)]);
        assert_eq!(ints(&block.slow_ops, "bytes_read"), [Some(100)]);
        assert_eq!(strs(&block.slow_ops, "command_json"), [one(r#"{"find":"c","filter":{"a":1}}"#)]);
        assert!(block.problems.is_empty());
    }

    #[test]
    fn event_wrong_types_and_missing_timestamp() {
        let odd = EVENT.replace(r#""s":"I""#, r#""s":5"#).replace(r#""id":22943"#, r#""id":"x""#);
        let no_t = EVENT.replace(r#""t":{"$date":"2024-01-02T02:00:00.000Z"},"#, "");
        let bad_t = EVENT.replace(r#"{"$date":"2024-01-02T02:00:00.000Z"}"#, r#"{"$date":1}"#);
        let block = decode_block(format!("{odd}\n{no_t}\n{bad_t}\n").as_bytes(), 10, &[]);
        assert_eq!(strs(&block.events, "severity"), [one("")]);
        assert_eq!(ints(&block.events, "id"), [None]);
        assert_eq!(problems(&block), [(10, "unexpected types, dropped: s, id"), (11, "no timestamp"), (12, "no timestamp")]);
    }

    #[test]
    fn bad_lines_are_problems_with_line_numbers() {
        let cut = &SLOW[..120];
        let mut data = format!("{SLOW}\n\n   \ncontainer prefix: not json\n[1,2]\n{cut}\n").into_bytes();
        data.extend_from_slice(b"\x00\xff\xfe junk\n");
        data.extend_from_slice(
            SLOW.replace("conn7", "conn\u{e9}").as_bytes().iter().map(|&b| if b == 0xc3 { 0xff } else { b }).collect::<Vec<_>>().as_slice(),
        );
        data.extend_from_slice(b"\n{\"t\":{\"$date\":\"x\"},\"id\":1} trailing\n");
        let block = decode_block(&data, 1, &[]);
        assert_eq!(rows(&block.slow_ops), 1);
        let found = problems(&block);
        let lines: Vec<i64> = found.iter().map(|p| p.0).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(found[0].1, "blank line");
        assert_eq!(found[1].1, "blank line");
        assert!(found[2].1.starts_with("not JSON"));
        assert_eq!(found[3].1, "not a log object");
        assert!(found[4].1.starts_with("not JSON: EOF"), "{}", found[4].1);
        assert!(found[5].1.starts_with("not JSON"));
        assert!(found[6].1.starts_with("not JSON"), "invalid UTF-8: {}", found[6].1);
        assert!(found[7].1.starts_with("not JSON: trailing"), "{}", found[7].1);
        assert!(block.problems[6].text.contains('\u{fffd}'));
    }

    #[test]
    fn snippets_are_cut_on_bytes_without_panicking_mid_character() {
        let line = "\u{e9}".repeat(300);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(block.problems[0].text.chars().filter(|&c| c == '\u{e9}').count(), 100);
    }

    #[test]
    fn escaped_strings_and_crlf() {
        let line = SLOW.replace(r#""ns":"db.c""#, r#""ns":"db.\u0063\n""#) + "\r";
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "ns"), [one("db.c\n")]);
        assert!(block.problems.is_empty());
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        let line = format!(r#"{{"t":{{"$date":"x"}},"id":51803,"attr":{{"command":{deep},"storage":{deep}}}}}"#);
        let cut = &line[..line.len() - 1000];
        let block = decode_block(format!("{line}\n{cut}").as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "command_json"), [Some(deep)]);
        assert_eq!(problems(&block)[0], (1, "unexpected types, dropped: attr.storage"));
        assert!(problems(&block)[1].1.starts_with("not JSON: EOF"));
    }

    #[test]
    fn ranges_keep_line_numbers_and_order() {
        let mut data = String::new();
        for i in 0..500 {
            data.push_str(&if i % 7 == 3 {
                "junk".to_string()
            } else if i % 2 == 0 {
                SLOW.to_string()
            } else {
                EVENT.to_string()
            });
            data.push('\n');
        }
        data.push_str(SLOW); // no final newline
        let whole = decode_ranges(data.as_bytes(), 5, &[], usize::MAX);
        let split = decode_ranges(data.as_bytes(), 5, &[], 1000);
        for (a, b) in [(&whole.slow_ops, &split.slow_ops), (&whole.events, &split.events)] {
            assert_eq!(ints(a, "line"), ints(b, "line"));
            assert_eq!(strs(a, "t"), strs(b, "t"));
        }
        assert_eq!(strs(&whole.slow_ops, "shape"), strs(&split.slow_ops, "shape"));
        assert_eq!(problems(&whole), problems(&split));
        assert_eq!(rows(&whole.slow_ops) + rows(&whole.events) + whole.problems.len(), 501);
        assert_eq!(ints(&whole.slow_ops, "line").last(), Some(&Some(505)));
        assert_eq!(whole.problems[0].line, 8);
    }

    #[test]
    fn empty_and_newline_only_blocks() {
        assert_eq!(decode_block(b"", 1, &[]).problems.len(), 0);
        let junk = b"{}\n".repeat(3 * MAX_LISTED_PROBLEMS);
        let block = decode_ranges(&junk, 1, &[], junk.len() / 4);
        assert_eq!(block.problems.len(), MAX_LISTED_PROBLEMS);
        assert_eq!(block.unlisted, 2 * MAX_LISTED_PROBLEMS as u64);
        assert_eq!((block.problems[0].line, block.problems[MAX_LISTED_PROBLEMS - 1].line), (1, MAX_LISTED_PROBLEMS as i64));
        let block = decode_block(b"\n", 1, &[]);
        assert_eq!(problems(&block), [(1, "blank line")]);
        assert_eq!(rows(&block.slow_ops), 0);
    }

    #[test]
    fn write_statements_are_named_by_their_type() {
        let line = SLOW.replace(r#""c":"COMMAND""#, r#""c":"WRITE""#).replace(r#""type":"command""#, r#""type":"update""#);
        let block = decode_block(line.as_bytes(), 1, &[]);
        assert_eq!(strs(&block.slow_ops, "command"), [one("update")]);
        assert_eq!(bools(&block.slow_ops, "write_statement"), [Some(true)]);
    }

    #[test]
    fn long_strings_and_repeated_shapes_share_buffers() {
        let long = "n".repeat(40);
        let line = SLOW.replace(r#""ns":"db.c""#, &format!(r#""ns":"{long}.{long}""#));
        let block = decode_block(format!("{line}\n{line}\n").as_bytes(), 1, &[]);
        let slow = &block.slow_ops;
        assert_eq!(strs(slow, "ns"), [one(&format!("{long}.{long}")), one(&format!("{long}.{long}"))]);
        assert_eq!(strs(slow, "coll"), [one(&long), one(&long)]);
        let Column::Str { buffers, .. } = column(&slow[0], "shape") else { panic!() };
        assert_eq!(buffers.iter().map(Vec::len).sum::<usize>(), r#"{"filter":{"a":1}}"#.len());
    }
}
