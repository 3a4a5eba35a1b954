//! One allocation holding every output column.
//!
//! A full read materialises hundreds of MB, and on these machines the
//! kernel's page faults and zeroing cost more than decoding. So the arena is
//! one anonymous mapping advised for transparent huge pages (512x fewer
//! faults), and the last arena a process frees is kept for the next read, as
//! allocators such as jemalloc keep freed memory: advised MADV_FREE, so the
//! kernel may still reclaim it under pressure. Contents are unspecified;
//! readers write every value they expose (validity bitmaps cover the rest).

use std::ptr::NonNull;
use std::sync::Mutex;

/// Arenas smaller than this are not worth keeping.
const KEEP_FROM_BYTES: usize = 64 << 20;

struct Mapping {
    ptr: NonNull<i64>,
    bytes: usize,
}

// Safety: a mapping is plain memory with one owner at a time.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(bytes: usize) -> Mapping {
        // Safety: anonymous private mapping, checked for failure.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                panic!("cannot map {bytes} bytes for decoded columns");
            }
            // Advice only; failure (no THP support) is harmless.
            libc::madvise(p, bytes, libc::MADV_HUGEPAGE);
            Mapping { ptr: NonNull::new(p as *mut i64).unwrap(), bytes }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Safety: unmaps exactly the mapping made in `new`.
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.bytes);
        }
    }
}

/// The most recently freed large mapping, for the next read to reuse.
static SPARE: Mutex<Option<Mapping>> = Mutex::new(None);

pub struct Arena {
    mapping: Option<Mapping>,
    len: usize,
}

// Safety: the arena is plain memory; callers coordinate disjoint writes.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// Room for `len` int64 values, contents unspecified.
    pub fn new(len: usize) -> Arena {
        let bytes = len.max(1) * 8;
        let spare = SPARE.lock().unwrap().take();
        // Reuse the spare when it fits without holding far more than needed.
        let mapping = match spare {
            Some(m) if m.bytes >= bytes && m.bytes <= 2 * bytes => m,
            _ => Mapping::new(bytes),
        };
        Arena { mapping: Some(mapping), len }
    }

    pub fn as_mut_ptr(&self) -> *mut i64 {
        self.mapping.as_ref().unwrap().ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[i64] {
        // Safety: `len` values lie inside the mapping.
        unsafe { std::slice::from_raw_parts(self.as_mut_ptr(), self.len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let mapping = self.mapping.take().unwrap();
        if mapping.bytes < KEEP_FROM_BYTES {
            return;
        }
        // Safety: advice on our own mapping; its pages may be reclaimed, after
        // which they read as zero, which is fine for unspecified contents.
        unsafe {
            libc::madvise(mapping.ptr.as_ptr() as *mut libc::c_void, mapping.bytes, libc::MADV_FREE);
        }
        // Replacing an older spare unmaps it.
        *SPARE.lock().unwrap() = Some(mapping);
    }
}
