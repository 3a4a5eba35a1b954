//! What a set of files holds, without materialising metric values: every
//! document's envelope and, per metric chunk, its sample count, time range
//! and metric names. Each chunk is checked as the decoder checks it (whole
//! inflate, delta stream walked), but only the time column is decoded. A read
//! can produce the same catalog from the chunks it decodes (`decode::read`
//! with `Options::catalog`), so that one pass does both.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::cache::FingerprintCache;
use crate::chunk::inflate;
use crate::file::{documents_of, Document, FileProblem, ProblemKind, Source, TYPE_METRIC_CHUNK};
use crate::metrics::{metric_names, KIND_DATE};
use crate::reference::open_reference;
use crate::varint::{DeltaReader, VarintError};

pub struct ChunkInfo {
    pub source: usize,
    pub offset: usize,
    pub id_ms: Option<i64>,
    pub samples: usize,
    pub metrics: usize,
    /// Index into `Catalog::layouts`.
    pub layout: usize,
    /// Earliest and latest sample time (from the time field, else `_id`).
    pub first: Option<i64>,
    pub last: Option<i64>,
}

pub struct Catalog {
    /// Each source's name, and its documents.
    pub sources: Vec<String>,
    pub documents: Vec<Vec<Document>>,
    /// The embedded `doc` of each document of types 0 and 2 (copied, so the
    /// catalog outlives the file bytes), parallel to `documents`.
    pub bodies: Vec<Vec<Option<Vec<u8>>>>,
    pub chunks: Vec<ChunkInfo>,
    /// Distinct (names, kinds) in first-seen order.
    pub layouts: Vec<Names>,
    pub problems: Vec<FileProblem>,
}

pub type Names = Arc<(Vec<String>, Vec<u8>)>;

/// A metric whose kinds disagree between the layouts of a `union`: the decoder yields it as int64.
pub const MIXED_KINDS: i8 = -1;

/// The columns a read of chunks of the layouts `ids` (indices into `layouts`, in the order the chunks first show
/// them) returns: `time_column` first, as a Date, then every other metric in first-seen order with its kind, or
/// MIXED_KINDS where two of the layouts disagree. A node's layouts hold tens of thousands of names (2,465 metrics in
/// 31 layouts on the 7.0 sample): compared here as bytes, not one by one in Python.
pub fn union<'a>(layouts: &'a [Names], ids: &[usize], time_column: &'a str) -> (Vec<&'a str>, Vec<i8>) {
    let mut names = vec![time_column];
    let mut kinds = vec![KIND_DATE as i8];
    let mut position: HashMap<&str, usize> = HashMap::from([(time_column, 0)]);
    for &id in ids {
        let (layout_names, layout_kinds) = &*layouts[id];
        for (name, &kind) in layout_names.iter().zip(layout_kinds) {
            match position.entry(name) {
                Entry::Vacant(free) => {
                    free.insert(names.len());
                    names.push(name);
                    kinds.push(kind as i8);
                }
                // The time column is a Date whatever a layout says of its field.
                Entry::Occupied(held) if *held.get() != 0 && kinds[*held.get()] != kind as i8 => kinds[*held.get()] = MIXED_KINDS,
                Entry::Occupied(_) => {}
            }
        }
    }
    (names, kinds)
}

/// What the catalog keeps of one readable metric chunk.
pub struct Seen {
    /// The reference document's structure: equal fingerprints, one layout.
    pub fingerprint: u64,
    pub names: Names,
    pub samples: usize,
    pub metrics: usize,
    pub first: Option<i64>,
    pub last: Option<i64>,
}

pub type NamesCache = FingerprintCache<(Vec<String>, Vec<u8>)>;

