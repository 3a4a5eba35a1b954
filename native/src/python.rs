//! The `ftdc._native` Python module. Decoding runs with the GIL released;
//! column buffers stay owned by the decoded frame and cross to pyarrow as
//! Arrow arrays by the PyCapsule interface (zero copy), each keeping the frame
//! alive until its consumer releases it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyIterator, PyList};

use crate::catalog::{catalog as build_catalog, union, Catalog, Names};
use crate::chunk::{BYTES_INFLATED, CHUNKS_INFLATED};
use crate::decode::kept::{Kept, Rows, Shown};
use crate::decode::{self, Options};
use crate::extremes;
use crate::file::{FileProblem, Source};
use crate::levels::Levels;
use crate::metrics;
use crate::python_arrow::{export, held, HeldArray};
use crate::python_bytes::{le_bytes, le_values};
use crate::rolling;
use crate::select::Selection;

/// Reads the files; a file that cannot be read becomes a problem, not an error.
fn load(paths: Vec<String>, interim: Vec<bool>, problems: &mut Vec<FileProblem>) -> Vec<Source> {
    paths
        .into_iter()
        .zip(interim)
        .filter_map(|(name, interim)| match std::fs::read(&name) {
            Ok(bytes) => Some(Source { name, bytes, interim }),
            Err(e) => {
                problems.push(FileProblem::unreadable(&name, &e));
                None
            }
        })
        .collect()
}

/// The files, each opened to be sure it can be read, its bytes left to be read when the decoder comes to it
/// (`decode::read`'s `fill`), and their size in all; a file that cannot be opened becomes a problem, not an error.
fn opened(paths: Vec<String>, interim: Vec<bool>, problems: &mut Vec<FileProblem>) -> (Vec<Source>, u64) {
    let mut bytes = 0;
    let sources = paths
        .into_iter()
        .zip(interim)
        .filter_map(|(name, interim)| match std::fs::File::open(&name).and_then(|f| f.metadata()) {
            Ok(metadata) => {
                bytes += metadata.len();
                Some(Source { name, bytes: Vec::new(), interim })
            }
            Err(e) => {
                problems.push(FileProblem::unreadable(&name, &e));
                None
            }
        })
        .collect();
    (sources, bytes)
}

#[pyclass(module = "ftdc._native")]
struct DecodedFrame {
    frame: Arc<decode::Frame>,
    /// One per column, made with the frame: every array exported of a column holds its region, so its memory can go
    /// back once the last of them and this frame are gone (`release_dropped_columns`), while the arena stays for the
    /// columns still held.
    regions: Vec<Arc<ColumnRegion>>,
    /// With `read(..., keep=True)`, until `take_kept` hands it over: held apart from the frame, whose buffers polars
    /// may hold long after.
    kept: Option<Kept>,
}

/// The distinct chunk structures of a catalog, each `(names, kinds)` (kinds one byte each: 0 int64, 1 bool, 2 Date),
/// in first-seen order: held here, and made Python strings only for a layout asked for, as `union` makes only
/// the node's distinct names.
#[pyclass(module = "ftdc._native", frozen, sequence)]
struct Layouts(Vec<Names>);

/// A layout as Python reads it: its names, and its kinds as bytes.
type LayoutTuple<'py> = (Vec<String>, Bound<'py, PyBytes>);

fn layout_tuple<'py>(py: Python<'py>, layout: &Names) -> LayoutTuple<'py> {
    (layout.0.clone(), PyBytes::new(py, &layout.1))
}

#[pymethods]
impl Layouts {
    #[new]
    fn new(layouts: Vec<(Vec<String>, Vec<u8>)>) -> Self {
        Layouts(layouts.into_iter().map(Arc::new).collect())
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<LayoutTuple<'py>> {
        let at = if index < 0 { index + self.0.len() as isize } else { index };
        let layout =
            usize::try_from(at).ok().and_then(|at| self.0.get(at)).ok_or_else(|| PyIndexError::new_err("layout index out of range"))?;
        Ok(layout_tuple(py, layout))
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.0 == other.0
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        PyList::new(py, self.0.iter().map(|layout| layout_tuple(py, layout)))?.try_iter()
    }

