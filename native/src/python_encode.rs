//! Python bindings of the chunk encoder (`encode`), registered into
//! `ftdc._native` by `python.rs`. Metric values cross the boundary as
//! little-endian int64 bytes, so a whole chunk costs one copy, not a
//! Python int per value.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::encode;
use crate::python_bytes::{le_bytes, le_values};

fn invalid(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The open chunk of a writer: see `encode::ChunkEncoder`.
#[pyclass(module = "ftdc._native")]
struct ChunkEncoder {
    inner: encode::ChunkEncoder,
}

#[pymethods]
impl ChunkEncoder {
    #[new]
    fn new(reference: &[u8]) -> PyResult<Self> {
        Ok(ChunkEncoder { inner: encode::ChunkEncoder::new(reference).map_err(invalid)? })
    }

    #[getter]
    fn metric_count(&self) -> usize {
        self.inner.metric_count()
    }

    #[getter]
    fn delta_count(&self) -> usize {
        self.inner.delta_count()
    }

    /// Adds the sample; False when its schema differs from the reference.
    fn push(&mut self, sample: &[u8]) -> PyResult<bool> {
        self.inner.push(sample).map_err(invalid)
    }

    /// The inflated chunk payload.
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload())
    }
}

/// mongod's schema rule: can `sample` be delta-encoded against `reference`?
#[pyfunction]
fn schema_matches(reference: &[u8], sample: &[u8]) -> PyResult<bool> {
    encode::schema_matches(reference, sample).map_err(invalid)
}

/// A chunk's `data` to `(reference bytes, samples, metric count, row-major
/// int64 values as bytes)`.
#[pyfunction]
fn decode_chunk<'py>(py: Python<'py>, data: &[u8]) -> PyResult<(Bound<'py, PyBytes>, usize, usize, Bound<'py, PyBytes>)> {
    let chunk = encode::decode_chunk(data).map_err(invalid)?;
    let values = le_bytes(py, chunk.values.len(), chunk.values.iter().map(|v| v.to_le_bytes()))?;
    Ok((PyBytes::new(py, &chunk.reference), chunk.samples, chunk.metric_count, values))
}

/// The sample with `values` (little-endian int64 bytes) in the reference's shape.
#[pyfunction]
fn fill_reference<'py>(py: Python<'py>, reference: &[u8], values: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    if !values.len().is_multiple_of(8) {
        return Err(invalid("values must be little-endian int64s (a multiple of 8 bytes)"));
    }
    let values = le_values(values, i64::from_le_bytes);
    Ok(PyBytes::new(py, &encode::fill_reference(reference, &values).map_err(invalid)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChunkEncoder>()?;
    m.add_function(wrap_pyfunction!(schema_matches, m)?)?;
    m.add_function(wrap_pyfunction!(decode_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(fill_reference, m)?)?;
    Ok(())
}
