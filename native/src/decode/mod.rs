//! Reading many FTDC files into one set of columns.
//!
//! `prepare` (phase 1, parallel per chunk): inflate, walk the reference
//! document, validate the whole delta stream, decode the time column, keep
//! only the selected columns' bytes. `place`: drop duplicate interim samples
//! and out-of-range rows, group chunks that overlap in time, give each group
//! its row range. `output` (phase 2, parallel per group): decode the selected
//! columns straight into their final buffers and build validity bitmaps.
//!
//! Every read has a value budget: chunks reserve their values before
//! allocating, so crafted counts cannot make a small file take unbounded memory.

mod output;
mod place;
mod prepare;

use std::collections::HashMap;

use rayon::prelude::*;

use crate::arena::Arena;
use crate::catalog::{assemble, metric_chunks, peek, Catalog, NamesCache, Seen};
use crate::file::{documents_of, Document, Source};
use crate::select::Selection;

pub use prepare::Budget;

pub struct Options {
    pub selection: Selection,
    /// Inclusive bounds on the sample time, in ms since the epoch.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The root Date field that holds the sample time.
    pub time_field: String,
    /// Most values (rows x columns, time included) the read may materialise.
    pub max_values: u64,
    /// Also say what the files hold (`Frame::catalog`), from the same pass: the
    /// chunks decoded, and those the time range skips peeked as `catalog` does.
    pub catalog: bool,
}

/// Values per input byte the default budget allows. The densest real files
/// hold 4.4 (8.0 chunk), 15.6 (4.2.1) and 17.8 (7.0) values per byte; a node
/// whose every metric stays constant compresses to about 75 (measured with
/// the writer). 128 is 7x the densest real file and 1.7x that idle extreme.
pub const VALUES_PER_INPUT_BYTE: u64 = 128;
/// Inputs this small are never refused: 64 M values, 512 MB of int64.
pub const MIN_MAX_VALUES: u64 = 1 << 26;

/// The default value budget for a read of these sources.
pub fn default_max_values(sources: &[Source]) -> u64 {
    let bytes: u64 = sources.iter().map(|s| s.bytes.len() as u64).sum();
    (VALUES_PER_INPUT_BYTE * bytes).max(MIN_MAX_VALUES)
}

pub struct Column {
    pub name: String,
    pub kind: u8,
    /// Where this column's `rows` values start in `Frame::values`; None when
    /// every value is 0 (they are `Frame::zeros`, shared by all such columns).
    pub offset: Option<usize>,
    /// Arrow-style validity bitmap (bit set = present); None when all present.
    pub validity: Option<Vec<u8>>,
}

pub struct Frame {
    pub time: Vec<i64>,
    pub columns: Vec<Column>,
    /// Every stored column's values, one after another.
    pub values: Arena,
    /// `rows` zeros: the values of every column whose offset is None.
    pub zeros: Vec<i64>,
    /// "file: offset N: message" for each damaged document or chunk.
    pub problems: Vec<String>,
    /// Chunks whose time came from `_id` because the time field is missing.
    pub chunks_without_time: usize,
    /// Documents found in all sources; zero means nothing here is FTDC.
    pub documents: usize,
    /// Why nothing was read at all (the value budget was exceeded).
    pub error: Option<String>,
    /// With `Options::catalog`: every readable chunk of the input; a chunk the
    /// read skipped as damaged is in `problems` and not here.
    pub catalog: Option<Catalog>,
}

fn refused(problems: Vec<String>, documents: usize, message: String, catalog: Option<Catalog>) -> Frame {
    Frame {
        time: Vec::new(),
        columns: Vec::new(),
        values: Arena::new(0),
        zeros: Vec::new(),
        problems,
        chunks_without_time: 0,
        documents,
        error: Some(message),
        catalog,
    }
}

fn over_budget(opts: &Options, wanted: u64) -> String {
    format!(
        "the read would materialise {wanted} or more values, above the limit of {} for this input \
         (crafted or corrupt chunk counts?); select fewer metrics or a time range, stream it with \
         scan_ftdc or export, or raise the limit with read_ftdc(..., max_values=N)",
        opts.max_values
    )
}

