//! `ParquetWriter`: a dataset file written by the core (`parquet_write`) from the decoder's columns (or any Arrow
//! arrays), handed over by the PyCapsule interface and read where they lie, encoded without the GIL and in parallel.

use std::ffi::c_void;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::parquet_write::{encode_chunk, Column, Field, FileWriter, Kind, Values};
use crate::python_arrow::{capsules, Capsules};

fn refused(name: &str, why: &str) -> PyErr {
    PyValueError::new_err(format!("{name}: not a column the Parquet writer takes: {why}"))
}

/// Rows `rows` of a held array as `field`'s column, checked against its kind: integers ("l") or times ("tsm:UTC",
/// read as their milliseconds) for an int64 field, times for a timestamp one (milliseconds scaled to microseconds),
/// integers (0 and 1) or bits ("b") for a boolean one.
fn column<'a>(held: &'a Capsules<'_>, field: &Field, rows: std::ops::Range<usize>) -> PyResult<Column<'a>> {
    let name = &field.name;
    // SAFETY: the array is live while `held` holds its capsules, and not released (see `python_arrow::capsules`).
    let a = unsafe { &*held.array };
    let (Ok(length), Ok(offset)) = (usize::try_from(a.length), usize::try_from(a.offset)) else {
        return Err(refused(name, "a negative length or offset"));
    };
    if a.n_buffers != 2 || a.buffers.is_null() || a.n_children != 0 || rows.end > length {
        return Err(refused(name, "not a primitive array holding the rows written"));
    }
    let start = offset + rows.start;
    let n = rows.len();
    // SAFETY: a primitive array has two buffer pointers (checked above): validity (may be null), then values.
    let (validity, data) = unsafe { (*a.buffers, *a.buffers.add(1)) };
    if length > 0 && data.is_null() {
        return Err(refused(name, "no values buffer"));
    }
    let bitmap = |pointer: *const c_void| {
        // SAFETY: a bitmap of a primitive array holds `offset + length` bits (C Data Interface), and `start + n` is at
        // most that (checked above); the capsules `held` holds keep it alive for `'a`.
        unsafe { std::slice::from_raw_parts(pointer.cast::<u8>(), (start + n).div_ceil(8)) }
    };
    let validity = (a.null_count != 0 && !validity.is_null() && n > 0).then(|| (bitmap(validity), start));
    let integers = || -> PyResult<&'a [i64]> {
        if n == 0 {
            return Ok(&[]);
        }
        if !(data as usize).is_multiple_of(std::mem::align_of::<i64>()) {
            return Err(refused(name, "values not aligned"));
        }
        // SAFETY: an int64 or timestamp array's values buffer holds `offset + length` aligned (checked) i64s, of which
        // rows `start..start + n` lie within (checked above); the capsules `held` holds keep it alive for `'a`.
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<i64>().add(start), n) })
    };
    let values = match (field.kind, held.format.as_slice()) {
        (Kind::Int64, b"l" | b"tsm:UTC") | (Kind::Timestamp, b"tsu:UTC") => Values::Int64 { values: integers()?, scale: 1 },
        (Kind::Timestamp, b"tsm:UTC") => Values::Int64 { values: integers()?, scale: 1000 },
        (Kind::Boolean, b"l") => Values::Flags(integers()?),
        (Kind::Boolean, b"b") => Values::Boolean { bits: if n > 0 { bitmap(data) } else { &[] }, offset: start },
        (kind, other) => return Err(refused(name, &format!("Arrow format {:?} is not {kind:?}", String::from_utf8_lossy(other)))),
    };
    Ok(Column { values, validity })
}

/// A Parquet file of the dataset being written: `write` appends frames (a row group per record batch), `close`
/// writes its footer. Dropped unclosed, the file is left without one (the caller removes it).
#[pyclass(module = "ftdc._native")]
pub struct ParquetWriter {
    inner: Option<FileWriter<BufWriter<File>>>,
    path: PathBuf,
}

/// An error of the file's writes as Python's OSError says it: its errno (so a full disk is told as one), the
/// system's words for it and the file's path.
fn io_error(path: &std::path::Path, e: std::io::Error) -> PyErr {
    let path = path.display().to_string();
    match e.raw_os_error() {
        Some(code) => {
            let words = e.to_string();
            let words = words.strip_suffix(&format!(" (os error {code})")).unwrap_or(&words).to_string();
            PyOSError::new_err((code, words, path))
        }
        None => PyOSError::new_err(format!("{path}: {e}")),
    }
}

#[pymethods]
impl ParquetWriter {
    /// A new file at `path` with these columns: `kinds` "int64", "timestamp" (microseconds, UTC) or "boolean";
    /// min/max statistics for the columns named in `statistics`.
    #[new]
    fn new(path: PathBuf, names: Vec<String>, kinds: Vec<String>, statistics: Vec<String>) -> PyResult<Self> {
        if names.len() != kinds.len() {
            return Err(PyValueError::new_err("one kind per column name"));
        }
        let fields = names
            .into_iter()
            .zip(kinds)
            .map(|(name, kind)| {
                let kind = match kind.as_str() {
                    "int64" => Kind::Int64,
                    "timestamp" => Kind::Timestamp,
                    "boolean" => Kind::Boolean,
                    other => return Err(PyValueError::new_err(format!("unknown column kind {other:?}"))),
                };
                Ok(Field { statistics: statistics.contains(&name), name, kind })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let file = File::create(&path).map_err(|e| io_error(&path, e))?;
        let inner = FileWriter::new(BufWriter::with_capacity(1 << 20, file), fields).map_err(|e| io_error(&path, e))?;
        Ok(ParquetWriter { inner: Some(inner), path })
    }

    /// Appends rows `start..end` of `columns` as a row group: one per field, in order, each an Arrow array (any object
    /// with `__arrow_c_array__`) of the field's kind, or None for a column the rows do not hold (all missing).
    fn write(&mut self, py: Python<'_>, columns: Vec<Option<Bound<'_, PyAny>>>, start: usize, end: usize) -> PyResult<()> {
        let writer = self.inner.as_mut().ok_or_else(|| PyValueError::new_err("the file is closed"))?;
        let fields = writer.fields();
        if columns.len() != fields.len() || start > end {
            return Err(PyValueError::new_err(format!(
                "{} columns of rows {start}..{end}, the file has {} columns",
                columns.len(),
                fields.len()
            )));
        }
        let held: Vec<Option<Capsules<'_>>> = columns
            .iter()
            .zip(fields)
            .map(|(c, f)| c.as_ref().map(|c| capsules(c, |why| refused(&f.name, why))).transpose())
            .collect::<PyResult<_>>()?;
        let columns: Vec<Column<'_>> = held
            .iter()
            .zip(fields)
            .map(|(h, f)| match h {
                Some(h) => column(h, f, start..end),
                None => Ok(Column { values: Values::Missing, validity: None }),
            })
            .collect::<PyResult<_>>()?;
        let flags: Vec<bool> = fields.iter().map(|f| f.statistics).collect();
        let rows = end - start;
        let chunks: Vec<_> = py.detach(|| columns.par_iter().zip(&flags).map(|(c, &s)| encode_chunk(c, rows, s)).collect());
        writer.write(rows, chunks).map_err(|e| io_error(&self.path, e))
    }

    /// Writes the footer and closes the file.
    fn close(&mut self) -> PyResult<()> {
        if let Some(writer) = self.inner.take() {
            let out = writer.finish().map_err(|e| io_error(&self.path, e))?;
            out.into_inner().map_err(|e| io_error(&self.path, e.into_error()))?;
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ParquetWriter>()
}
