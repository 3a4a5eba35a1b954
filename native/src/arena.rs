//! One allocation holding every output column.
//!
//! A full read materialises hundreds of MB, and on these machines the
//! kernel's page faults and zeroing cost more than decoding. So the arena is
//! one anonymous mapping, and the last arena a process frees is kept for the
//! next read, as allocators such as jemalloc keep freed memory: advised
//! MADV_FREE, so the kernel may still reclaim it under pressure. Contents are
//! unspecified; readers write every value they expose (validity bitmaps cover
//! the rest).
//!
//! A new mapping is populated in the one `mmap` call (MAP_POPULATE), not by a
//! fault per 4 KB page as the decoder first writes it: a fresh process's read
//! of every metric took 0.81x the time at the median (bench_before_after).
//! It is not advised for transparent huge pages: 512x fewer faults, but on
//! these VMs a fresh 2 MB page is often one the host must back anew, and the
//! first touch of 330 MB took 0.25 s or 5 s from one process to the next
//! (4 KB pages: about 1 s every time), which made that read 1.9x slower at
//! the median (issue 22).

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
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                panic!("cannot map {bytes} bytes for decoded columns");
            }
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