/// The chunk's names, sample count and time span. The whole payload is
/// inflated and its delta stream walked, as the decoder does before it keeps
/// a chunk: a chunk the decoder would skip must not lend the catalog its
/// metrics (a column promised and never decoded ends every reader).
pub fn peek(data: &[u8], time_field: &str, id_ms: Option<i64>, cache: &NamesCache) -> Result<Seen, String> {
    let payload = inflate(data).map_err(|e| e.message)?;
    let (header, values) = open_reference(&payload)?;
    let names = cache
        .get_or_build(values.fingerprint(), || metric_names(&payload[..header.ref_len]).map_err(|e| format!("reference document: {e}")))?;
    let dc = header.delta_count as u64;
    let metrics = header.metric_count as u64;
    let deltas_start = header.deltas_start();
    let invalid = |e: VarintError| e.in_payload(deltas_start);
    let mut reader = DeltaReader::new(&payload[deltas_start..]);
    let (first, last) = match names.0.iter().position(|n| n == time_field).filter(|&i| names.1[i] == KIND_DATE) {
        Some(ti) => {
            let first = values.values[ti];
            let mut column = vec![0i64; dc as usize];
            reader.skip(ti as u64 * dc).map_err(invalid)?;
            reader.decode_column(first as u64, &mut column).map_err(invalid)?;
            reader.skip((metrics - ti as u64 - 1) * dc).map_err(invalid)?;
            let (lo, hi) = column.iter().fold((first, first), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            (Some(lo), Some(hi))
        }
        None => {
            reader.skip(metrics * dc).map_err(invalid)?;
            (id_ms, id_ms)
        }
    };
    reader.finish().map_err(invalid)?;
    Ok(Seen { fingerprint: values.fingerprint(), names, samples: header.samples(), metrics: header.metric_count as usize, first, last })
}

/// A metric chunk that cannot be decoded whole (the decoder and the catalog say it alike).
pub fn chunk_skipped(file: &str, offset: usize, why: String) -> FileProblem {
    FileProblem::at(file, offset, ProblemKind::ChunkSkipped, format!("metric chunk skipped: {why}"))
}

/// Every metric chunk of `documents`, in file and offset order.
pub fn metric_chunks(documents: &[Vec<Document>]) -> Vec<(usize, &Document)> {
    documents
        .iter()
        .enumerate()
        .flat_map(|(s, docs)| docs.iter().filter(|d| d.doc_type == TYPE_METRIC_CHUNK).map(move |d| (s, d)))
        .collect()
}

pub fn catalog(sources: &[Source], time_field: &str) -> Catalog {
    let (documents, mut problems) = documents_of(sources);
    let wanted = metric_chunks(&documents);
    let cache = NamesCache::default();
    let seen: Vec<Result<Seen, String>> =
        wanted.par_iter().map(|(s, d)| peek(&sources[*s].bytes[d.data.clone().unwrap()], time_field, d.id_ms, &cache)).collect();
    let mut readable = Vec::with_capacity(seen.len());
    for ((s, d), p) in wanted.iter().zip(seen) {
        match p {
            Ok(p) => readable.push((*s, d.offset, d.id_ms, p)),
            Err(m) => problems.push(chunk_skipped(&sources[*s].name, d.offset, m)),
        }
    }
    let bodies = sources.iter().zip(&documents).map(|(source, docs)| bodies_of(source, docs)).collect();
    assemble(sources.iter().map(|s| s.name.clone()).collect(), documents, bodies, readable, problems)
}

/// The catalog of the sources named `names`, their `documents` with those `bodies` (`bodies_of`), whose readable
/// chunks are `readable` (source, offset, `_id`, what was seen), in file and offset order.
pub fn assemble(
    names: Vec<String>,
    documents: Vec<Vec<Document>>,
    bodies: Vec<Vec<Option<Vec<u8>>>>,
    readable: Vec<(usize, usize, Option<i64>, Seen)>,
    problems: Vec<FileProblem>,
) -> Catalog {
    let mut layouts = Vec::new();
    let mut layout_of: HashMap<u64, usize> = HashMap::new();
    let chunks = readable
        .into_iter()
        .map(|(source, offset, id_ms, p)| {
            let layout = *layout_of.entry(p.fingerprint).or_insert_with(|| {
                layouts.push(p.names.clone());
                layouts.len() - 1
            });
            ChunkInfo { source, offset, id_ms, samples: p.samples, metrics: p.metrics, layout, first: p.first, last: p.last }
        })
        .collect();
    Catalog { sources: names, documents, bodies, chunks, layouts, problems }
}

/// The embedded `doc` of each of `docs` (of `source`) that has one, copied so the catalog outlives the file's bytes.
pub fn bodies_of(source: &Source, docs: &[Document]) -> Vec<Option<Vec<u8>>> {
    docs.iter().map(|d| d.doc.clone().map(|r| source.bytes[r].to_vec())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chunk, chunk_of, payload, sample, seconds, source};

    #[test]
    fn each_chunk_with_its_file_offset_samples_times_and_layout() {
        let first = chunk(&seconds(1000, 4, 0), 1000);
        let other_schema = chunk(&[sample(5000, &[("c", 1)]), sample(6000, &[("c", 2)])], 5000);
        let same_as_first = chunk(&seconds(9000, 3, 0), 9000);
        let files = [source("a", &[first.clone(), other_schema], false), source("b", &[same_as_first], false)];
        let c = catalog(&files, "start");
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.sources, ["a", "b"]);
        let chunks: Vec<_> = c.chunks.iter().map(|k| (k.source, k.offset, k.samples, k.first, k.last, k.layout)).collect();
        assert_eq!(
            chunks,
            [(0, 0, 4, Some(1000), Some(4000), 0), (0, first.len(), 2, Some(5000), Some(6000), 1), (1, 0, 3, Some(9000), Some(11000), 0)]
        );
        assert_eq!(c.layouts[0].0, ["start", "serverStatus.a", "serverStatus.b"]);
        assert_eq!(c.layouts[1].0, ["start", "serverStatus.c"]);
    }

    fn layout(pairs: &[(&str, u8)]) -> Names {
        Arc::new((pairs.iter().map(|(n, _)| n.to_string()).collect(), pairs.iter().map(|(_, k)| *k).collect()))
    }

    #[test]
    fn a_union_keeps_first_seen_order_and_marks_kinds_that_disagree() {
        let layouts = [
            layout(&[("start", 2), ("a", 0), ("b", 1)]),
            layout(&[("start", 2), ("c", 2), ("a", 0)]),
            layout(&[("start", 0), ("b", 0), ("d", 1), ("c", 2)]),
            layout(&[("z", 0)]),
        ];
        assert_eq!(union(&layouts, &[], "start"), (vec!["start"], vec![2]));
        assert_eq!(union(&layouts, &[1, 0], "start"), (vec!["start", "c", "a", "b"], vec![2, 2, 0, 1]));
        // b is a bool in one and an int64 in another, then seen again: mixed stays mixed; the time column stays a Date.
        let (names, kinds) = union(&layouts, &[0, 2, 1, 2], "start");
        assert_eq!((names, kinds), (vec!["start", "a", "b", "d", "c"], vec![2, 0, MIXED_KINDS, 1, 2]));
    }

    #[test]
    fn without_the_time_field_a_chunk_spans_its_id() {
        let c = catalog(&[source("a", &[chunk(&seconds(1000, 4, 0), 777)], false)], "no_such_field");
        assert_eq!((c.chunks[0].first, c.chunks[0].last), (Some(777), Some(777)));
    }

    #[test]
    fn a_chunk_whose_deltas_are_cut_lends_no_metrics_and_is_a_problem() {
        let whole = payload(&seconds(1000, 6, 0));
        let cut = chunk_of(&whole[..whole.len() - 1], 1000);
        let c = catalog(&[source("metrics.1", &[cut], false)], "start");
        assert!(c.chunks.is_empty() && c.layouts.is_empty());
        assert_eq!(c.problems.len(), 1);
        assert_eq!(c.problems[0].kind, ProblemKind::ChunkSkipped);
        assert!(c.problems[0].to_string().starts_with("metrics.1: offset 0: metric chunk skipped"), "{}", c.problems[0]);
    }

    #[test]
    fn metadata_documents_are_kept_with_their_bodies() {
        use crate::bson::{self, tests::doc};
        use crate::testing::element;
        let body = doc(&element(bson::INT32, "version", &7i32.to_le_bytes()));
        let metadata = doc(&[
            element(bson::DATE, "_id", &500i64.to_le_bytes()),
            element(bson::INT32, "type", &0i32.to_le_bytes()),
            element(bson::DOCUMENT, "doc", &body),
        ]
        .concat());
        let c = catalog(&[source("a", &[metadata, chunk(&seconds(1000, 2, 0), 1000)], false)], "start");
        assert_eq!(c.documents[0].iter().map(|d| d.doc_type).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(c.bodies[0], [Some(body), None]);
        assert_eq!(c.chunks.len(), 1);
    }
}
