//! Reading many FTDC files into one set of columns.
//!
//! Phase 1, in parallel per chunk: inflate, walk the reference document,
//! validate the whole delta stream and decode the time column; keep only the
//! delta bytes. Then, serially: choose columns, drop duplicate interim samples,
//! apply the time range and place every kept row in the sorted output.
//! Phase 2, in parallel per chunk: decode the selected columns straight into
//! their final buffers (disjoint rows per chunk, so no locking).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::arena::Arena;
use crate::chunk::{parse_header, Inflater};
use crate::file::{read_documents, Document, TYPE_METRIC_CHUNK};
use crate::metrics::{metric_names, metric_values, KIND_DATE, KIND_INT};
use crate::select::Selection;
use crate::varint::DeltaReader;

/// One input file, already read into memory.
pub struct Source {
    pub name: String,
    pub bytes: Vec<u8>,
    /// `metrics.interim`: its samples yield to archived copies.
    pub interim: bool,
}

pub struct Options {
    pub selection: Selection,
    /// Inclusive bounds on the sample time, in ms since the epoch.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The root Date field that holds the sample time.
    pub time_field: String,
}

/// The metrics of one distinct reference-document structure.
pub struct Layout {
    pub names: Vec<String>,
    pub kinds: Vec<u8>,
    /// Metric indices the read asked for, ascending.
    pub selected: Vec<usize>,
    pub time_index: Option<usize>,
}

fn build_layout(reference: &[u8], opts: &Options) -> Result<Layout, String> {
    let (names, kinds) = metric_names(reference).map_err(|e| format!("reference document: {e}"))?;
    let time_index = names.iter().position(|n| *n == opts.time_field).filter(|&i| kinds[i] == KIND_DATE);
    let selected = (0..names.len()).filter(|&i| Some(i) != time_index && opts.selection.matches(&names[i])).collect();
    Ok(Layout { names, kinds, selected, time_index })
}

/// Layouts keyed by structural fingerprint, shared by the worker threads.
#[derive(Default)]
pub struct LayoutCache(Mutex<HashMap<u64, Arc<Layout>>>);

impl LayoutCache {
    fn get(&self, fingerprint: u64, reference: &[u8], opts: &Options) -> Result<Arc<Layout>, String> {
        if let Some(l) = self.0.lock().unwrap().get(&fingerprint) {
            return Ok(l.clone());
        }
        let layout = Arc::new(build_layout(reference, opts)?);
        self.0.lock().unwrap().insert(fingerprint, layout.clone());
        Ok(layout)
    }
}

/// A metric chunk to read: where it is and its `_id`.
#[derive(Clone)]
pub struct ChunkRef {
    pub source: usize,
    pub doc: Document,
}

/// The type-1 documents of every source, minus those a time range rules out by `_id`.
pub fn chunk_refs(docs: &[Vec<Document>], start: Option<i64>, end: Option<i64>) -> Vec<ChunkRef> {
    let mut refs = Vec::new();
    for (source, file_docs) in docs.iter().enumerate() {
        let chunks: Vec<&Document> = file_docs.iter().filter(|d| d.doc_type == TYPE_METRIC_CHUNK).collect();
        for (i, doc) in chunks.iter().enumerate() {
            // `_id` is the first sample's time; samples run until the next chunk's `_id`.
            if let (Some(end), Some(id)) = (end, doc.id_ms) {
                if id > end {
                    continue;
                }
            }
            if let (Some(start), Some(id), Some(next)) = (start, doc.id_ms, chunks.get(i + 1).and_then(|n| n.id_ms)) {
                if next > id && next <= start {
                    continue;
                }
            }
            refs.push(ChunkRef { source, doc: (*doc).clone() });
        }
    }
    refs
}

/// Phase 1 result for one chunk.
struct Prepared {
    layout: Arc<Layout>,
    /// Reference values of the selected metrics, in `layout.selected` order.
    reference: Vec<i64>,
    times: Vec<i64>,
    deltas: Vec<u8>,
    delta_count: usize,
}

