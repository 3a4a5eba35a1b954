//! Writing metric chunks exactly as mongod's `FTDCCompressor` does, and the
//! inverse helpers the writer's tests and interim recovery need.
//!
//! `ChunkEncoder` keeps the reference document, the previous sample's metrics
//! and every delta so far, so `payload()` can be taken at any time (mongod
//! re-compresses the open chunk for `metrics.interim` every N samples).

use crate::bson::{self, document_len, BsonError, Elements};
use crate::chunk::{inflate, parse_header};
use crate::metrics::{metric_values, walk, Sink, KIND_BOOL, KIND_DATE, MAX_DEPTH};
use crate::varint::{DeltaReader, DeltaWriter};

/// The element types mongod's schema comparison looks at (`isFTDCType`);
/// everything else is skipped on both sides since SERVER-34864.
fn is_compared(etype: u8) -> bool {
    is_number(etype) || matches!(etype, bson::BOOL | bson::DATE | bson::TIMESTAMP | bson::DOCUMENT | bson::ARRAY)
}

fn is_number(etype: u8) -> bool {
    matches!(etype, bson::DOUBLE | bson::INT32 | bson::INT64 | bson::DECIMAL128)
}

/// Whether `sample` can be delta-encoded against `reference`, by mongod's
/// rule (`extractMetricsFromDocument`): walking both in order over compared
/// types only, names must be equal, types equal except that any number may
/// replace any other, and neither side may have more fields.
pub fn schema_matches(reference: &[u8], sample: &[u8]) -> Result<bool, BsonError> {
    objects_match(reference, 0, sample, 0, 0)
}

fn objects_match(reference: &[u8], r_start: usize, sample: &[u8], s_start: usize, depth: usize) -> Result<bool, BsonError> {
    if depth > MAX_DEPTH {
        return Err(BsonError::new(s_start, format!("nesting deeper than {MAX_DEPTH} levels")));
    }
    let compared = |r: &Result<bson::Element, BsonError>| r.as_ref().map_or(true, |e| is_compared(e.etype));
    let mut r_elements = Elements::of(reference, r_start)?.filter(compared);
    let mut s_elements = Elements::of(sample, s_start)?.filter(compared);
    loop {
        let (r, s) = match (r_elements.next().transpose()?, s_elements.next().transpose()?) {
            (None, None) => return Ok(true),
            (Some(r), Some(s)) => (r, s),
            _ => return Ok(false),
        };
        if r.key != s.key || (r.etype != s.etype && !(is_number(r.etype) && is_number(s.etype))) {
            return Ok(false);
        }
        if matches!(s.etype, bson::DOCUMENT | bson::ARRAY) && !objects_match(reference, r.value_offset, sample, s.value_offset, depth + 1)?
        {
            return Ok(false);
        }
    }
}

/// `document` must be exactly one BSON document.
fn whole_document(document: &[u8]) -> Result<(), BsonError> {
    let len = document_len(document, 0)?;
    if len != document.len() {
        return Err(BsonError::new(len, format!("{} bytes follow the document", document.len() - len)));
    }
    Ok(())
}

/// The open chunk: a reference document plus the deltas of later samples.
pub struct ChunkEncoder {
    reference: Vec<u8>,
    previous: Vec<i64>,
    /// One row of `metric_count` deltas per sample after the reference.
    deltas: Vec<u64>,
    /// Samples after the reference (counted apart: a chunk may have no metrics).
    delta_count: usize,
}

impl ChunkEncoder {
    /// Starts a chunk whose reference (first sample) is `reference`.
    pub fn new(reference: &[u8]) -> Result<Self, BsonError> {
        whole_document(reference)?;
        let previous = metric_values(reference)?.values;
        Ok(ChunkEncoder { reference: reference.to_vec(), previous, deltas: Vec::new(), delta_count: 0 })
    }

    pub fn metric_count(&self) -> usize {
        self.previous.len()
    }

    pub fn delta_count(&self) -> usize {
        self.delta_count
    }