    /// `(names, kinds)` of the columns a read of chunks of the layouts `ids` returns (`catalog::union`): `time_column`
    /// first, kinds as here with -1 where the layouts disagree.
    fn union(&self, ids: Vec<usize>, time_column: &str) -> PyResult<(Vec<String>, Vec<i8>)> {
        if let Some(id) = ids.iter().find(|&&id| id >= self.0.len()) {
            return Err(PyIndexError::new_err(format!("layout {id} of {}", self.0.len())));
        }
        let (names, kinds) = union(&self.0, &ids, time_column);
        Ok((names.into_iter().map(str::to_owned).collect(), kinds))
    }
}

/// Every metric of a read (`read(..., keep=True)`) as the delta bytes its walk found, to reduce on an axis.
#[pyclass(module = "ftdc._native", frozen)]
struct KeptValues {
    kept: Kept,
}

#[pymethods]
impl KeptValues {
    /// The read's rows (those of its frame, before any is dropped).
    #[getter]
    fn rows(&self) -> usize {
        self.kept.rows()
    }

    /// `(name, kind)` of each metric kept, in first-seen order (the frame's kinds: 0 int64, 1 bool, 2 Date).
    fn names(&self) -> Vec<(String, u8)> {
        let (names, kinds) = self.kept.names();
        names.iter().cloned().zip(kinds.iter().copied()).collect()
    }

    /// Each of `metrics` (`(index in names(), shown)`: True its per-second rates, False its values, None its rates
    /// if it rose and never fell over an interval that can be rated) at its least and greatest in each of `columns`
    /// columns (`kept::Kept::reduce`), the metrics in parallel. Per row of the read: `column_of` its column
    /// (little-endian i32, negative: not drawn), `valid` whether its interval can be rated (a byte, 0 or 1),
    /// `interval_s` its length (little-endian f64). Returns, for each metric, its levels (`levels`: `(low, high, levels)`,
    /// None where it holds no value) and whether they are its rates.
    fn reduce<'py>(
        &self,
        py: Python<'py>,
        metrics: Vec<(usize, Option<bool>)>,
        columns: usize,
        column_of: PyBackedBytes,
        valid: PyBackedBytes,
        interval_s: PyBackedBytes,
    ) -> PyResult<Vec<(Option<LevelsTuple<'py>>, bool)>> {
        let rows = self.kept.rows();
        if column_of.len() != 4 * rows || valid.len() != rows || interval_s.len() != 8 * rows {
            return Err(PyValueError::new_err("column_of, valid and interval_s must give each row of the read"));
        }
        let column_of = le_values(&column_of, i32::from_le_bytes);
        if column_of.iter().any(|&c| usize::try_from(c).is_ok_and(|c| c >= columns)) {
            return Err(PyValueError::new_err("a row's column is not on the axis"));
        }
        let valid: Vec<bool> = valid.iter().map(|&b| b != 0).collect();
        let interval_s = le_values(&interval_s, f64::from_le_bytes);
        let known = self.kept.names().0.len();
        if metrics.iter().any(|&(m, _)| m >= known) {
            return Err(PyValueError::new_err("no such kept metric"));
        }
        let shown: Vec<(usize, Shown)> = metrics
            .into_iter()
            .map(|(m, rates)| (m, rates.map_or(Shown::RatesIfCounting, |rates| if rates { Shown::Rates } else { Shown::Values })))
            .collect();
        let on = Rows { columns, column_of: &column_of, valid: &valid, interval_s: &interval_s };
        let reduced: Vec<(Option<Levels>, bool)> = py.detach(|| self.kept.reduce_then(&shown, &on, |r| (r.levels(), r.rated)));
        reduced.into_iter().map(|(levels, rated)| Ok((levels.map(|l| levels_tuple(py, l)).transpose()?, rated))).collect()
    }
}

/// A series' levels as Python receives them: `(low, high, levels)`, the levels little-endian u16.
type LevelsTuple<'py> = (f64, f64, Bound<'py, PyBytes>);

