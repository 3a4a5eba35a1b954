//! Phase 1: one chunk at a time, everything that can fail.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::Options;
use crate::cache::FingerprintCache;
use crate::catalog::{Names, Seen};
use crate::chunk::Inflater;
use crate::file::{Document, Source, TYPE_METRIC_CHUNK};
use crate::metrics::{metric_names, KIND_DATE};
use crate::reference::open_reference;
use crate::varint::{DeltaReader, VarintError};

/// The metrics of one distinct reference-document structure.
pub struct Layout {
    /// Names and kinds, shared with the catalog a read may produce.
    pub metrics: Names,
    /// Metric indices whose deltas the read keeps, ascending: those it asked for and, with `Options::keep`, every
    /// other one but the time.
    pub selected: Vec<usize>,
    /// Per selected metric: asked for (a column of the frame), not only kept (`Options::keep`).
    pub output: Vec<bool>,
    pub time_index: Option<usize>,
}

pub type LayoutCache = FingerprintCache<Layout>;

fn build_layout(reference: &[u8], opts: &Options) -> Result<Layout, String> {
    let (names, kinds) = metric_names(reference).map_err(|e| format!("reference document: {e}"))?;
    let time_index = names.iter().position(|n| *n == opts.time_field).filter(|&i| kinds[i] == KIND_DATE);
    let asked: Vec<bool> = names.iter().map(|n| opts.selection.matches(n)).collect();
    let selected: Vec<usize> = (0..names.len()).filter(|&i| Some(i) != time_index && (opts.keep || asked[i])).collect();
    let output = selected.iter().map(|&i| asked[i]).collect();
    Ok(Layout { metrics: Arc::new((names, kinds)), selected, output, time_index })
}

impl Layout {
    pub fn names(&self) -> &[String] {
        &self.metrics.0
    }

    pub fn kinds(&self) -> &[u8] {
        &self.metrics.1
    }
}

/// Values the whole read may still materialise, shared by the workers.
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    exceeded: AtomicBool,
}

impl Budget {
    pub fn new(limit: u64) -> Self {
        Budget { limit, used: AtomicU64::new(0), exceeded: AtomicBool::new(false) }
    }

    /// Takes `n` values from the budget; false (and the read is refused) when it runs out.
    pub fn reserve(&self, n: u64) -> bool {
        let total = self.used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if total > self.limit {
            self.exceeded.store(true, Ordering::Relaxed);
        }
        total <= self.limit
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }

    pub fn wanted(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

/// The metric chunks of one source, minus those a time range rules out
/// before inflating. mongod sets a chunk's `_id` to its first sample's root
/// `start` and samples in order, so a chunk ends before the next one's `_id`;
/// other writers promise neither, so only `start`-timed reads skip that way.
pub fn chunk_refs<'a>(file_docs: &'a [Document], opts: &Options) -> Vec<&'a Document> {
    let mongod_times = opts.time_field == "start";
    let chunks: Vec<&Document> = file_docs.iter().filter(|d| d.doc_type == TYPE_METRIC_CHUNK).collect();
    let mut refs = Vec::new();
    for (i, doc) in chunks.iter().enumerate() {
        let skip = mongod_times
            && match (doc.id_ms, chunks.get(i + 1).and_then(|n| n.id_ms)) {
                (Some(id), next) => {
                    opts.end.is_some_and(|end| id > end)
                        || next.is_some_and(|next| next > id && opts.start.is_some_and(|start| next <= start))
                }
                (None, _) => false,
            };
        if !skip {
            refs.push(*doc);
        }
    }
    refs
}

/// Where one selected column's deltas start in `Prepared::deltas`.
#[derive(Clone, Copy)]
struct Segment {
    offset: usize,
    pending_zeros: u64,
}

/// Phase 1 result for one chunk.
pub struct Prepared {
    pub layout: Arc<Layout>,
    /// Reference values of the selected metrics, in `layout.selected` order.
    reference: Vec<i64>,
    pub times: Vec<i64>,
    /// The selected columns' delta bytes; `segments[s]` resumes column s.
    deltas: Vec<u8>,
    segments: Vec<Segment>,
    /// Per selected column: every value of this chunk is 0 (most metrics of a
    /// real node are; such columns need neither decoding nor memory of their own).
    pub zero: Vec<bool>,
    /// Per selected column: every delta is 0, so each value is the reference's (`first`).
    pub flat: Vec<bool>,
    pub delta_count: usize,
    fingerprint: u64,
}

