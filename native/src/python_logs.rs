//! Python bindings of the log line decoder (`logs`), registered into
//! `ftdc._native` by `python.rs`. A block is decoded with the GIL released; each
//! of its columns then reaches pyarrow as an Arrow array through the PyCapsule
//! interface (`LogColumn`), owning its own buffers: no copy, and a column
//! nobody keeps (or one the caller did not ask for) is freed at once rather
//! than held by the block.

use std::ffi::CStr;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::logs::{self, Column, Table};
use crate::python_arrow::{export_layout, Layout};

/// One column of a block's line range, as an Arrow array (`pyarrow.array(column)`): int64, bool or string_view.
#[pyclass(module = "ftdc._native", frozen)]
struct LogColumn {
    column: Arc<Column>,
    rows: usize,
}

/// One zero-filled buffer that every all-null column exports as its validity and values (a short slow `hello` line
/// leaves a third of the ~650 bytes a row of slow_ops lays out null): the largest any column has needed, grown as
/// needed, each size freed when the last array using it is.
static ZEROS: Mutex<Option<Arc<Vec<u8>>>> = Mutex::new(None);

fn zeros(size: usize) -> Arc<Vec<u8>> {
    let mut held = ZEROS.lock().unwrap_or_else(PoisonError::into_inner);
    match held.as_ref() {
        Some(zeros) if zeros.len() >= size => zeros.clone(),
        _ => {
            let grown = Arc::new(vec![0u8; size.max(2 * held.as_ref().map_or(1 << 16, |z| z.len()))]);
            *held = Some(grown.clone());
            grown
        }
    }
}

#[pymethods]
impl LogColumn {
    /// The Arrow PyCapsule interface: the column as it was decoded; a column whose every row is null as shared zeros.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the column is given as it is held; a consumer casts it if it wants another type
        let (format, value_bytes, validity): (&'static CStr, usize, &Option<Vec<u8>>) = match &*self.column {
            Column::Int { validity, .. } => (c"l", self.rows * 8, validity),
            Column::Bool { validity, .. } => (c"b", self.rows.div_ceil(8), validity),
            Column::Str { validity, .. } => (c"vu", self.rows * 16, validity),
        };
        if validity.as_ref().is_some_and(|bits| bits.iter().all(|&b| b == 0)) {
            let zeros = zeros(value_bytes.max(self.rows.div_ceil(8)));
            let at = zeros.as_ptr().cast();
            return export_layout(py, zeros, format, self.rows, Layout { validity: Some(at), values: at, data: Vec::new() });
        }
        let validity = validity.as_ref().map(|bits| bits.as_ptr().cast());
        let layout = match &*self.column {
            Column::Int { values, .. } => Layout { validity, values: values.as_ptr().cast(), data: Vec::new() },
            Column::Bool { bits, .. } => Layout { validity, values: bits.as_ptr().cast(), data: Vec::new() },
            Column::Str { views, buffers, .. } => {
                Layout { validity, values: views.as_ptr().cast(), data: buffers.iter().map(|b| (b.as_ptr().cast(), b.len())).collect() }
            }
        };
        export_layout(py, self.column.clone(), format, self.rows, layout)
    }
}