fn levels_tuple(py: Python<'_>, found: Levels) -> PyResult<LevelsTuple<'_>> {
    Ok((found.low, found.high, le_bytes(py, found.levels.len(), found.levels.iter().map(|l| l.to_le_bytes()))?))
}

/// `series` series of `pairs` (little-endian f64, each series' columns in turn, each column's least and greatest; NaN:
/// none) at the explorer's levels (`levels::levels`): `(low, high, levels)` each, None for one that holds no value.
#[pyfunction]
fn levels(py: Python<'_>, pairs: PyBackedBytes, series: usize) -> PyResult<Vec<Option<LevelsTuple<'_>>>> {
    if series == 0 || !pairs.len().is_multiple_of(8 * series) {
        return Err(PyValueError::new_err("pairs must hold as many little-endian f64 for each of the series"));
    }
    let values = le_values(&pairs, f64::from_le_bytes);
    let each = values.len() / series;
    if each == 0 {
        return Ok((0..series).map(|_| None).collect()); // no column: no series holds a value
    }
    let found: Vec<Option<Levels>> = py.detach(|| {
        use rayon::prelude::*;
        values.par_chunks(each).map(|one| crate::levels::levels(one.iter().copied())).collect()
    });
    found.into_iter().map(|l| l.map(|l| levels_tuple(py, l)).transpose()).collect()
}

/// One column's values in its frame's arena. The decoder puts every column in one allocation (`arena`), so a frame
/// kept whole while any of its columns lived: a week's analysis held the 376 MB of its read until its last recorded
/// column went, or copied those it kept. When a column's last holder goes, its pages can go back to the kernel
/// (`release_dropped_columns`) while the frame's other columns are held.
struct ColumnRegion {
    frame: Arc<decode::Frame>,
    column: usize,
}

/// The stored columns whose last holder went, of frames that may still be held: their pages go back when the process
/// asks (`release_dropped_columns`), not as each goes. A frame dropped whole keeps its pages for the next read to
/// reuse (`arena`): a week's columns given back one by one, then faulted in again, took a read about 1.1x the time.
static DROPPED: Mutex<Vec<(Weak<decode::Frame>, usize)>> = Mutex::new(Vec::new());

/// Entries of frames gone are pruned past this many (a process that never asks keeps this few).
const DROPPED_KEPT: usize = 1 << 12;

impl Drop for ColumnRegion {
    fn drop(&mut self) {
        if let Some(offset) = self.frame.columns[self.column].offset {
            let mut dropped = DROPPED.lock().unwrap();
            if dropped.len() >= DROPPED_KEPT {
                dropped.retain(|(frame, _)| frame.strong_count() > 0);
            }
            dropped.push((Arc::downgrade(&self.frame), offset));
        }
    }
}

/// Gives back the pages of every column dropped (`DROPPED`) of a frame still held.
#[pyfunction]
fn release_dropped_columns() {
    let dropped = std::mem::take(&mut *DROPPED.lock().unwrap());
    for (frame, offset) in dropped {
        if let Some(frame) = frame.upgrade() {
            // Safety: the column's values are read only through arrays that hold its region, and through the
            // DecodedFrame, which holds it too: both are gone.
            unsafe { frame.values.discard(offset, frame.time.len()) }
        }
    }
}

/// One column of a decoded frame as an Arrow array (`pyarrow.array(column)`): its time column, or a metric's.
#[pyclass(module = "ftdc._native", frozen)]
struct FrameColumn(ColumnOf);

enum ColumnOf {
    Time(Arc<decode::Frame>),
    Metric(Arc<ColumnRegion>),
}

#[pymethods]
impl FrameColumn {
    /// The Arrow PyCapsule interface: Int64 values (booleans as 0 and 1), times as UTC milliseconds.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the column is given as it is held; a consumer casts it if it wants another type
        match &self.0 {
            ColumnOf::Time(frame) => export(py, frame.clone(), c"tsm:UTC", frame.time.len(), frame.time.as_ptr(), None),
            ColumnOf::Metric(region) => {
                let (frame, c) = (&region.frame, &region.frame.columns[region.column]);
                let values = match c.offset {
                    Some(offset) => frame.values.as_slice()[offset..].as_ptr(),
                    None => frame.zeros.as_ptr(),
                };
                let format = if c.kind == metrics::KIND_DATE { c"tsm:UTC" } else { c"l" };
                export(py, region.clone(), format, frame.time.len(), values, c.validity.as_ref().map(|v| v.as_ptr()))
            }
        }
    }
}

#[pymethods]
impl DecodedFrame {
    #[getter]
    fn rows(&self) -> usize {
        self.frame.time.len()
    }

    /// Each problem as `(file, offset or None, kind, message)` (ftdc.errors.Problem).
    #[getter]
    fn problems(&self) -> Vec<ProblemTuple<'_>> {
        self.frame.problems.iter().map(problem_tuple).collect()
    }

    #[getter]
    fn documents(&self) -> usize {
        self.frame.documents
    }

    /// Why nothing was read (the value budget was exceeded), else None.
    #[getter]
    fn error(&self) -> Option<String> {
        self.frame.error.clone()
    }

    #[getter]
    fn chunks_without_time(&self) -> usize {
        self.frame.chunks_without_time
    }

    /// With `read(..., keep=True)`: every metric kept for `KeptValues.reduce`, handed over once; else None.
    fn take_kept(&mut self) -> Option<KeptValues> {
        self.kept.take().map(|kept| KeptValues { kept })
    }

    /// With `read(..., catalog=True)`: what `catalog` would return for these files
    /// (its problems are this frame's), else None.
    fn catalog<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.frame.catalog.as_ref().map(|c| catalog_dict(py, c, &self.frame.problems)).transpose()
    }

    /// The time column (ms since the epoch, UTC) as an Arrow array.
    fn time(&self) -> FrameColumn {
        FrameColumn(ColumnOf::Time(self.frame.clone()))
    }

    /// `(name, kind, column)` per column, the column an Arrow array; kind 0 = int64, 1 = bool, 2 = Date.
    fn columns(&self) -> Vec<(String, u8, FrameColumn)> {
        self.frame
            .columns
            .iter()
            .zip(&self.regions)
            .map(|(c, r)| (c.name.clone(), c.kind, FrameColumn(ColumnOf::Metric(r.clone()))))
            .collect()
    }
}