fn prepare(source: &Source, chunk: &ChunkRef, opts: &Options, cache: &LayoutCache) -> Result<Prepared, String> {
    let data = &source.bytes[chunk.doc.data.clone().unwrap()];
    let mut payload = Inflater::new(data).and_then(|i| i.finish()).map_err(|e| e.message)?;
    let header = parse_header(&payload).map_err(|e| format!("payload offset {}: {}", e.offset, e.message))?;
    let reference = &payload[..header.ref_len];
    let values = metric_values(reference).map_err(|e| format!("reference document: {e}"))?;
    if values.values.len() != header.metric_count as usize {
        return Err(format!(
            "reference document has {} metrics but metricCount is {}",
            values.values.len(),
            header.metric_count
        ));
    }
    let layout = cache.get(values.fingerprint(), reference, opts)?;
    let dc = header.delta_count as usize;
    let deltas_start = header.deltas_start();

    // Validate the whole stream now so that phase 2 cannot fail.
    let mut reader = DeltaReader::new(&payload[deltas_start..]);
    let mut times = vec![0i64; dc + 1];
    let invalid = |e: crate::varint::VarintError| format!("payload offset {}: {}", deltas_start + e.offset, e.message);
    match layout.time_index {
        Some(ti) => {
            times[0] = values.values[ti];
            reader.skip((ti * dc) as u64).map_err(invalid)?;
            reader.decode_column(times[0] as u64, &mut times[1..]).map_err(invalid)?;
            reader.skip(((layout.names.len() - ti - 1) * dc) as u64).map_err(invalid)?;
        }
        None => {
            times.fill(chunk.doc.id_ms.unwrap_or(0));
            reader.skip((layout.names.len() * dc) as u64).map_err(invalid)?;
        }
    }
    reader.finish().map_err(invalid)?;

    let reference = layout.selected.iter().map(|&m| values.values[m]).collect();
    payload.copy_within(deltas_start.., 0);
    payload.truncate(payload.len() - deltas_start);
    payload.shrink_to_fit();
    Ok(Prepared { layout, reference, times, deltas: payload, delta_count: dc })
}

/// Where a chunk's kept rows go in the output.
enum Placement {
    /// Rows `keep` (all when None) land at consecutive positions from `offset`.
    Contiguous { offset: usize },
    /// Kept row k lands at `positions[k]`.
    Scatter { positions: Vec<usize> },
}

struct Planned {
    prepared: Prepared,
    /// Indices of the rows kept; None keeps all.
    keep: Option<Vec<usize>>,
    placement: Placement,
    /// Output column of each selected metric.
    columns: Arc<Vec<usize>>,
}

pub struct Column {
    pub name: String,
    pub kind: u8,
    /// Where this column's `rows` values start in `Frame::values`.
    pub offset: usize,
    /// Arrow-style validity bitmap (bit set = present); None when all present.
    pub validity: Option<Vec<u8>>,
}

pub struct Frame {
    pub time: Vec<i64>,
    pub columns: Vec<Column>,
    /// Every column's values, one after another.
    pub values: Arena,
    /// "file: offset N: message" for each damaged document or chunk.
    pub problems: Vec<String>,
    /// Chunks whose time came from `_id` because the time field is missing.
    pub chunks_without_time: usize,
    /// Documents found in all sources; zero means nothing here is FTDC.
    pub documents: usize,
}

#[derive(Clone, Copy)]
struct SharedOut(*mut i64);
// Safety: each chunk writes only the rows placed for it, which are disjoint.
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

fn kept(times: &[i64], keep: &Option<Vec<usize>>) -> Vec<i64> {
    match keep {
        None => times.to_vec(),
        Some(k) => k.iter().map(|&i| times[i]).collect(),
    }
}