pub fn read(sources: Vec<Source>, opts: &Options) -> Frame {
    let (docs, mut problems) = documents_of(&sources);
    let documents = docs.iter().map(Vec::len).sum();
    let refs = prepare::chunk_refs(&docs, opts);

    let budget = Budget::new(opts.max_values);
    let cache = prepare::LayoutCache::default();
    let prepared: Vec<_> = refs.par_iter().map(|c| prepare::prepare(&sources[c.source], c, opts, &cache, &budget)).collect();
    if budget.exceeded() {
        // What the files hold is still said, so a caller can refuse them as a two-pass reader would.
        let catalog = opts.catalog.then(|| catalog_of_read(&sources, docs, HashMap::new(), &mut problems, &opts.time_field));
        return refused(problems, documents, over_budget(opts, budget.wanted()), catalog);
    }
    let mut chunks = Vec::with_capacity(prepared.len());
    let mut interim = Vec::with_capacity(prepared.len());
    let mut seen = HashMap::new();
    for (c, p) in refs.iter().zip(prepared) {
        match p {
            Ok(p) => {
                if opts.catalog {
                    seen.insert((c.source, c.doc.offset), Some(p.seen(c.doc.id_ms)));
                }
                chunks.push(p);
                interim.push(sources[c.source].interim);
            }
            Err(m) => {
                // Skipped here, so in the catalog too: it lends no metric, and is said once.
                seen.insert((c.source, c.doc.offset), None);
                problems.push(format!("{}: offset {}: metric chunk skipped: {m}", sources[c.source].name, c.doc.offset));
            }
        }
    }
    let catalog = opts.catalog.then(|| catalog_of_read(&sources, docs, seen, &mut problems, &opts.time_field));
    // Phase 1 kept what it needs; the file bytes can go before the output is allocated.
    drop(sources);
    let chunks_without_time = chunks.iter().filter(|p| p.layout.time_index.is_none()).count();

    let plan = output::plan_columns(&chunks);
    let keeps = place::kept_rows(&chunks, &interim, opts.start, opts.end);
    let groups = place::group_rows(&chunks, &keeps);
    let rows: usize = groups.iter().map(|g| g.rows).sum();
    let wanted = (rows as u64).saturating_mul(plan.names.len() as u64 + 1);
    if wanted > opts.max_values {
        return refused(problems, documents, over_budget(opts, wanted), catalog);
    }
    let time = place::time_column(&groups, &chunks, rows);
    let (columns, values) = output::decode(&groups, &chunks, plan, rows);
    // Allocated zeroed (calloc, so mostly pages no one writes), never written.
    let zeros = if columns.iter().any(|c| c.offset.is_none()) { vec![0; rows] } else { Vec::new() };
    Frame { time, columns, values, zeros, problems, chunks_without_time, documents, error: None, catalog }
}

/// The catalog of a read: what its decoded chunks showed (None: refused as damaged),
/// and the chunks its time range skipped checked as `catalog` checks them.
fn catalog_of_read(
    sources: &[Source],
    docs: Vec<Vec<Document>>,
    mut seen: HashMap<(usize, usize), Option<Seen>>,
    problems: &mut Vec<String>,
    time_field: &str,
) -> Catalog {
    let all = metric_chunks(&docs);
    let skipped: Vec<&(usize, &Document)> = all.iter().filter(|(s, d)| !seen.contains_key(&(*s, d.offset))).collect();
    let cache = NamesCache::default();
    let peeked: Vec<Result<Seen, String>> =
        skipped.par_iter().map(|(s, d)| peek(&sources[*s].bytes[d.data.clone().unwrap()], time_field, d.id_ms, &cache)).collect();
    for ((s, d), p) in skipped.into_iter().zip(peeked) {
        match p {
            Ok(p) => {
                seen.insert((*s, d.offset), Some(p));
            }
            Err(m) => problems.push(format!("{}: offset {}: metric chunk skipped: {m}", sources[*s].name, d.offset)),
        }
    }
    let readable = all.iter().filter_map(|(s, d)| seen.remove(&(*s, d.offset)).flatten().map(|p| (*s, d.offset, d.id_ms, p))).collect();
    assemble(sources, docs, readable, Vec::new())
}