/// Decodes the selected metrics of `paths` into columns sorted by time; with
/// `catalog`, also says what the files hold (`DecodedFrame.catalog`) from the same pass; with `keep`, keeps every
/// metric's delta bytes to reduce after it (`DecodedFrame.take_kept`). `threads`: the workers of a pool of its own
/// (a decode started while Python imports on the other core: `ftdc/decoding.py`); by default the shared pool's.
#[pyfunction]
#[pyo3(signature = (paths, interim, metrics=None, start=None, end=None, time_field="start".to_string(), max_values=None, catalog=false, keep=false, threads=None))]
#[allow(clippy::too_many_arguments)]
fn read(
    py: Python<'_>,
    paths: Vec<String>,
    interim: Vec<bool>,
    metrics: Option<Vec<String>>,
    start: Option<i64>,
    end: Option<i64>,
    time_field: String,
    max_values: Option<u64>,
    catalog: bool,
    keep: bool,
    threads: Option<usize>,
) -> PyResult<DecodedFrame> {
    let selection = match metrics {
        None => Selection::all(),
        Some(m) => Selection::new(&m).map_err(PyValueError::new_err)?,
    };
    let decode = move || {
        let mut problems = Vec::new();
        let (sources, bytes) = opened(paths, interim, &mut problems);
        let max_values = max_values.unwrap_or_else(|| decode::default_max_values(bytes));
        let opts = Options { selection, start, end, time_field, max_values, catalog, keep };
        let mut frame = decode::read(sources, &opts, &|source: &Source| std::fs::read(&source.name));
        problems.append(&mut frame.problems);
        frame.problems = problems;
        frame
    };
    // A pool that cannot be made (no thread to be had) leaves the decode to the shared one.
    let pool = threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().ok());
    let mut frame = py.detach(|| match pool {
        Some(pool) => pool.install(decode),
        None => decode(),
    });
    let kept = frame.kept.take();
    let frame = Arc::new(frame);
    let regions = (0..frame.columns.len()).map(|column| Arc::new(ColumnRegion { frame: frame.clone(), column })).collect();
    Ok(DecodedFrame { frame, regions, kept })
}

