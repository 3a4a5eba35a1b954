//! Python bytes objects written in place, for the columns the native module hands over, and the little-endian values
//! Python hands over as bytes read back.

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

/// The little-endian values of `bytes`, `N` bytes each (`from`: the type's `from_le_bytes`); a trailing part of fewer
/// than `N` bytes is no value (callers check the length first).
pub(crate) fn le_values<const N: usize, T>(bytes: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
    bytes.chunks_exact(N).map(|b| from(b.try_into().expect("chunks_exact gives N bytes"))).collect()
}
