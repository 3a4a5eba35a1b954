//! Python bytes objects written in place, for the columns the native module hands over.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `size` values' little-endian bytes written straight into a new Python bytes object (byte by byte through an
/// iterator they cost more than the work that made them).
pub(crate) fn le_bytes<const N: usize>(py: Python<'_>, size: usize, values: impl Iterator<Item = [u8; N]>) -> PyResult<Bound<'_, PyBytes>> {
    PyBytes::new_with(py, size * N, |buffer| {
        for (slot, value) in buffer.chunks_exact_mut(N).zip(values) {
            slot.copy_from_slice(&value);
        }
        Ok(())
    })
}