/// What the files hold: documents, chunks and metric names, no values.
#[pyfunction]
#[pyo3(signature = (paths, interim, time_field="start".to_string()))]
fn catalog<'py>(py: Python<'py>, paths: Vec<String>, interim: Vec<bool>, time_field: String) -> PyResult<Bound<'py, PyDict>> {
    let (cat, mut problems) = py.detach(|| {
        let mut problems = Vec::new();
        let sources = load(paths, interim, &mut problems);
        (build_catalog(&sources, &time_field), problems)
    });
    problems.extend(cat.problems.iter().cloned());
    catalog_dict(py, &cat, &problems)
}

/// A problem as Python receives it: file, offset (None: the whole file), kind (`ProblemKind::name`), message.
type ProblemTuple<'a> = (&'a str, Option<usize>, &'static str, &'a str);

fn problem_tuple(p: &FileProblem) -> ProblemTuple<'_> {
    (&p.file, p.offset, p.kind.name(), &p.message)
}

/// `{"documents", "chunks", "problems"}` as lists of tuples (ftdc/catalog.py's schemas), and `"layouts"` as `Layouts`.
fn catalog_dict<'py>(py: Python<'py>, cat: &Catalog, problems: &[FileProblem]) -> PyResult<Bound<'py, PyDict>> {
    let documents = PyList::empty(py);
    for ((name, docs), bodies) in cat.sources.iter().zip(&cat.documents).zip(&cat.bodies) {
        for (d, body) in docs.iter().zip(bodies) {
            let body = body.as_ref().map(|b| PyBytes::new(py, b));
            documents.append((name.as_str(), d.offset, d.doc_type, d.id_ms, d.count, body))?;
        }
    }
    let chunks = PyList::empty(py);
    for c in &cat.chunks {
        chunks.append((cat.sources[c.source].as_str(), c.offset, c.id_ms, c.samples, c.metrics, c.layout, c.first, c.last))?;
    }
    let layouts = Layouts(cat.layouts.clone());
    let out = PyDict::new(py);
    out.set_item("documents", documents)?;
    out.set_item("chunks", chunks)?;
    out.set_item("layouts", layouts)?;
    out.set_item("problems", problems.iter().map(problem_tuple).collect::<Vec<_>>())?;
    Ok(out)
}

/// The names among `names` that `patterns` select, with the decoder's rules.
#[pyfunction]
fn select_names(patterns: Vec<String>, names: Vec<String>) -> PyResult<Vec<String>> {
    let selection = Selection::new(&patterns).map_err(PyValueError::new_err)?;
    Ok(names.into_iter().filter(|n| selection.matches(n)).collect())
}

/// Chunks and bytes inflated so far by this process (for pushdown checks), and bytes of fresh mappings made for
/// decoded columns (`arena::BYTES_MAPPED`: what reads did not find kept).
#[pyfunction]
fn counters() -> (u64, u64, u64) {
    (CHUNKS_INFLATED.load(Ordering::Relaxed), BYTES_INFLATED.load(Ordering::Relaxed), crate::arena::BYTES_MAPPED.load(Ordering::Relaxed))
}

/// Unmaps the memory the decoder keeps for its next read (`arena::release_spare`), and gives back the columns dropped
/// from reads still held (`release_dropped_columns`).
#[pyfunction]
fn release_spare() {
    release_dropped_columns();
    crate::arena::release_spare();
}

