//! One zeroed allocation holding every output column.
//!
//! A full read materialises hundreds of MB; taking it from a single
//! anonymous mapping advised for transparent huge pages cuts page faults by
//! 512x, and fresh mappings are already zero, so nothing is memset.

use std::ptr::NonNull;

pub struct Arena {
    ptr: NonNull<i64>,
    len: usize,
}

// Safety: the arena is plain memory; callers coordinate disjoint writes.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// `len` zeroed int64 values.
    pub fn zeroed(len: usize) -> Arena {
        let bytes = len.max(1) * 8;
        // Safety: anonymous private mapping, checked for failure.
        let ptr = unsafe {
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
            p as *mut i64
        };
        Arena { ptr: NonNull::new(ptr).unwrap(), len }
    }

    pub fn as_mut_ptr(&self) -> *mut i64 {
        self.ptr.as_ptr()
    }

    pub fn as_slice(&self) -> &[i64] {
        // Safety: `len` values were mapped and zero-initialised.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // Safety: unmaps exactly the mapping made in `zeroed`.
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len.max(1) * 8);
        }
    }
}
