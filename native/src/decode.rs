//! Reading many FTDC files into one set of columns.
//!
//! Phase 1, in parallel per chunk: inflate, walk the reference document,
//! validate the whole delta stream, decode the time column, and keep only
//! the bytes of the selected columns with the state to resume each. Then,
//! serially: choose columns, drop duplicate interim samples, apply the time
//! range, and group chunks that overlap in time. Phase 2, in parallel per
//! group: decode the selected columns straight into their final buffers
//! (each group owns a disjoint row range, so no locking); overlapping chunks
//! are merged through small scratch buffers so output is written in order.

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

/// The documents of every source, and a problem line for each damaged
/// region or empty file ("file: offset N: message").
pub fn documents_of(sources: &[Source]) -> (Vec<Vec<Document>>, Vec<String>) {
    let mut problems = Vec::new();
    let docs = sources
        .iter()
        .map(|s| {
            let (docs, file_problems) = read_documents(&s.bytes);
            if docs.is_empty() && file_problems.is_empty() {
                problems.push(format!("{}: empty file, no FTDC documents", s.name));
            }
            problems.extend(file_problems.into_iter().map(|p| format!("{}: offset {}: {}", s.name, p.offset, p.message)));
            docs
        })
        .collect();
    (docs, problems)
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

/// Where one selected column's deltas start in `Prepared::deltas`.
#[derive(Clone, Copy)]
struct Segment {
    offset: usize,
    pending_zeros: u64,
}

/// Phase 1 result for one chunk.
struct Prepared {
    layout: Arc<Layout>,
    /// Reference values of the selected metrics, in `layout.selected` order.
    reference: Vec<i64>,
    times: Vec<i64>,
    /// The selected columns' delta bytes; `segments[s]` resumes column s.
    deltas: Vec<u8>,
    segments: Vec<Segment>,
    delta_count: usize,
}

impl Prepared {
    /// Decodes selected column `s` (all `delta_count + 1` values) into `out`.
    fn decode(&self, s: usize, out: &mut [i64]) {
        let seg = self.segments[s];
        let mut reader = DeltaReader::resume(&self.deltas[seg.offset..], seg.pending_zeros);
        out[0] = self.reference[s];
        // Phase 1 walked these exact bytes, so this cannot fail.
        reader.decode_column(out[0] as u64, &mut out[1..]).expect("validated delta stream");
    }
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

    // Walk every column now, so that phase 2 cannot fail, noting where each
    // selected column starts and decoding the time column.
    let stream = &payload[deltas_start..];
    let mut reader = DeltaReader::new(stream);
    let invalid = |e: crate::varint::VarintError| format!("payload offset {}: {}", deltas_start + e.offset, e.message);
    let mut times = vec![chunk.doc.id_ms.unwrap_or(0); dc + 1];
    let mut ranges = Vec::with_capacity(layout.selected.len());
    let mut selected = layout.selected.iter().peekable();
    for m in 0..layout.names.len() {
        if Some(m) == layout.time_index {
            times[0] = values.values[m];
            reader.decode_column(times[0] as u64, &mut times[1..]).map_err(invalid)?;
        } else if selected.next_if_eq(&&m).is_some() {
            let (offset, pending_zeros) = reader.position();
            reader.skip(dc as u64).map_err(invalid)?;
            ranges.push((offset, reader.position().0, pending_zeros));
        } else {
            reader.skip(dc as u64).map_err(invalid)?;
        }
    }
    reader.finish().map_err(invalid)?;

    let reference = layout.selected.iter().map(|&m| values.values[m]).collect();
    let (deltas, segments) = if ranges.len() + layout.time_index.is_some() as usize == layout.names.len() {
        // Everything is selected: keep the stream in place, minus the reference document.
        payload.copy_within(deltas_start.., 0);
        payload.truncate(payload.len() - deltas_start);
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
    Ok(Prepared { layout, reference, times, deltas, segments, delta_count: dc })
}

/// Chunks whose kept rows fill one contiguous, sorted range of the output.
struct Group {
    chunks: Vec<usize>,
    offset: usize,
    rows: usize,
    /// Source `(chunk within group, row)` of each output row; None when the
    /// group is one chunk whose rows are all kept and already sorted.
    order: Option<Vec<(u32, u32)>>,
}

/// Orders chunks by first kept time and groups those whose times overlap;
/// inside a group rows are sorted by time, ties in chunk order.
fn group_rows(chunks: &[Prepared], keeps: &[Option<Vec<usize>>]) -> Vec<Group> {
    let kept_times = |c: usize| -> Vec<i64> {
        match &keeps[c] {
            None => chunks[c].times.clone(),
            Some(k) => k.iter().map(|&i| chunks[c].times[i]).collect(),
        }
    };
    let times: Vec<Vec<i64>> = (0..chunks.len()).map(kept_times).collect();
    let mut order: Vec<usize> = (0..chunks.len()).filter(|&c| !times[c].is_empty()).collect();
    order.sort_by_key(|&c| times[c][0]);

    let mut groups: Vec<Group> = Vec::new();
    let mut group_max = i64::MIN;
    for c in order {
        let first = times[c].iter().copied().min().unwrap();
        match groups.last_mut() {
            Some(g) if first < group_max => g.chunks.push(c),
            _ => groups.push(Group { chunks: vec![c], offset: 0, rows: 0, order: None }),
        }
        group_max = group_max.max(times[c].iter().copied().max().unwrap());
    }
    let mut offset = 0;
    for g in &mut groups {
        g.offset = offset;
        g.rows = g.chunks.iter().map(|&c| times[c].len()).sum();
        offset += g.rows;
        let single_sorted = g.chunks.len() == 1 && keeps[g.chunks[0]].is_none() && times[g.chunks[0]].is_sorted();
        if !single_sorted {
            let mut rows: Vec<(i64, u32, u32)> = Vec::with_capacity(g.rows);
            for (j, &c) in g.chunks.iter().enumerate() {
                let source_rows: Vec<usize> = keeps[c].clone().unwrap_or_else(|| (0..chunks[c].times.len()).collect());
                rows.extend(source_rows.iter().zip(&times[c]).map(|(&r, &t)| (t, j as u32, r as u32)));
            }
            rows.sort_unstable();
            g.order = Some(rows.into_iter().map(|(_, j, r)| (j, r)).collect());
        }
    }
    groups
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
// Safety: each group writes only its own row range, and ranges are disjoint.
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

pub fn read(sources: Vec<Source>, opts: &Options) -> Frame {
    let (docs, mut problems) = documents_of(&sources);
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
    // Phase 1 kept what it needs; the file bytes can go before the output is allocated.
    drop(sources);
    let chunks_without_time = chunks.iter().filter(|p| p.layout.time_index.is_none()).count();

    // Output columns in first-seen order; a column whose kinds disagree is Int.
    let mut column_of: HashMap<String, usize> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut kinds: Vec<u8> = Vec::new();
    let mut layout_columns: HashMap<*const Layout, Arc<Vec<usize>>> = HashMap::new();
    let mut chunk_columns = Vec::with_capacity(chunks.len());
    for p in &chunks {
        let cols = layout_columns
            .entry(Arc::as_ptr(&p.layout))
            .or_insert_with(|| {
                Arc::new(
                    p.layout
                        .selected
                        .iter()
                        .map(|&m| {
                            let (name, kind) = (&p.layout.names[m], p.layout.kinds[m]);
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

    let groups = group_rows(&chunks, &keeps);
    let rows: usize = groups.iter().map(|g| g.rows).sum();
    let mut time = vec![0i64; rows];
    for g in &groups {
        for (i, (j, r)) in group_sources(g, &chunks).enumerate() {
            time[g.offset + i] = chunks[g.chunks[j]].times[r];
        }
    }

    let values = Arena::zeroed(rows * names.len());
    // Safety: column c owns values[c * rows .. (c + 1) * rows].
    let outs: Vec<SharedOut> = (0..names.len()).map(|c| SharedOut(unsafe { values.as_mut_ptr().add(c * rows) })).collect();
    groups.par_iter().for_each(|g| decode_group(g, &chunks, &chunk_columns, &outs));

    let validity = validity_bitmaps(&groups, &chunks, &chunk_columns, names.len(), rows);
    let columns = names
        .into_iter()
        .zip(kinds)
        .zip(validity)
        .enumerate()
        .map(|(c, ((name, kind), validity))| Column { name, kind, offset: c * rows, validity })
        .collect();
    Frame { time, columns, values, problems, chunks_without_time, documents }
}

/// `(chunk within group, row)` of each output row of `g`, in output order.
fn group_sources<'a>(g: &'a Group, chunks: &[Prepared]) -> Box<dyn Iterator<Item = (usize, usize)> + 'a> {
    match &g.order {
        None => Box::new((0..chunks[g.chunks[0]].times.len()).map(|r| (0, r))),
        Some(order) => Box::new(order.iter().map(|&(j, r)| (j as usize, r as usize))),
    }
}

/// Decodes a group's selected columns into its rows of the output buffers.
fn decode_group(g: &Group, chunks: &[Prepared], chunk_columns: &[Arc<Vec<usize>>], outs: &[SharedOut]) {
    // Safety (both branches): rows g.offset..g.offset+g.rows belong to this group alone.
    let output = |col: usize| unsafe { std::slice::from_raw_parts_mut(outs[col].0.add(g.offset), g.rows) };
    let Some(order) = &g.order else {
        let c = g.chunks[0];
        for (s, &col) in chunk_columns[c].iter().enumerate() {
            chunks[c].decode(s, output(col));
        }
        return;
    };
    // Which selected column of each chunk feeds each output column.
    let mut sources: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    for (j, &c) in g.chunks.iter().enumerate() {
        for (s, &col) in chunk_columns[c].iter().enumerate() {
            sources.entry(col).or_default().push((j, s));
        }
    }
    let mut scratch: Vec<Vec<i64>> = g.chunks.iter().map(|&c| vec![0i64; chunks[c].delta_count + 1]).collect();
    let mut has = vec![false; g.chunks.len()];
    for (col, feeding) in sources {
        has.fill(false);
        for &(j, s) in &feeding {
            chunks[g.chunks[j]].decode(s, &mut scratch[j]);
            has[j] = true;
        }
        for (out, &(j, r)) in output(col).iter_mut().zip(order) {
            if has[j as usize] {
                *out = scratch[j as usize][r as usize];
            }
        }
    }
}

/// A bitmap per column that some rows lack; None for complete columns.
fn validity_bitmaps(
    groups: &[Group],
    chunks: &[Prepared],
    chunk_columns: &[Arc<Vec<usize>>],
    columns: usize,
    rows: usize,
) -> Vec<Option<Vec<u8>>> {
    // Rows each chunk contributes to its group.
    let contributed = |g: &Group| -> Vec<usize> {
        let mut counts = vec![0usize; g.chunks.len()];
        group_sources(g, chunks).for_each(|(j, _)| counts[j] += 1);
        counts
    };
    let mut present = vec![0usize; columns];
    for g in groups {
        for (j, n) in contributed(g).into_iter().enumerate() {
            chunk_columns[g.chunks[j]].iter().for_each(|&col| present[col] += n);
        }
    }
    let mut bitmaps: Vec<Option<Vec<u8>>> =
        present.iter().map(|&n| if n == rows { None } else { Some(vec![0u8; rows.div_ceil(8)]) }).collect();
    for g in groups {
        for (j, &c) in g.chunks.iter().enumerate() {
            let incomplete: Vec<usize> = chunk_columns[c].iter().copied().filter(|&col| bitmaps[col].is_some()).collect();
            if incomplete.is_empty() {
                continue;
            }
            for (i, _) in group_sources(g, chunks).enumerate().filter(|(_, (jj, _))| *jj == j) {
                let row = g.offset + i;
                for &col in &incomplete {
                    bitmaps[col].as_mut().unwrap()[row / 8] |= 1 << (row % 8);
                }
            }
        }
    }
    bitmaps
}