    /// Adds `sample` if it has the reference's schema; `Ok(false)` means it
    /// must start a new chunk and this one is unchanged. A sample mongod
    /// would refuse (malformed, nested too deep) is an error.
    pub fn push(&mut self, sample: &[u8]) -> Result<bool, BsonError> {
        whole_document(sample)?;
        let values = metric_values(sample)?.values;
        if !schema_matches(&self.reference, sample)? {
            return Ok(false);
        }
        debug_assert_eq!(values.len(), self.previous.len(), "equal schemas have equal metric counts");
        self.deltas.extend(values.iter().zip(&self.previous).map(|(&v, &p)| (v as u64).wrapping_sub(p as u64)));
        self.delta_count += 1;
        self.previous = values;
        Ok(true)
    }

    /// The inflated chunk: `reference ‖ u32 metricCount ‖ u32 deltaCount ‖ deltas`,
    /// deltas column-major with zero runs carried across columns.
    pub fn payload(&self) -> Vec<u8> {
        let metrics = self.metric_count();
        let samples = self.delta_count();
        let mut writer = DeltaWriter::new();
        for m in 0..metrics {
            for j in 0..samples {
                writer.push(self.deltas[j * metrics + m]);
            }
        }
        let deltas = writer.finish();
        let mut out = Vec::with_capacity(self.reference.len() + 8 + deltas.len());
        out.extend_from_slice(&self.reference);
        out.extend_from_slice(&(metrics as u32).to_le_bytes());
        out.extend_from_slice(&(samples as u32).to_le_bytes());
        out.extend_from_slice(&deltas);
        out
    }
}

/// One chunk decoded to its reference document and its metric values,
/// row-major (`samples × metric_count`).
pub struct DecodedChunk {
    pub reference: Vec<u8>,
    /// Counted apart from `values`: a chunk may have no metrics.
    pub samples: usize,
    pub metric_count: usize,
    pub values: Vec<i64>,
}

/// Decodes a type-1 chunk's `data` (length prefix plus zlib stream).
pub fn decode_chunk(data: &[u8]) -> Result<DecodedChunk, String> {
    let payload = inflate(data).map_err(|e| format!("offset {}: {}", e.offset, e.message))?;
    let header = parse_header(&payload).map_err(|e| format!("payload offset {}: {}", e.offset, e.message))?;
    let reference = payload[..header.ref_len].to_vec();
    let first = metric_values(&reference).map_err(|e| format!("reference document: {e}"))?.values;
    if first.len() != header.metric_count as usize {
        return Err(format!("reference document has {} metrics but metricCount is {}", first.len(), header.metric_count));
    }
    let metric_count = first.len();
    let samples = header.samples();
    let mut values = vec![0i64; samples * metric_count];
    let mut column = vec![0i64; samples - 1];
    let mut reader = DeltaReader::new(&payload[header.deltas_start()..]);
    let invalid = |e: crate::varint::VarintError| format!("payload offset {}: {}", header.deltas_start() + e.offset, e.message);
    for (m, &v) in first.iter().enumerate() {
        reader.decode_column(v as u64, &mut column).map_err(invalid)?;
        values[m] = v;
        for (j, &x) in column.iter().enumerate() {
            values[(j + 1) * metric_count + m] = x;
        }
    }
    reader.finish().map_err(invalid)?;
    Ok(DecodedChunk { reference, samples, metric_count, values })
}

/// Rebuilds a sample from `reference` and its metric `values`, as mongod's
/// `constructDocumentFromMetrics` does: every number becomes int64 (numeric
/// types are interchangeable in the schema rule, and int64 keeps every value
/// exact), bools, Dates and Timestamps keep their types, and everything else
/// is copied from the reference.
pub fn fill_reference(reference: &[u8], values: &[i64]) -> Result<Vec<u8>, String> {
    let mut sink = FillSink { values, used: 0, out: Vec::with_capacity(reference.len()), open: Vec::new(), seconds: None };
    sink.open_document();
    walk(reference, &mut sink).map_err(|e| format!("reference document: {e}"))?;
    sink.close_document();
    if sink.used != values.len() {
        return Err(format!("{} values given for a reference document with {} metrics", values.len(), sink.used));
    }
    Ok(sink.out)
}

