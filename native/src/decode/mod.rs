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

pub mod kept;
mod output;
mod place;
mod prepare;

use std::collections::HashMap;

use rayon::prelude::*;

use crate::arena::Arena;
use crate::catalog::{assemble, bodies_of, chunk_skipped, metric_chunks, peek, Catalog, NamesCache, Seen};
use crate::file::{documents_of_source, Document, FileProblem, Source, TYPE_METRIC_CHUNK};
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
    /// Also keep the delta bytes of every metric (not only those selected) and the rows' places, so that their values
    /// can be reduced after the read (`Frame::kept`, `kept::Kept`) without inflating the chunks again.
    pub keep: bool,
}

/// Values per input byte the default budget allows. The densest real files
/// hold 4.4 (8.0 chunk), 15.6 (4.2.1) and 17.8 (7.0) values per byte; a node
/// whose every metric stays constant compresses to about 75 (measured with
/// the writer). 128 is 7x the densest real file and 1.7x that idle extreme.
pub const VALUES_PER_INPUT_BYTE: u64 = 128;
/// Inputs this small are never refused: 64 M values, 512 MB of int64.
pub const MIN_MAX_VALUES: u64 = 1 << 26;

/// The default value budget for a read of files of `bytes` in all.
pub fn default_max_values(bytes: u64) -> u64 {
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
    /// Each damaged document or chunk.
    pub problems: Vec<FileProblem>,
    /// Chunks whose time came from `_id` because the time field is missing.
    pub chunks_without_time: usize,
    /// Documents found in all sources; zero means nothing here is FTDC.
    pub documents: usize,
    /// Why nothing was read at all (the value budget was exceeded).
    pub error: Option<String>,
    /// With `Options::catalog`: every readable chunk of the input; a chunk the
    /// read skipped as damaged is in `problems` and not here.
    pub catalog: Option<Catalog>,
    /// With `Options::keep`: every metric's delta bytes and the rows' places, to reduce after the read.
    pub kept: Option<kept::Kept>,
}

