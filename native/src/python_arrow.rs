//! Arrow arrays handed to the core through the Arrow PyCapsule interface (`__arrow_c_array__`): the producer's
//! C Data Interface structs (<https://arrow.apache.org/docs/format/CDataInterface.html>), read in place while their
//! capsules are held and released by the capsules' destructors. Python passes arrays, never addresses: what the
//! core reads is what the array's producer (pyarrow) says it holds.

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::extremes;

/// `struct ArrowSchema` of the C Data Interface.
#[repr(C)]
pub(crate) struct ArrowSchema {
    pub(crate) format: *const c_char,
    pub(crate) name: *const c_char,
    pub(crate) metadata: *const c_char,
    pub(crate) flags: i64,
    pub(crate) n_children: i64,
    pub(crate) children: *mut *mut ArrowSchema,
    pub(crate) dictionary: *mut ArrowSchema,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub(crate) private_data: *mut c_void,
}

/// `struct ArrowArray` of the C Data Interface.
#[repr(C)]
pub(crate) struct ArrowArray {
    pub(crate) length: i64,
    pub(crate) null_count: i64,
    pub(crate) offset: i64,
    pub(crate) n_buffers: i64,
    pub(crate) n_children: i64,
    pub(crate) buffers: *mut *const c_void,
    pub(crate) children: *mut *mut ArrowArray,
    pub(crate) dictionary: *mut ArrowArray,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub(crate) private_data: *mut c_void,
}

/// The PyCapsule pair an array's `__arrow_c_array__` returned, held so that its structs and the buffers they point to
/// stay alive; its array not released, its format read.
pub(crate) struct Capsules<'py> {
    _capsules: (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>),
    pub(crate) schema: *const ArrowSchema,
    pub(crate) array: *const ArrowArray,
    pub(crate) format: Vec<u8>,
}

/// The capsules of `array` (any object with `__arrow_c_array__`); `refuse(why)` is the error for an array released.
pub(crate) fn capsules<'py>(array: &Bound<'py, PyAny>, refuse: impl Fn(&str) -> PyErr) -> PyResult<Capsules<'py>> {
    if !array.hasattr("__arrow_c_array__")? {
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow array (an object with __arrow_c_array__), not {}",
            array.get_type().name()?
        )));
    }
    let (schema, data): (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>) = array.call_method0("__arrow_c_array__")?.extract()?;
    let schema_ptr = schema.pointer_checked(Some(c"arrow_schema"))?.cast::<ArrowSchema>();
    let array_ptr = data.pointer_checked(Some(c"arrow_array"))?.cast::<ArrowArray>();
    // SAFETY: capsules named "arrow_schema" and "arrow_array" hold these structs (the PyCapsule interface's contract),
    // alive until the capsules are destroyed, which `Capsules` holds.
    let (s, a) = unsafe { (schema_ptr.as_ref(), array_ptr.as_ref()) };
    if s.release.is_none() || a.release.is_none() {
        return Err(refuse("it was released"));
    }
    // SAFETY: a schema that is not released has a NUL-terminated format string (C Data Interface).
    let format = unsafe { CStr::from_ptr(s.format) }.to_bytes().to_vec();
    Ok(Capsules { _capsules: (schema, data), schema: schema_ptr.as_ptr().cast_const(), array: array_ptr.as_ptr().cast_const(), format })
}

/// An Int64 or Float64 array, its capsules held so that its buffers stay alive while `chunk` is read.
pub struct HeldArray<'py> {
    _capsules: Capsules<'py>,
    integer: bool,
    length: usize,
    offset: usize,
    values: *const c_void,
    validity: *const c_void,
}

fn refused(why: &str) -> PyErr {
    PyValueError::new_err(format!("not an Int64 or Float64 Arrow array the core can read: {why}"))
}

/// `array` (any object with `__arrow_c_array__`) as an Int64 or Float64 array of its producer's memory.
pub fn held<'py>(array: &Bound<'py, PyAny>) -> PyResult<HeldArray<'py>> {
    let capsules = capsules(array, refused)?;
    // SAFETY: the structs are alive while `capsules` is (see `capsules`), and not released.
    let (s, a) = unsafe { (&*capsules.schema, &*capsules.array) };
    let integer = match capsules.format.as_slice() {
        b"l" => true,
        b"g" => false,
        other => return Err(refused(&format!("its format is {:?}", String::from_utf8_lossy(other)))),
    };
    if s.n_children != 0 || a.n_children != 0 || !s.dictionary.is_null() || a.n_buffers != 2 || a.buffers.is_null() {
        return Err(refused("it is not a primitive array"));
    }
    let (Ok(length), Ok(offset)) = (usize::try_from(a.length), usize::try_from(a.offset)) else {
        return Err(refused("its length or offset is negative"));
    };
    // SAFETY: a primitive array has `n_buffers` (2) buffer pointers: validity (may be null), then values.
    let (validity, values) = unsafe { (*a.buffers, *a.buffers.add(1)) };
    if length > 0 && (values.is_null() || !(values as usize).is_multiple_of(std::mem::align_of::<i64>())) {
        return Err(refused("its values are not at an aligned, non-null address"));
    }
    let validity = if a.null_count == 0 { std::ptr::null() } else { validity };
    Ok(HeldArray { _capsules: capsules, integer, length, offset, values, validity })
}

