//! Metric extraction from a sample document, as mongod's FTDC does it:
//! a depth-first walk in byte order where numbers, bools, dates and
//! timestamps become int64 metrics and everything else is skipped.
//!
//! The walk is generic over a `Sink` so the hot path (values plus a
//! structural fingerprint) never builds a name; names are built once per
//! distinct document structure.

use std::collections::{HashMap, HashSet};

use crate::bson::{self, BsonError, Element, Elements};

/// Objects nested deeper than this below the root are rejected, as mongod does.
pub const MAX_DEPTH: usize = 10;

/// Column kinds, as exposed to Python.
pub const KIND_INT: u8 = 0;
pub const KIND_BOOL: u8 = 1;
pub const KIND_DATE: u8 = 2;

/// Receives the walk's events.
pub trait Sink {
    fn metric(&mut self, key: &[u8], etype: u8, kind: u8, value: i64);
    fn enter(&mut self, key: &[u8], etype: u8);
    fn leave(&mut self);
    /// A key that produces no metric (strings, ObjectIds, ...), with its value bytes.
    fn other(&mut self, key: &[u8], etype: u8, value: &[u8]);
}

/// Walks `doc` (a whole BSON document at offset 0 of `buf`).
pub fn walk<S: Sink>(buf: &[u8], sink: &mut S) -> Result<(), BsonError> {
    walk_doc(buf, 0, 0, sink)
}

fn walk_doc<S: Sink>(buf: &[u8], start: usize, depth: usize, sink: &mut S) -> Result<(), BsonError> {
    if depth > MAX_DEPTH {
        return Err(BsonError::new(start, format!("nesting deeper than {MAX_DEPTH} levels")));
    }
    for element in Elements::of(buf, start)? {
        let e = element?;
        match e.etype {
            bson::DOCUMENT | bson::ARRAY => {
                sink.enter(e.key, e.etype);
                walk_doc(buf, e.value_offset, depth + 1, sink)?;
                sink.leave();
            }
            bson::TIMESTAMP => {
                // On disk: increment in the low word, seconds in the high word.
                let raw = e.as_i64() as u64;
                sink.metric(e.key, e.etype, KIND_INT, (raw >> 32) as i64);
                sink.metric(e.key, e.etype, KIND_INT, (raw & 0xffff_ffff) as i64);
            }
            _ => match metric_value(&e) {
                Some((kind, v)) => sink.metric(e.key, e.etype, kind, v),
                None => sink.other(e.key, e.etype, e.value),
            },
        }
    }
    Ok(())
}

/// The metric kind and value of a scalar element, or None if it is not a metric.
pub fn metric_value(e: &Element) -> Option<(u8, i64)> {
    Some(match e.etype {
        // `as` truncates toward zero, maps NaN to 0 and saturates at the int64 range.
        bson::DOUBLE => (KIND_INT, e.as_f64() as i64),
        bson::INT32 => (KIND_INT, e.as_i32() as i64),
        bson::INT64 => (KIND_INT, e.as_i64()),
        bson::DECIMAL128 => (KIND_INT, decimal128_to_i64(e.value.try_into().unwrap())),
        bson::BOOL => (KIND_BOOL, (e.value[0] != 0) as i64),
        bson::DATE => (KIND_DATE, e.as_i64()),
        _ => return None,
    })
}

/// IEEE 754-2008 BID decimal128 to int64, rounding half to even like
/// `Decimal128::toLong`. NaN, infinities and out-of-range values give
/// INT64_MIN, the "integer indefinite" of the Intel library mongod uses.
pub fn decimal128_to_i64(bytes: &[u8; 16]) -> i64 {
    const INDEFINITE: i64 = i64::MIN;
    let low = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let high = u64::from_le_bytes(bytes[8..].try_into().unwrap());
    let negative = high >> 63 == 1;
    let (exponent, coefficient) = if (high >> 61) & 0b11 == 0b11 {
        if (high >> 59) & 0b1111 == 0b1111 {
            return INDEFINITE; // infinity or NaN
        }
        // The large-coefficient form always exceeds 10^34 - 1: non-canonical, i.e. zero.
        (((high >> 47) & 0x3fff) as i32, 0u128)
    } else {
        (((high >> 49) & 0x3fff) as i32, (((high & 0x1_ffff_ffff_ffff) as u128) << 64) | low as u128)
    };
    // Coefficients above 10^34 - 1 are non-canonical and read as zero.
    const MAX_COEFFICIENT: u128 = 10u128.pow(34) - 1;
    let coefficient = if coefficient > MAX_COEFFICIENT { 0 } else { coefficient };
    let exponent = exponent - 6176;
    let magnitude: u128 = if exponent >= 0 {
        match 10u128.checked_pow(exponent as u32).and_then(|p| coefficient.checked_mul(p)) {
            Some(m) => m,
            None if coefficient == 0 => 0,
            None => return INDEFINITE,
        }
    } else if -exponent > 38 {
        0 // below 10^34 / 10^39: rounds to zero
    } else {
        let divisor = 10u128.pow((-exponent) as u32);
        let (q, r) = (coefficient / divisor, coefficient % divisor);
        if 2 * r > divisor || (2 * r == divisor && q % 2 == 1) {
            q + 1
        } else {
            q
        }
    };
    if negative {
        if magnitude <= 1u128 << 63 {
            (magnitude as i128).wrapping_neg() as i64
        } else {
            INDEFINITE
        }
    } else if magnitude <= i64::MAX as u128 {
        magnitude as i64
    } else {
        INDEFINITE
    }
}