/// Quantiles of the time windows [t - window, t) before each row (`rolling.rs`), for several columns at once (in
/// parallel): `times` an int64 column without missing values, each of `columns` an int64 or float64 one of as many
/// rows (a missing value does not count), each as its Arrow chunks (`ArrowChunk`, read in place as `run_extremes`
/// reads them), `quantiles` as (q, "linear" | "nearest"). Returns per column None, the count in each row's window
/// (uint32 bytes), each quantile (float64 bytes, NaN where the window is empty) and each quantile of the whole column
/// (NaN when it has no value). With `spike_rule` (factor, iqrs, resolution, min_count), `quantiles` are the median,
/// q1 and q3, and only the rows where the row's own value can be a spike by them are listed (`rolling::spike_quantiles`):
/// their numbers first (uint64 bytes, ascending), then their counts and quantiles.
///
/// Each chunk is an Arrow array handed over by the PyCapsule interface (`python_arrow`), read where it lies.
#[pyfunction]
#[pyo3(signature = (times, columns, window, quantiles, spike_rule=None))]
#[allow(clippy::type_complexity)]
fn rolling_quantiles<'py>(
    py: Python<'py>,
    times: Vec<Bound<'py, PyAny>>,
    columns: Vec<Vec<Bound<'py, PyAny>>>,
    window: i64,
    quantiles: Vec<(f64, String)>,
    spike_rule: Option<(f64, f64, f64, u32)>,
) -> PyResult<Vec<(Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>, Vec<Bound<'py, PyBytes>>, Vec<f64>)>> {
    let times = held_all(&times)?;
    let times =
        extremes::integers(&chunks_of(&times)).ok_or_else(|| PyValueError::new_err("times must be int64 without missing values"))?;
    let n = times.len();
    let columns: Vec<Vec<HeldArray<'py>>> = columns.iter().map(|chunks| held_all(chunks)).collect::<PyResult<_>>()?;
    let parsed: Vec<(std::borrow::Cow<'_, [f64]>, Vec<bool>)> = columns.iter().map(|held| extremes::floats(&chunks_of(held))).collect();
    if parsed.iter().any(|(values, _)| values.len() != n) {
        return Err(PyValueError::new_err("times and each column must hold the same number of rows"));
    }
    // A window shorter than one tick holds no other row ([t, t) once cut to whole ticks): empty, as polars gives it.
    if window < 0 {
        return Err(PyValueError::new_err("the window must not be negative"));
    }
    let mut methods = Vec::with_capacity(quantiles.len());
    for (q, method) in &quantiles {
        let method = match method.as_str() {
            "linear" => rolling::Method::Linear,
            "nearest" => rolling::Method::Nearest,
            other => return Err(PyValueError::new_err(format!("unknown quantile method {other:?}"))),
        };
        if !(0.0..=1.0).contains(q) {
            return Err(PyValueError::new_err(format!("quantile {q} is not within [0, 1]")));
        }
        methods.push((*q, method));
    }
    let spikes: Option<(rolling::SpikeRule, [(f64, rolling::Method); 3])> = spike_rule
        .map(|(factor, iqrs, resolution, min_count)| {
            let three = methods.clone().try_into();
            let three = three.map_err(|_| PyValueError::new_err("a spike rule takes three quantiles: the median, q1 and q3"))?;
            Ok::<_, PyErr>((rolling::SpikeRule { factor, iqrs, resolution, min_count }, three))
        })
        .transpose()?;
    if times.windows(2).any(|w| w[1] < w[0]) {
        return Err(PyValueError::new_err("times must be in ascending order"));
    }
    let (windows, overall) = py.detach(|| {
        use rayon::prelude::*;
        // Each column's rows in ranges, so the two cores share three columns evenly.
        let step = n.div_ceil(16).max(4096);
        let ranges: Vec<(usize, std::ops::Range<usize>)> =
            (0..parsed.len()).flat_map(|c| (0..n).step_by(step).map(move |a| (c, a..(a + step).min(n)))).collect();
        let windows: Vec<(usize, rolling::Rolling)> = ranges
            .into_par_iter()
            .map(|(c, rows)| {
                let (values, valid) = (&parsed[c].0, &parsed[c].1);
                let part = match &spikes {
                    Some((rule, three)) => rolling::spike_quantiles(&times, values, valid, window, three, *rule, rows),
                    None => rolling::rolling_quantiles(&times, values, valid, window, &methods, rows),
                };
                (c, part)
            })
            .collect();
        let overall: Vec<Vec<f64>> = parsed.par_iter().map(|(values, valid)| rolling::overall(values, valid, &methods)).collect();
        (windows, overall)
    });
    overall
        .into_iter()
        .enumerate()
        .map(|(c, overall)| {
            let parts: Vec<&rolling::Rolling> = windows.iter().filter(|(of, _)| *of == c).map(|(_, part)| part).collect();
            let listed = parts.iter().map(|part| part.count.len()).sum();
            let rows = match spikes {
                Some(_) => Some(le_bytes(py, listed, parts.iter().flat_map(|part| part.rows.iter().flatten().map(|r| r.to_le_bytes())))?),
                None => None,
            };
            let count = le_bytes(py, listed, parts.iter().flat_map(|part| part.count.iter().map(|c| c.to_le_bytes())))?;
            let quantiles = (0..methods.len())
                .map(|k| le_bytes(py, listed, parts.iter().flat_map(|part| part.windows[k].iter().map(|v| v.to_le_bytes()))))
                .collect::<PyResult<_>>()?;
            Ok((rows, count, quantiles, overall))
        })
        .collect()
}

fn held_all<'py>(arrays: &[Bound<'py, PyAny>]) -> PyResult<Vec<HeldArray<'py>>> {
    arrays.iter().map(held).collect()
}