impl HeldArray<'_> {
    pub fn len(&self) -> usize {
        self.length
    }

    /// The array as the kernels read it, borrowed from the capsules this holds.
    pub fn chunk(&self) -> extremes::Chunk<'_> {
        if self.length == 0 {
            return extremes::Chunk {
                values: if self.integer { extremes::Values::Integer(&[]) } else { extremes::Values::Float(&[]) },
                validity: None,
            };
        }
        // SAFETY: the producer's values buffer holds `offset + length` values of the format's type (C Data Interface),
        // aligned and non-null (checked in `held`), and its validity bitmap (when present) `offset + length` bits; the
        // capsules this holds keep both alive for the borrow.
        let values = if self.integer {
            extremes::Values::Integer(unsafe { std::slice::from_raw_parts(self.values.cast::<i64>().add(self.offset), self.length) })
        } else {
            extremes::Values::Float(unsafe { std::slice::from_raw_parts(self.values.cast::<f64>().add(self.offset), self.length) })
        };
        let validity = (!self.validity.is_null()).then(|| {
            (unsafe { std::slice::from_raw_parts(self.validity.cast::<u8>(), (self.offset + self.length).div_ceil(8)) }, self.offset)
        });
        extremes::Chunk { values, validity }
    }
}

/// `ARROW_FLAG_NULLABLE` of the C Data Interface.
const NULLABLE: i64 = 2;

/// What an exported array keeps alive until its consumer releases it: the storage its buffers lie in, the buffer
/// pointers its `ArrowArray::buffers` points to, and a string_view array's data buffer sizes (its last buffer).
struct Exported {
    _owner: Arc<dyn Send + Sync>,
    buffers: Vec<*const c_void>,
    _sizes: Vec<i64>,
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: called once by the consumer (or the capsule's destructor) on an array `export` made, whose private
    // data is the `Exported` it boxed; marking it released is the callback's duty.
    unsafe {
        drop(Box::from_raw((*array).private_data.cast::<Exported>()));
        (*array).release = None;
    }
}

unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: the schema's strings are static; only the released mark is ours to set.
    unsafe { (*schema).release = None };
}

// SAFETY: the structs are moved into capsules and read or released by one consumer at a time (C Data Interface);
// what their pointers reach is static or owned by `Exported`, which holds shared, immutable storage.
unsafe impl Send for ArrowSchema {}
unsafe impl Send for ArrowArray {}

/// A column of `length` int64 values (a `format` of 8-byte values: "l", or "tsm:UTC" for times) at `values`, with its
/// validity bitmap if any, lying in `owner`'s storage, as the PyCapsule pair `__arrow_c_array__` returns.
pub fn export<'py>(
    py: Python<'py>,
    owner: Arc<dyn Send + Sync>,
    format: &'static CStr,
    length: usize,
    values: *const i64,
    validity: Option<*const u8>,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let buffers = Layout { validity: validity.map(<*const u8>::cast), values: values.cast(), data: Vec::new() };
    export_layout(py, owner, format, length, buffers)
}

/// The buffers of an exported array, each lying in its owner's storage: its validity bitmap if any, its values (int64s,
/// bits or string views), and a string_view array's data buffers with their sizes.
pub struct Layout {
    pub validity: Option<*const c_void>,
    pub values: *const c_void,
    pub data: Vec<(*const c_void, usize)>,
}

/// An array of `length` rows of `format` laid out as `layout` in `owner`'s storage, as the PyCapsule pair
/// `__arrow_c_array__` returns. A string_view array ("vu") gets its variadic sizes buffer here.
pub fn export_layout<'py>(
    py: Python<'py>,
    owner: Arc<dyn Send + Sync>,
    format: &'static CStr,
    length: usize,
    layout: Layout,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let schema = ArrowSchema {
        format: format.as_ptr(),
        name: c"".as_ptr(),
        metadata: std::ptr::null(),
        flags: NULLABLE,
        n_children: 0,
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: std::ptr::null_mut(),
    };
    let views = format.to_bytes() == b"vu";
    // Moved into `Exported` below, a Vec keeps its heap storage where it is: the pointer taken here stays good.
    let sizes: Vec<i64> = layout.data.iter().map(|&(_, size)| size as i64).collect();
    let mut buffers = vec![layout.validity.unwrap_or(std::ptr::null()), layout.values];
    buffers.extend(layout.data.iter().map(|&(address, _)| address));
    if views {
        // The C Data Interface's variadic sizes buffer: never null, though it holds no size when there is no buffer.
        buffers.push(if sizes.is_empty() { layout.values } else { sizes.as_ptr().cast() });
    }
    let mut kept = Box::new(Exported { _owner: owner, buffers, _sizes: sizes });
    let array = ArrowArray {
        length: length as i64,
        null_count: if layout.validity.is_some() { -1 } else { 0 }, // -1: the consumer counts them if it wants
        offset: 0,
        n_buffers: kept.buffers.len() as i64,
        n_children: 0,
        buffers: kept.buffers.as_mut_ptr(),
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(kept).cast(),
    };
    // A capsule its consumer did not take (pyarrow moves the struct out and marks it released) releases it itself.
    let schema = PyCapsule::new_with_destructor(py, schema, Some(c"arrow_schema".into()), |mut s: ArrowSchema, _| {
        if let Some(release) = s.release {
            // SAFETY: not released yet, so ours to release once.
            unsafe { release(&mut s) }
        }
    })?;
    let array = PyCapsule::new_with_destructor(py, array, Some(c"arrow_array".into()), |mut a: ArrowArray, _| {
        if let Some(release) = a.release {
            // SAFETY: as above.
            unsafe { release(&mut a) }
        }
    })?;
    Ok((schema, array))
}