pub fn read(sources: &[Source], opts: &Options) -> Frame {
    let mut problems = Vec::new();
    let docs: Vec<Vec<Document>> = sources
        .iter()
        .map(|s| {
            let (docs, file_problems) = read_documents(&s.bytes);
            problems.extend(file_problems.into_iter().map(|p| format!("{}: offset {}: {}", s.name, p.offset, p.message)));
            docs
        })
        .collect();
    let refs = chunk_refs(&docs, opts.start, opts.end);
    let documents = docs.iter().map(Vec::len).sum();

    let cache = LayoutCache::default();
    let prepared: Vec<Result<Prepared, String>> =
        refs.par_iter().map(|c| prepare(&sources[c.source], c, opts, &cache)).collect();
    let mut chunks = Vec::with_capacity(prepared.len());
    let mut interim_flags = Vec::with_capacity(prepared.len());
    for (c, p) in refs.iter().zip(prepared) {
        match p {
            Ok(p) => {
                chunks.push(p);
                interim_flags.push(sources[c.source].interim);
            }
            Err(m) => problems.push(format!("{}: offset {}: metric chunk skipped: {m}", sources[c.source].name, c.doc.offset)),
        }
    }
    let chunks_without_time = chunks.iter().filter(|p| p.layout.time_index.is_none()).count();

    // Output columns in first-seen order; a column whose kinds disagree is Int.
    let mut column_of: HashMap<String, usize> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut kinds: Vec<u8> = Vec::new();
    let mut layout_columns: HashMap<*const Layout, Arc<Vec<usize>>> = HashMap::new();
    let mut chunk_columns = Vec::with_capacity(chunks.len());
    for p in &chunks {
        let key = Arc::as_ptr(&p.layout);
        let cols = layout_columns
            .entry(key)
            .or_insert_with(|| {
                Arc::new(
                    p.layout
                        .selected
                        .iter()
                        .map(|&m| {
                            let name = &p.layout.names[m];
                            let kind = p.layout.kinds[m];
                            let id = *column_of.entry(name.clone()).or_insert_with(|| {
                                names.push(name.clone());
                                kinds.push(kind);
                                names.len() - 1
                            });
                            if kinds[id] != kind {
                                kinds[id] = KIND_INT;
                            }
                            id
                        })
                        .collect(),
                )
            })
            .clone();
        chunk_columns.push(cols);
    }

    // Interim samples already archived, and samples outside the range, are dropped.
    let archived: HashSet<i64> = if interim_flags.iter().any(|&f| f) {
        chunks.iter().zip(&interim_flags).filter(|(_, &f)| !f).flat_map(|(p, _)| p.times.iter().copied()).collect()
    } else {
        HashSet::new()
    };
    let keeps: Vec<Option<Vec<usize>>> = chunks
        .iter()
        .zip(&interim_flags)
        .map(|(p, &interim)| {
            let wanted = |t: i64| {
                opts.start.is_none_or(|s| t >= s) && opts.end.is_none_or(|e| t <= e) && !(interim && archived.contains(&t))
            };
            if p.times.iter().all(|&t| wanted(t)) {
                None
            } else {
                Some((0..p.times.len()).filter(|&i| wanted(p.times[i])).collect())
            }
        })
        .collect();

    let placements = place_rows(&chunks, &keeps);
    let rows: usize = chunks.iter().zip(&keeps).map(|(p, k)| k.as_ref().map_or(p.times.len(), |k| k.len())).sum();
    let mut planned: Vec<Planned> = chunks
        .into_iter()
        .zip(keeps)
        .zip(placements)
        .zip(chunk_columns)
        .map(|(((prepared, keep), placement), columns)| Planned { prepared, keep, placement, columns })
        .collect();
    planned.retain(|p| p.keep.as_ref().is_none_or(|k| !k.is_empty()));

    let mut time = vec![0i64; rows];
    for p in &planned {
        scatter_into(&mut time, &kept(&p.prepared.times, &p.keep), &p.placement);
    }

    let values = Arena::zeroed(rows * names.len());
    // Safety: column c owns values[c * rows .. (c + 1) * rows].
    let outs: Vec<SharedOut> = (0..names.len()).map(|c| SharedOut(unsafe { values.as_mut_ptr().add(c * rows) })).collect();
    planned.par_iter().for_each(|p| decode_selected(p, &outs, rows));

    let validity = validity_bitmaps(&planned, names.len(), rows);
    let columns = names
        .into_iter()
        .zip(kinds)
        .zip(validity)
        .enumerate()
        .map(|(c, ((name, kind), validity))| Column { name, kind, offset: c * rows, validity })
        .collect();
    Frame { time, columns, values, problems, chunks_without_time, documents }
}