/// Collects metric values and a fingerprint of the document's structure:
/// every key with its type class, in order. Equal fingerprints mean equal
/// metric names and kinds.
pub struct ValueSink {
    pub values: Vec<i64>,
    hash: u64,
}

impl ValueSink {
    pub fn with_capacity(n: usize) -> Self {
        ValueSink { values: Vec::with_capacity(n), hash: 0xcbf2_9ce4_8422_2325 }
    }

    #[inline(always)]
    fn mix_word(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    #[inline(always)]
    fn mix(&mut self, tag: u8, key: &[u8]) {
        let mut chunks = key.chunks_exact(8);
        for c in &mut chunks {
            self.mix_word(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.mix_word(u64::from_le_bytes(tail) ^ ((tag as u64) << 56) ^ ((key.len() as u64) << 40));
    }

    /// Fingerprint including the metric count, so a hash collision between
    /// different shapes would also need equal counts.
    pub fn fingerprint(&self) -> u64 {
        self.hash ^ (self.values.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// Type class for the fingerprint: numeric types are interchangeable.
fn type_class(etype: u8, kind: u8) -> u8 {
    match etype {
        bson::TIMESTAMP => 0x11,
        bson::DOCUMENT => 0x03,
        bson::ARRAY => 0x04,
        _ => 0x40 | kind,
    }
}

impl Sink for ValueSink {
    #[inline(always)]
    fn metric(&mut self, key: &[u8], etype: u8, kind: u8, value: i64) {
        self.values.push(value);
        self.mix(type_class(etype, kind), key);
    }
    fn enter(&mut self, key: &[u8], etype: u8) {
        self.mix(type_class(etype, 0), key);
    }
    fn leave(&mut self) {
        self.mix_word(0x0e0e);
    }
    fn other(&mut self, key: &[u8], etype: u8, _value: &[u8]) {
        self.mix(0x80 | etype, key);
    }
}

/// Builds the column names and kinds of a document's metrics.
///
/// Names are BSON path components joined by `.`; a key repeated inside one
/// object gets `#2`, `#3`, ...; a Timestamp gives `<name>.t` and `<name>.i`.
pub struct NameSink {
    pub names: Vec<String>,
    pub kinds: Vec<u8>,
    /// Path prefix per open object, and the key counts seen in it.
    stack: Vec<(String, HashMap<Vec<u8>, u32>)>,
    timestamp_half: bool,
}

impl NameSink {
    pub fn new() -> Self {
        NameSink { names: Vec::new(), kinds: Vec::new(), stack: vec![(String::new(), HashMap::new())], timestamp_half: false }
    }

    /// `key` with its `#N` suffix when repeated in the current object.
    fn component(&mut self, key: &[u8]) -> String {
        let (_, seen) = self.stack.last_mut().unwrap();
        let n = seen.entry(key.to_vec()).or_insert(0);
        *n += 1;
        let text = String::from_utf8_lossy(key);
        if *n == 1 {
            text.into_owned()
        } else {
            format!("{text}#{n}")
        }
    }

    fn full_name(&self, component: &str) -> String {
        let prefix = &self.stack.last().unwrap().0;
        if prefix.is_empty() {
            component.to_string()
        } else {
            format!("{prefix}.{component}")
        }
    }

    /// Names and kinds, with any name that two different paths produce
    /// (a key containing `.` can collide with a nested path) made unique.
    pub fn finish(mut self) -> (Vec<String>, Vec<u8>) {
        let mut used: HashSet<String> = HashSet::with_capacity(self.names.len());
        for name in self.names.iter_mut() {
            if !used.contains(name.as_str()) {
                used.insert(name.clone());
                continue;
            }
            // Number on until free: `x#2` may itself be a real key.
            let unique = (2..).map(|n| format!("{name}#{n}")).find(|c| !used.contains(c)).unwrap();
            used.insert(unique.clone());
            *name = unique;
        }
        (self.names, self.kinds)
    }
}

impl Default for NameSink {
    fn default() -> Self {
        Self::new()
    }
}

impl Sink for NameSink {
    fn metric(&mut self, key: &[u8], etype: u8, kind: u8, _value: i64) {
        if etype == bson::TIMESTAMP {
            // Called twice per Timestamp: seconds, then increment.
            let base = if self.timestamp_half {
                let last = self.names.last().unwrap();
                last[..last.len() - 2].to_string()
            } else {
                let c = self.component(key);
                self.full_name(&c)
            };
            let suffix = if self.timestamp_half { ".i" } else { ".t" };
            self.names.push(base + suffix);
            self.timestamp_half = !self.timestamp_half;
        } else {
            let c = self.component(key);
            let name = self.full_name(&c);
            self.names.push(name);
        }
        self.kinds.push(kind);
    }
    fn enter(&mut self, key: &[u8], _etype: u8) {
        let c = self.component(key);
        let prefix = self.full_name(&c);
        self.stack.push((prefix, HashMap::new()));
    }
    fn leave(&mut self) {
        self.stack.pop();
    }
    fn other(&mut self, key: &[u8], _etype: u8, _value: &[u8]) {
        // Counted so that a later metric with the same key is numbered consistently.
        self.component(key);
    }
}

/// Names and kinds of the metrics of `doc`.
pub fn metric_names(doc: &[u8]) -> Result<(Vec<String>, Vec<u8>), BsonError> {
    let mut sink = NameSink::new();
    walk(doc, &mut sink)?;
    Ok(sink.finish())
}

/// Values and structural fingerprint of the metrics of `doc`.
pub fn metric_values(doc: &[u8]) -> Result<ValueSink, BsonError> {
    let mut sink = ValueSink::with_capacity(1024);
    walk(doc, &mut sink)?;
    Ok(sink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bson::tests::doc;

    fn d128(negative: bool, exponent: i32, coefficient: u128) -> [u8; 16] {
        let biased = (exponent + 6176) as u128;
        let v = ((negative as u128) << 127) | (biased << 113) | coefficient;
        v.to_le_bytes()
    }

    #[test]
    fn decimal_rounds_half_to_even() {
        assert_eq!(decimal128_to_i64(&d128(false, -1, 25)), 2);
        assert_eq!(decimal128_to_i64(&d128(false, -1, 35)), 4);
        assert_eq!(decimal128_to_i64(&d128(true, -1, 26)), -3);
        assert_eq!(decimal128_to_i64(&d128(false, 3, 12)), 12000);
        assert_eq!(decimal128_to_i64(&d128(false, -40, 12)), 0);
        // 2^112 (34 digits) x 10^-32 = 51.92...: a valid coefficient above 10^31.
        assert_eq!(decimal128_to_i64(&d128(false, -32, 1u128 << 112)), 52);
        assert_eq!(decimal128_to_i64(&d128(false, 0, 10u128.pow(34))), 0);
        assert_eq!(decimal128_to_i64(&d128(false, 30, 12)), i64::MIN);
        assert_eq!(decimal128_to_i64(&d128(true, 0, 1u128 << 63)), i64::MIN);
    }

    #[test]
    fn colliding_paths_get_distinct_names() {
        // {a: {b: 1}, "a.b": 2, "a.b#2": 3, a: {b: 4}}
        let mut inner = vec![bson::INT32];
        inner.extend_from_slice(b"b\0");
        inner.extend_from_slice(&1i32.to_le_bytes());
        let inner = doc(&inner);
        let mut e = vec![bson::DOCUMENT];
        e.extend_from_slice(b"a\0");
        e.extend_from_slice(&inner);
        for (key, v) in [(&b"a.b\0"[..], 2i32), (&b"a.b#2\0"[..], 3)] {
            e.push(bson::INT32);
            e.extend_from_slice(key);
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.push(bson::DOCUMENT);
        e.extend_from_slice(b"a\0");
        e.extend_from_slice(&inner);
        let (names, _) = metric_names(&doc(&e)).unwrap();
        assert_eq!(names, vec!["a.b", "a.b#2", "a.b#2#2", "a#2.b"]);
    }

    #[test]
    fn doubles_truncate_and_clamp() {
        let cases = [(2.9f64, 2i64), (-2.9, -2), (f64::NAN, 0), (1e300, i64::MAX), (-1e300, i64::MIN), (f64::INFINITY, i64::MAX)];
        for (f, want) in cases {
            let bytes = f.to_le_bytes();
            let element = Element { etype: bson::DOUBLE, key: b"x", value: &bytes, value_offset: 0 };
            assert_eq!(metric_value(&element), Some((KIND_INT, want)), "{f}");
        }
    }
}