fn refused(problems: Vec<FileProblem>, documents: usize, message: String, catalog: Option<Catalog>) -> Frame {
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
        kept: None,
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

/// How a source's bytes are had when its turn comes: read from its file (the command line's), or already held (tests,
/// bytes given).
pub type Fill<'a> = &'a (dyn Fn(&Source) -> std::io::Result<Vec<u8>> + Sync);

/// The sources' bytes as given.
pub const HELD: Fill<'static> = &|_| Ok(Vec::new());

/// The compressed bytes a read holds at once, about: its files are read in batches of this many bytes (or one file),
/// enough chunks to keep every core busy.
const BATCH_BYTES: usize = 32 << 20;

/// Decodes `sources` a batch of files at a time (BATCH_BYTES): the batch's bytes are read (filled by `fill` where a
/// source holds none), its chunks prepared in parallel and, for the catalog, peeked where a time range skips them,
/// then let go before the next batch's, so a read no longer holds every file's compressed bytes while it inflates
/// their chunks (a week's 200 MB of files). The problems come in the order a whole read gives them: every file's
/// damage, then the chunks that could not be prepared, then those that could not be peeked.
pub fn read(mut sources: Vec<Source>, opts: &Options, fill: Fill<'_>) -> Frame {
    let budget = Budget::new(opts.max_values);
    let cache = prepare::LayoutCache::default();
    let names = NamesCache::default();
    let (mut problems, mut skipped, mut unpeeked) = (Vec::new(), Vec::new(), Vec::new());
    let mut docs: Vec<Vec<Document>> = Vec::with_capacity(sources.len());
    let mut bodies = Vec::with_capacity(sources.len());
    let mut seen = HashMap::new();
    let (mut chunks, mut interim) = (Vec::new(), Vec::new());
    let mut next = 0;
    while next < sources.len() {
        let (first, mut held) = (next, 0);
        while next < sources.len() && (next == first || held < BATCH_BYTES) {
            let source = &mut sources[next];
            next += 1;
            let filled = if source.bytes.is_empty() { fill(source).map(|bytes| source.bytes = bytes) } else { Ok(()) };
            match filled {
                Ok(()) => {
                    let (found, file_problems) = documents_of_source(source);
                    problems.extend(file_problems);
                    docs.push(found);
                }
                Err(e) => {
                    problems.push(FileProblem::unreadable(&source.name, &e));
                    docs.push(Vec::new());
                }
            }
            held += source.bytes.len();
        }
        let batch = first..next;
        // After a refusal, only what the files hold is still said (a caller can refuse them as a two-pass reader would).
        let refs: Vec<(usize, &Document)> = if budget.exceeded() {
            Vec::new()
        } else {
            batch.clone().flat_map(|i| prepare::chunk_refs(&docs[i], opts).into_iter().map(move |c| (i, c))).collect()
        };
        let prepared: Vec<_> = refs.par_iter().map(|&(i, c)| prepare::prepare(&sources[i], c, opts, &cache, &budget)).collect();
        for (&(i, c), p) in refs.iter().zip(prepared) {
            match p {
                Ok(p) => {
                    if opts.catalog {
                        seen.insert((i, c.offset), Some(p.seen(c.id_ms)));
                    }
                    chunks.push(p);
                    interim.push(sources[i].interim);
                }
                Err(m) => {
                    // Skipped here, so in the catalog too: it lends no metric, and is said once.
                    seen.insert((i, c.offset), None);
                    skipped.push(chunk_skipped(&sources[i].name, c.offset, m));
                }
            }
        }
        if opts.catalog {
            let unseen: Vec<(usize, &Document)> = batch
                .clone()
                .flat_map(|i| docs[i].iter().map(move |d| (i, d)))
                .filter(|(i, d)| d.doc_type == TYPE_METRIC_CHUNK && !seen.contains_key(&(*i, d.offset)))
                .collect();
            let peeked: Vec<Result<Seen, String>> = unseen
                .par_iter()
                .map(|&(i, d)| peek(&sources[i].bytes[d.data.clone().unwrap()], &opts.time_field, d.id_ms, &names))
                .collect();
            for ((i, d), p) in unseen.into_iter().zip(peeked) {
                match p {
                    Ok(p) => {
                        seen.insert((i, d.offset), Some(p));
                    }
                    Err(m) => unpeeked.push(chunk_skipped(&sources[i].name, d.offset, m)),
                }
            }
            bodies.extend(batch.clone().map(|i| bodies_of(&sources[i], &docs[i])));
        }
        batch.for_each(|i| sources[i].bytes = Vec::new());
    }
    let documents = docs.iter().map(Vec::len).sum();
    let catalog = opts.catalog.then(|| {
        let readable = metric_chunks(&docs)
            .iter()
            .filter_map(|(s, d)| seen.remove(&(*s, d.offset)).flatten().map(|p| (*s, d.offset, d.id_ms, p)))
            .collect();
        assemble(sources.iter().map(|s| s.name.clone()).collect(), docs, bodies, readable, Vec::new())
    });
    problems.append(&mut skipped);
    problems.append(&mut unpeeked);
    if budget.exceeded() {
        return refused(problems, documents, over_budget(opts, budget.wanted()), catalog);
    }
    let chunks_without_time = chunks.iter().filter(|p| p.layout.time_index.is_none()).count();

    let plan = output::plan_columns(&chunks, false);
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
    let kept = opts.keep.then(|| {
        let plan = output::plan_columns(&chunks, true);
        kept::Kept::new(chunks, groups, plan, rows)
    });
    Frame { time, columns, values, zeros, problems, chunks_without_time, documents, error: None, catalog, kept }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::catalog;
    use crate::file::ProblemKind;
    use crate::testing::{chunk, sample, seconds, source};

    fn options() -> Options {
        Options {
            selection: Selection::all(),
            start: None,
            end: None,
            time_field: "start".into(),
            max_values: 1 << 20,
            catalog: false,
            keep: false,
        }
    }

    /// The values of the column `name`, None where absent.
    fn column(frame: &Frame, name: &str) -> Vec<Option<i64>> {
        let c = frame.columns.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no column {name}"));
        let rows = frame.time.len();
        let values = match c.offset {
            Some(o) => &frame.values.as_slice()[o..o + rows],
            None => &frame.zeros[..rows],
        };
        let present = |i: usize| c.validity.as_ref().is_none_or(|v| v[i / 8] >> (i % 8) & 1 == 1);
        (0..rows).map(|i| present(i).then_some(values[i])).collect()
    }

    fn names(frame: &Frame) -> Vec<&str> {
        frame.columns.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn files_given_in_any_order_read_as_one_frame_in_time_order() {
        let later = source("b", &[chunk(&seconds(6000, 5, 5), 6000)], false);
        let earlier = source("a", &[chunk(&seconds(1000, 5, 0), 1000)], false);
        let frame = read(vec![later, earlier], &options(), HELD);
        assert_eq!(frame.problems, Vec::<FileProblem>::new());
        assert_eq!(frame.time, (1..=10).map(|s| s * 1000).collect::<Vec<i64>>());
        assert_eq!(names(&frame), ["serverStatus.a", "serverStatus.b"]);
        assert_eq!(column(&frame, "serverStatus.a"), (0..10).map(Some).collect::<Vec<_>>());
        assert_eq!(column(&frame, "serverStatus.b"), vec![Some(7); 10]);
        assert_eq!(frame.documents, 2);
    }

    #[test]
    fn an_interim_sample_yields_to_its_archived_copy() {
        let archived = source("metrics.1", &[chunk(&seconds(1000, 5, 0), 1000)], false);
        let interim = source("metrics.interim", &[chunk(&seconds(4000, 5, 100), 4000)], true);
        let frame = read(vec![interim, archived], &options(), HELD);
        assert_eq!(frame.time, (1..=8).map(|s| s * 1000).collect::<Vec<i64>>());
        // 4 s and 5 s are in both files: the archive's values (3, 4), then the interim file's own (102...).
        assert_eq!(column(&frame, "serverStatus.a"), [0, 1, 2, 3, 4, 102, 103, 104].map(Some).to_vec());
    }

    #[test]
    fn a_time_range_keeps_the_samples_inside_it_bounds_included() {
        let frame = read(
            vec![source("a", &[chunk(&seconds(1000, 10, 0), 1000)], false)],
            &Options { start: Some(3000), end: Some(5000), ..options() },
            HELD,
        );
        assert_eq!(frame.time, vec![3000, 4000, 5000]);
        assert_eq!(column(&frame, "serverStatus.a"), [2, 3, 4].map(Some).to_vec());
    }

    #[test]
    fn a_selection_decodes_only_its_metrics() {
        let selection = Selection::new(&["serverStatus.b".to_string()]).unwrap();
        let frame = read(vec![source("a", &[chunk(&seconds(1000, 3, 0), 1000)], false)], &Options { selection, ..options() }, HELD);
        assert_eq!(names(&frame), ["serverStatus.b"]);
    }

    #[test]
    fn a_metric_missing_from_one_chunk_is_absent_in_its_rows() {
        let narrow: Vec<Vec<u8>> = (0..3).map(|i| sample(1000 + 1000 * i, &[("b", 7)])).collect();
        let wide = seconds(4000, 2, 50);
        let frame = read(vec![source("a", &[chunk(&narrow, 1000), chunk(&wide, 4000)], false)], &options(), HELD);
        assert_eq!(column(&frame, "serverStatus.a"), vec![None, None, None, Some(50), Some(51)]);
        assert_eq!(column(&frame, "serverStatus.b"), vec![Some(7); 5]);
    }

    #[test]
    fn a_damaged_chunk_is_a_problem_naming_file_and_offset_and_the_rest_is_read() {
        let good = chunk(&seconds(1000, 3, 0), 1000);
        let mut bad = chunk(&seconds(4000, 3, 10), 4000);
        let end = bad.len() - 1;
        bad[end - 8..end].copy_from_slice(&[0xff; 8]); // the zlib stream's tail (its checksum)
        let frame = read(vec![source("metrics.1", &[good.clone(), bad], false)], &options(), HELD);
        assert_eq!(frame.time, vec![1000, 2000, 3000]);
        assert_eq!(frame.problems.len(), 1, "{:?}", frame.problems);
        let problem = &frame.problems[0];
        assert_eq!((problem.file.as_str(), problem.offset, problem.kind), ("metrics.1", Some(good.len()), ProblemKind::ChunkSkipped));
        assert!(problem.to_string().starts_with(&format!("metrics.1: offset {}: metric chunk skipped", good.len())), "{problem}");
    }

    #[test]
    fn over_the_value_budget_nothing_is_read_and_the_error_says_why() {
        let frame = read(vec![source("a", &[chunk(&seconds(1000, 50, 0), 1000)], false)], &Options { max_values: 20, ..options() }, HELD);
        assert!(frame.columns.is_empty() && frame.time.is_empty());
        assert!(frame.error.as_deref().unwrap().contains("above the limit of 20"));
    }

    #[test]
    fn the_catalog_of_a_read_is_what_catalog_says_of_the_same_files() {
        let files = || {
            vec![
                source("a", &[chunk(&seconds(1000, 4, 0), 1000), chunk(&[sample(5000, &[("c", 1)])], 5000)], false),
                source("b", &[chunk(&seconds(9000, 2, 0), 9000)], true),
            ]
        };
        // The range skips two chunks: the read peeks at them as `catalog` does.
        let read_one = read(files(), &Options { start: Some(9000), catalog: true, ..options() }, HELD).catalog.unwrap();
        let alone = catalog(&files(), "start");
        let described = |c: &Catalog| {
            c.chunks
                .iter()
                .map(|k| (k.source, k.offset, k.id_ms, k.samples, k.metrics, c.layouts[k.layout].0.clone(), k.first, k.last))
                .collect::<Vec<_>>()
        };
        assert_eq!(described(&read_one), described(&alone));
        assert_eq!(
            described(&alone).iter().map(|d| (d.6, d.7)).collect::<Vec<_>>(),
            [(Some(1000), Some(4000)), (Some(5000), Some(5000)), (Some(9000), Some(10000))]
        );
    }
}
