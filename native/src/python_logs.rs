//! Python bindings of the log line decoder (`logs`), registered into
//! `ftdc._native` by `python.rs`. A block is decoded with the GIL released;
//! its columns stay owned by a `LogBlock` and reach pyarrow by address (zero
//! copy), with the block object kept alive as the buffers' base.

use pyo3::prelude::*;

use crate::logs::{self, Column, Table};

/// Column kinds, exported to Python under these names: int64 (values:
/// int64s), bool (values: bits), string_view (values: 16-byte views, data:
/// `(address, bytes)` of each data buffer).
const COLUMN_INT64: u8 = 0;
const COLUMN_BOOL: u8 = 1;
const COLUMN_STRING_VIEW: u8 = 2;

/// `(name, kind, validity, values, data)` per column; validity is a bitmap
/// address or None when every row is valid.
type ColumnBuffers = (&'static str, u8, Option<usize>, usize, Vec<(usize, usize)>);

fn buffers(tables: &[Table]) -> Vec<(usize, Vec<ColumnBuffers>)> {
    tables.iter().map(table_buffers).collect()
}

fn table_buffers(table: &Table) -> (usize, Vec<ColumnBuffers>) {
    let address = |v: &Option<Vec<u8>>| v.as_ref().map(|b| b.as_ptr() as usize);
    let columns = table
        .columns
        .iter()
        .map(|(name, column)| match column {
            Column::Int { values, validity } => (*name, COLUMN_INT64, address(validity), values.as_ptr() as usize, Vec::new()),
            Column::Bool { bits, validity } => (*name, COLUMN_BOOL, address(validity), bits.as_ptr() as usize, Vec::new()),
            Column::Str { views, buffers, validity } => {
                let data = buffers.iter().map(|b| (b.as_ptr() as usize, b.len())).collect();
                (*name, COLUMN_STRING_VIEW, address(validity), views.as_ptr() as usize, data)
            }
        })
        .collect();
    (table.rows, columns)
}

#[pyclass(module = "ftdc._native", frozen)]
struct LogBlock {
    block: logs::Block,
    /// What a text block leaves to the caller (`TextBlock`); none for a JSON block.
    json_lines: Vec<(i64, usize, usize)>,
    years: Option<logs::Years>,
}

#[pymethods]
impl LogBlock {
    /// `(rows, column buffers)` per chunk of the slow-query lines.
    fn slow_ops(&self) -> Vec<(usize, Vec<ColumnBuffers>)> {
        buffers(&self.block.slow_ops)
    }

    /// `(rows, column buffers)` per chunk of every other line.
    fn events(&self) -> Vec<(usize, Vec<ColumnBuffers>)> {
        buffers(&self.block.events)
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
    LogBlock { block: py.detach(|| logs::decode_block(data, first_line, &attr_ids)), json_lines: Vec::new(), years: None }
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
    LogBlock { block: text.block, json_lines: text.json_lines, years: Some(text.years) }
}

/// The query shape of a command given as JSON text (and of the command a
/// getMore continues); None when it has no query or is not JSON.
#[pyfunction]
#[pyo3(signature = (command_json, originating_json=None))]
fn query_shape(command_json: Option<&str>, originating_json: Option<&str>) -> Option<String> {
    logs::query_shape(command_json?, originating_json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("COLUMN_INT64", COLUMN_INT64)?;
    m.add("COLUMN_BOOL", COLUMN_BOOL)?;
    m.add("COLUMN_STRING_VIEW", COLUMN_STRING_VIEW)?;
    m.add("MAX_LISTED_PROBLEMS", logs::MAX_LISTED_PROBLEMS)?;
    m.add_class::<LogBlock>()?;
    m.add_function(wrap_pyfunction!(decode_log_block, m)?)?;
    m.add_function(wrap_pyfunction!(decode_text_log_block, m)?)?;
    m.add_function(wrap_pyfunction!(query_shape, m)?)?;
    Ok(())
}