/// `(rows, [(name, column)])` per line range of `tables`, which are handed over: each column then lives as long as
/// an array made of it.
fn handed_over(tables: &Mutex<Vec<Table>>) -> Vec<(usize, Vec<(&'static str, LogColumn)>)> {
    let tables = std::mem::take(&mut *tables.lock().unwrap_or_else(PoisonError::into_inner));
    tables
        .into_iter()
        .map(|table| {
            let rows = table.rows;
            (rows, table.columns.into_iter().map(|(name, column)| (name, LogColumn { column: Arc::new(column), rows })).collect())
        })
        .collect()
}

#[pyclass(module = "ftdc._native", frozen)]
struct LogBlock {
    /// The slow-query lines' and the other lines' columns, until they are handed over.
    slow_ops: Mutex<Vec<Table>>,
    events: Mutex<Vec<Table>>,
    block: logs::Block,
    /// What a text block leaves to the caller (`TextBlock`); none for a JSON block.
    json_lines: Vec<(i64, usize, usize)>,
    years: Option<logs::Years>,
}

impl LogBlock {
    fn of(mut block: logs::Block, json_lines: Vec<(i64, usize, usize)>, years: Option<logs::Years>) -> Self {
        let slow_ops = Mutex::new(std::mem::take(&mut block.slow_ops));
        let events = Mutex::new(std::mem::take(&mut block.events));
        LogBlock { slow_ops, events, block, json_lines, years }
    }
}

#[pymethods]
impl LogBlock {
    /// `(rows, [(name, column)])` per line range of the slow-query lines, each column an Arrow array; handed over
    /// once (a second call finds none).
    fn slow_ops(&self) -> Vec<(usize, Vec<(&'static str, LogColumn)>)> {
        handed_over(&self.slow_ops)
    }

    /// `(rows, [(name, column)])` per line range of every other line, as `slow_ops`.
    fn events(&self) -> Vec<(usize, Vec<(&'static str, LogColumn)>)> {
        handed_over(&self.events)
    }

    /// Lines in the block, an unterminated last one included.
    #[getter]
    fn lines(&self) -> i64 {
        self.block.lines
    }

    /// `(line, reason, text)` of each line that could not be read (fully).
    #[getter]
    fn problems(&self) -> Vec<(i64, String, String)> {
        self.block.problems.iter().map(|p| (p.line, p.reason.clone(), p.text.clone())).collect()
    }

    /// `(line, start, end)` of each JSON line in a text block, for the JSON decoder.
    #[getter]
    fn json_lines(&self) -> Vec<(i64, usize, usize)> {
        self.json_lines.clone()
    }

    /// `(year, month)` of the last ctime stamp of a text block and those before it,
    /// for `decode_text_log_block` of the file's next block.
    #[getter]
    fn years(&self) -> Option<(Option<i64>, u32)> {
        self.years.map(|y| (y.year, y.month))
    }

    /// Problems past `MAX_LISTED_PROBLEMS`, counted and not listed.
    #[getter]
    fn unlisted(&self) -> u64 {
        self.block.unlisted
    }
}

/// Decodes the JSON log lines of data[:end], numbered from `first_line`;
/// `attr_ids` are the event ids whose attributes come back as JSON text.
/// `end` spares the caller a copy of the block when it reads past its last line.
#[pyfunction]
fn decode_log_block(py: Python<'_>, data: &[u8], end: usize, first_line: i64, attr_ids: Vec<i64>) -> LogBlock {
    let data = &data[..end.min(data.len())];
    LogBlock::of(py.detach(|| logs::decode_block(data, first_line, &attr_ids)), Vec::new(), None)
}

/// Decodes the legacy text log lines of data[:end], numbered from `first_line`.
/// `year_hint` is the file's modification year and `years` what the file's block
/// before left (`LogBlock.years`), for the years of ctime stamps.
#[pyfunction]
#[pyo3(signature = (data, end, first_line, year_hint, years=None))]
fn decode_text_log_block(
    py: Python<'_>,
    data: &[u8],
    end: usize,
    first_line: i64,
    year_hint: i64,
    years: Option<(Option<i64>, u32)>,
) -> LogBlock {
    let data = &data[..end.min(data.len())];
    let years = match years {
        Some((year, month)) => logs::Years { hint: year_hint, year, month },
        None => logs::Years::new(year_hint),
    };
    let text = py.detach(|| logs::decode_text_block(data, first_line, years));
    LogBlock::of(text.block, text.json_lines, Some(text.years))
}

/// The query shape of a command given as JSON text (and of the command a
/// getMore continues); None when it has no query or is not JSON.
#[pyfunction]
#[pyo3(signature = (command_json, originating_json=None))]
fn query_shape(command_json: Option<&str>, originating_json: Option<&str>) -> Option<String> {
    logs::query_shape(command_json?, originating_json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_LISTED_PROBLEMS", logs::MAX_LISTED_PROBLEMS)?;
    m.add_class::<LogBlock>()?;
    m.add_class::<LogColumn>()?;
    m.add_function(wrap_pyfunction!(decode_log_block, m)?)?;
    m.add_function(wrap_pyfunction!(decode_text_log_block, m)?)?;
    m.add_function(wrap_pyfunction!(query_shape, m)?)?;
    Ok(())
}