impl Prepared {
    /// Decodes selected column `s` (all `delta_count + 1` values) into `out`.
    pub fn decode(&self, s: usize, out: &mut [i64]) {
        let seg = self.segments[s];
        let mut reader = DeltaReader::resume(&self.deltas[seg.offset..], seg.pending_zeros);
        out[0] = self.reference[s];
        // Phase 1 walked these exact bytes, so this cannot fail.
        reader.decode_column(out[0] as u64, &mut out[1..]).expect("validated delta stream");
    }

    /// Selected column `s`'s first value (its reference's).
    pub fn first(&self, s: usize) -> i64 {
        self.reference[s]
    }

    /// What a catalog says of this chunk (`id_ms` times it when it has no time field).
    pub fn seen(&self, id_ms: Option<i64>) -> Seen {
        let (first, last) = match self.layout.time_index {
            Some(_) => (self.times.iter().min().copied(), self.times.iter().max().copied()),
            None => (id_ms, id_ms),
        };
        let metrics = self.layout.names().len();
        Seen { fingerprint: self.fingerprint, names: self.layout.metrics.clone(), samples: self.delta_count + 1, metrics, first, last }
    }
}

pub fn prepare(source: &Source, doc: &Document, opts: &Options, cache: &LayoutCache, budget: &Budget) -> Result<Prepared, String> {
    let data = &source.bytes[doc.data.clone().unwrap()];
    let mut payload = Inflater::new(data).and_then(|i| i.finish()).map_err(|e| e.message)?;
    let (header, values) = open_reference(&payload)?;
    let layout = cache.get_or_build(values.fingerprint(), || build_layout(&payload[..header.ref_len], opts))?;
    let dc = header.delta_count as usize;
    // Only the frame's columns are materialised; the metrics only kept stay delta bytes (`Kept`).
    let columns = layout.output.iter().filter(|&&o| o).count() as u64;
    if !budget.reserve(header.samples() as u64 * (columns + 1)) {
        return Err("over the value budget".into());
    }
    let deltas_start = header.deltas_start();

    // Walk every column now, so that phase 2 cannot fail, noting where each
    // selected column starts and decoding the time column.
    let stream = &payload[deltas_start..];
    let mut reader = DeltaReader::new(stream);
    let invalid = |e: VarintError| e.in_payload(deltas_start);
    let mut times = vec![doc.id_ms.unwrap_or(0); dc + 1];
    let mut ranges = Vec::with_capacity(layout.selected.len());
    let mut zero = Vec::with_capacity(layout.selected.len());
    let mut flat = Vec::with_capacity(layout.selected.len());
    let mut selected = layout.selected.iter().peekable();
    for m in 0..layout.names().len() {
        if Some(m) == layout.time_index {
            times[0] = values.values[m];
            reader.decode_column(times[0] as u64, &mut times[1..]).map_err(invalid)?;
        } else if selected.next_if_eq(&&m).is_some() {
            let (offset, pending_zeros) = reader.position();
            let zero_deltas = reader.skip(dc as u64).map_err(invalid)?;
            zero.push(zero_deltas && values.values[m] == 0);
            flat.push(zero_deltas);
            ranges.push((offset, reader.position().0, pending_zeros));
        } else {
            reader.skip(dc as u64).map_err(invalid)?;
        }
    }
    reader.finish().map_err(invalid)?;

    let reference = layout.selected.iter().map(|&m| values.values[m]).collect();
    let (deltas, segments) = if ranges.len() + layout.time_index.is_some() as usize == layout.names().len() {
        // Everything is selected: keep the stream in place, minus the reference document.
        payload.copy_within(deltas_start.., 0);
        payload.truncate(payload.len() - deltas_start);
        // Kept past the read when it keeps every metric (`Options::keep`): the reference document's bytes (half a
        // 7.0 chunk's) are given back.
        payload.shrink_to_fit();
        let segments = ranges.iter().map(|&(offset, _, pending_zeros)| Segment { offset, pending_zeros }).collect();
        (payload, segments)
    } else {
        let mut kept = Vec::with_capacity(ranges.iter().map(|r| r.1 - r.0).sum());
        let segments = ranges
            .iter()
            .map(|&(from, to, pending_zeros)| {
                let offset = kept.len();
                kept.extend_from_slice(&stream[from..to]);
                Segment { offset, pending_zeros }
            })
            .collect();
        (kept, segments)
    };
    Ok(Prepared { layout, reference, times, deltas, segments, zero, flat, delta_count: dc, fingerprint: values.fingerprint() })
}