struct FillSink<'a> {
    values: &'a [i64],
    /// Metrics walked so far; a value is read only while some are left.
    used: usize,
    out: Vec<u8>,
    /// Where the length of each open document goes.
    open: Vec<usize>,
    /// A Timestamp's seconds, waiting for its increment.
    seconds: Option<i64>,
}

impl FillSink<'_> {
    fn open_document(&mut self) {
        self.open.push(self.out.len());
        self.out.extend_from_slice(&[0; 4]);
    }

    fn close_document(&mut self) {
        self.out.push(0);
        let start = self.open.pop().expect("balanced documents");
        let len = (self.out.len() - start) as i32;
        self.out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    fn element(&mut self, etype: u8, key: &[u8], value: &[u8]) {
        self.out.push(etype);
        self.out.extend_from_slice(key);
        self.out.push(0);
        self.out.extend_from_slice(value);
    }

    fn next_value(&mut self) -> i64 {
        let v = self.values.get(self.used).copied().unwrap_or(0);
        self.used += 1;
        v
    }
}

impl Sink for FillSink<'_> {
    fn metric(&mut self, key: &[u8], etype: u8, kind: u8, _value: i64) {
        let v = self.next_value();
        if etype == bson::TIMESTAMP {
            // Called twice per Timestamp: seconds, then increment.
            match self.seconds.take() {
                None => self.seconds = Some(v),
                Some(t) => {
                    let raw = ((t as u32 as u64) << 32) | v as u32 as u64;
                    self.element(bson::TIMESTAMP, key, &raw.to_le_bytes());
                }
            }
            return;
        }
        match kind {
            KIND_BOOL => self.element(bson::BOOL, key, &[(v != 0) as u8]),
            KIND_DATE => self.element(bson::DATE, key, &v.to_le_bytes()),
            _ => self.element(bson::INT64, key, &v.to_le_bytes()),
        }
    }

    fn enter(&mut self, key: &[u8], etype: u8) {
        self.element(etype, key, &[]);
        self.open_document();
    }

    fn leave(&mut self) {
        self.close_document();
    }

    fn other(&mut self, key: &[u8], etype: u8, value: &[u8]) {
        self.element(etype, key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::metric_names;
    use flate2::{write::ZlibEncoder, Compression};
    use std::io::Write;

    /// A document from (type, key, value bytes) elements.
    fn doc(elements: &[(u8, &str, Vec<u8>)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (etype, key, value) in elements {
            body.push(*etype);
            body.extend_from_slice(key.as_bytes());
            body.push(0);
            body.extend_from_slice(value);
        }
        let mut d = ((body.len() + 5) as i32).to_le_bytes().to_vec();
        d.extend(body);
        d.push(0);
        d
    }

    fn int32(v: i32) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }
    fn int64(v: i64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }
    fn string(s: &str) -> Vec<u8> {
        let mut v = ((s.len() + 1) as i32).to_le_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        v
    }

    fn chunk_data(payload: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(payload).unwrap();
        let mut d = (payload.len() as u32).to_le_bytes().to_vec();
        d.extend(e.finish().unwrap());
        d
    }

    #[test]
    fn numbers_are_interchangeable_but_other_types_are_not() {
        let reference = doc(&[(bson::INT32, "a", int32(1)), (bson::INT64, "b", int64(2))]);
        let numeric = doc(&[(bson::DOUBLE, "a", 1.5f64.to_le_bytes().to_vec()), (bson::INT32, "b", int32(2))]);
        let boolean = doc(&[(bson::BOOL, "a", vec![1]), (bson::INT64, "b", int64(2))]);
        let renamed = doc(&[(bson::INT32, "x", int32(1)), (bson::INT64, "b", int64(2))]);
        let longer = doc(&[(bson::INT32, "a", int32(1)), (bson::INT64, "b", int64(2)), (bson::INT32, "c", int32(3))]);
        let shorter = doc(&[(bson::INT32, "a", int32(1))]);
        assert!(schema_matches(&reference, &numeric).unwrap());
        assert!(!schema_matches(&reference, &boolean).unwrap());
        assert!(!schema_matches(&reference, &renamed).unwrap());
        assert!(!schema_matches(&reference, &longer).unwrap());
        assert!(!schema_matches(&reference, &shorter).unwrap());
    }

    #[test]
    fn non_metric_fields_are_ignored_by_the_schema_rule() {
        // SERVER-34864: a string appearing, vanishing or changing type is not a schema change.
        let reference = doc(&[(bson::STRING, "s", string("x")), (bson::INT32, "a", int32(1))]);
        let without = doc(&[(bson::INT32, "a", int32(1)), (bson::NULL, "n", vec![])]);
        assert!(schema_matches(&reference, &without).unwrap());
        let object_vs_array = doc(&[(bson::ARRAY, "a", doc(&[]))]);
        let object = doc(&[(bson::DOCUMENT, "a", doc(&[]))]);
        assert!(!schema_matches(&object, &object_vs_array).unwrap());
        let nested_a = doc(&[(bson::DOCUMENT, "o", doc(&[(bson::INT32, "x", int32(1))]))]);
        let nested_b = doc(&[(bson::DOCUMENT, "o", doc(&[(bson::INT32, "y", int32(1))]))]);
        assert!(!schema_matches(&nested_a, &nested_b).unwrap());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut d = doc(&[(bson::INT32, "x", int32(1))]);
        for _ in 0..=MAX_DEPTH {
            d = doc(&[(bson::DOCUMENT, "o", d)]);
        }
        assert!(schema_matches(&d, &d).is_err());
        assert!(ChunkEncoder::new(&d).is_err());
    }

    #[test]
    fn payload_round_trips_through_decode_and_fill() {
        let sample = |i: i64| {
            doc(&[
                (bson::DATE, "start", int64(1_000 * i)),
                (bson::STRING, "host", string("h")),
                (bson::INT64, "big", int64(i64::MAX - i)),
                (bson::TIMESTAMP, "ts", ((7u64 << 32) | i as u64).to_le_bytes().to_vec()),
                (bson::BOOL, "up", vec![(i % 2) as u8]),
            ])
        };
        let mut encoder = ChunkEncoder::new(&sample(0)).unwrap();
        for i in 1..5 {
            assert!(encoder.push(&sample(i)).unwrap());
        }
        assert!(!encoder.push(&doc(&[(bson::INT32, "other", int32(1))])).unwrap());
        assert_eq!(encoder.delta_count(), 4);
        let decoded = decode_chunk(&chunk_data(&encoder.payload())).unwrap();
        assert_eq!(decoded.reference, sample(0));
        assert_eq!((decoded.samples, decoded.metric_count), (5, 5));
        let row = |i: usize| &decoded.values[i * 5..(i + 1) * 5];
        assert_eq!(row(3), &[3000, i64::MAX - 3, 7, 3, 1]);
        let rebuilt = fill_reference(&decoded.reference, row(3)).unwrap();
        assert_eq!(metric_values(&rebuilt).unwrap().values, row(3));
        assert_eq!(metric_names(&rebuilt).unwrap(), metric_names(&sample(3)).unwrap());
        assert!(schema_matches(&sample(0), &rebuilt).unwrap());
        assert!(fill_reference(&decoded.reference, &row(3)[..4]).is_err());
        assert!(fill_reference(&decoded.reference, &decoded.values[..6]).is_err());
    }

    #[test]
    fn a_chunk_without_metrics_still_counts_samples() {
        let only_text = doc(&[(bson::STRING, "s", string("x"))]);
        let mut encoder = ChunkEncoder::new(&only_text).unwrap();
        assert!(encoder.push(&only_text).unwrap());
        let payload = encoder.payload();
        assert_eq!(&payload[only_text.len()..], &[0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut d = doc(&[(bson::INT32, "a", int32(1))]);
        d.push(0);
        assert!(ChunkEncoder::new(&d).is_err());
    }
}