/// Orders chunks so that the output is sorted by time: as read when already
/// sorted, else by each chunk's first time, else row by row (stable).
fn place_rows(chunks: &[Prepared], keeps: &[Option<Vec<usize>>]) -> Vec<Placement> {
    let times: Vec<Vec<i64>> = chunks.iter().zip(keeps).map(|(p, k)| kept(&p.times, k)).collect();
    let sorted_in = |order: &[usize]| {
        let mut last = i64::MIN;
        order.iter().all(|&c| {
            times[c].iter().all(|&t| {
                let ok = t >= last;
                last = t;
                ok
            })
        })
    };
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    if !sorted_in(&order) {
        order.sort_by_key(|&c| times[c].first().copied().unwrap_or(i64::MIN));
    }
    if sorted_in(&order) {
        let mut offsets = vec![0usize; chunks.len()];
        let mut next = 0;
        for &c in &order {
            offsets[c] = next;
            next += times[c].len();
        }
        return offsets.into_iter().map(|offset| Placement::Contiguous { offset }).collect();
    }
    let mut all: Vec<(i64, usize, usize)> =
        times.iter().enumerate().flat_map(|(c, ts)| ts.iter().enumerate().map(move |(k, &t)| (t, c, k))).collect();
    all.sort_by_key(|&(t, c, k)| (t, c, k));
    let mut positions: Vec<Vec<usize>> = times.iter().map(|t| vec![0; t.len()]).collect();
    for (pos, &(_, c, k)) in all.iter().enumerate() {
        positions[c][k] = pos;
    }
    positions.into_iter().map(|positions| Placement::Scatter { positions }).collect()
}

fn scatter_into(out: &mut [i64], values: &[i64], placement: &Placement) {
    match placement {
        Placement::Contiguous { offset } => out[*offset..*offset + values.len()].copy_from_slice(values),
        Placement::Scatter { positions } => {
            for (&p, &v) in positions.iter().zip(values) {
                out[p] = v;
            }
        }
    }
}

/// Decodes a chunk's selected columns into the shared output buffers.
fn decode_selected(p: &Planned, outs: &[SharedOut], rows: usize) {
    let prepared = &p.prepared;
    let dc = prepared.delta_count;
    let mut reader = DeltaReader::new(&prepared.deltas);
    let mut next_metric = 0;
    let direct = matches!(p.placement, Placement::Contiguous { .. }) && p.keep.is_none();
    let mut scratch = if direct { Vec::new() } else { vec![0i64; dc + 1] };
    for (s, &m) in prepared.layout.selected.iter().enumerate() {
        // Phase 1 validated this stream, so these cannot fail.
        reader.skip(((m - next_metric) * dc) as u64).expect("validated delta stream");
        next_metric = m + 1;
        let out = outs[p.columns[s]].0;
        let first = prepared.reference[s];
        if let (true, Placement::Contiguous { offset }) = (direct, &p.placement) {
            // Safety: rows offset..offset+dc+1 belong to this chunk alone.
            let column = unsafe { std::slice::from_raw_parts_mut(out.add(*offset), dc + 1) };
            debug_assert!(offset + dc < rows);
            column[0] = first;
            reader.decode_column(first as u64, &mut column[1..]).expect("validated delta stream");
            continue;
        }
        scratch[0] = first;
        reader.decode_column(first as u64, &mut scratch[1..]).expect("validated delta stream");
        let values = kept(&scratch, &p.keep);
        // Safety: as above, the placement's rows belong to this chunk alone.
        let column = unsafe { std::slice::from_raw_parts_mut(out, rows) };
        scatter_into(column, &values, &p.placement);
    }
}

/// A bitmap per column that some chunk lacks; None for complete columns.
fn validity_bitmaps(planned: &[Planned], columns: usize, rows: usize) -> Vec<Option<Vec<u8>>> {
    let mut present = vec![0usize; columns];
    for p in planned {
        let n = p.keep.as_ref().map_or(p.prepared.times.len(), |k| k.len());
        for &c in p.columns.iter() {
            present[c] += n;
        }
    }
    let mut bitmaps: Vec<Option<Vec<u8>>> =
        present.iter().map(|&n| if n == rows { None } else { Some(vec![0u8; rows.div_ceil(8)]) }).collect();
    for p in planned {
        let n = p.keep.as_ref().map_or(p.prepared.times.len(), |k| k.len());
        for &c in p.columns.iter() {
            if let Some(bits) = bitmaps[c].as_mut() {
                match &p.placement {
                    Placement::Contiguous { offset } => (*offset..*offset + n).for_each(|r| bits[r / 8] |= 1 << (r % 8)),
                    Placement::Scatter { positions } => positions.iter().for_each(|&r| bits[r / 8] |= 1 << (r % 8)),
                }
            }
        }
    }
    bitmaps
}