fn chunks_of<'a>(held: &'a [HeldArray<'_>]) -> Vec<extremes::Chunk<'a>> {
    held.iter().map(HeldArray::chunk).collect()
}

/// The least and greatest finite value of each run of rows of each column (`extremes::run_extremes`), the columns
/// in parallel. Each of `columns` is its chunks in order, each an Int64 or Float64 Arrow array handed over by the
/// PyCapsule interface (`python_arrow`), read where it lies; a column's chunks hold `rows` rows. `starts` are the runs' first rows (little-endian u64, ascending
/// from 0). Returns the lows and the highs, each run's row of columns in turn (little-endian f64).
#[pyfunction]
fn run_extremes<'py>(
    py: Python<'py>,
    columns: Vec<Vec<Bound<'py, PyAny>>>,
    rows: usize,
    starts: PyBackedBytes,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if !starts.len().is_multiple_of(8) {
        return Err(PyValueError::new_err("starts must be little-endian u64"));
    }
    let starts: Vec<usize> = le_values(&starts, u64::from_le_bytes).into_iter().map(|s| s as usize).collect();
    if starts.first().is_some_and(|&s| s != 0) || starts.windows(2).any(|w| w[1] <= w[0]) || starts.last().is_some_and(|&s| s >= rows) {
        return Err(PyValueError::new_err("starts must ascend from 0 and stay below rows"));
    }
    let held: Vec<Vec<HeldArray<'py>>> = columns.iter().map(|chunks| held_all(chunks)).collect::<PyResult<_>>()?;
    if held.iter().any(|chunks| chunks.iter().map(HeldArray::len).sum::<usize>() != rows) {
        return Err(PyValueError::new_err("each column's chunks must hold rows rows"));
    }
    let columns: Vec<Vec<extremes::Chunk<'_>>> = held.iter().map(|chunks| chunks_of(chunks)).collect();
    let reduced: Vec<(Vec<f64>, Vec<f64>)> = py.detach(|| {
        use rayon::prelude::*;
        columns.par_iter().map(|chunks| extremes::run_extremes(chunks, &starts)).collect()
    });
    let (lows, highs): (Vec<Vec<f64>>, Vec<Vec<f64>>) = reduced.into_iter().unzip();
    let size = starts.len() * lows.len();
    let matrix =
        |columns: &[Vec<f64>]| le_bytes(py, size, (0..starts.len()).flat_map(|run| columns.iter().map(move |c| c[run].to_le_bytes())));
    Ok((matrix(&lows)?, matrix(&highs)?))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DecodedFrame>()?;
    m.add_class::<FrameColumn>()?;
    m.add_class::<KeptValues>()?;
    m.add_class::<Layouts>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_function(wrap_pyfunction!(counters, m)?)?;
    m.add_function(wrap_pyfunction!(release_spare, m)?)?;
    m.add_function(wrap_pyfunction!(release_dropped_columns, m)?)?;
    crate::python_encode::register(m)?;
    crate::python_logs::register(m)?;
    crate::python_parquet::register(m)?;
    m.add_function(wrap_pyfunction!(select_names, m)?)?;
    m.add_function(wrap_pyfunction!(rolling_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(run_extremes, m)?)?;
    m.add_function(wrap_pyfunction!(levels, m)?)?;
    Ok(())
}
