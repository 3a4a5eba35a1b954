//! One allocation holding every output column.
//!
//! A full read materialises hundreds of MB, and on these machines the
//! kernel's page faults and zeroing cost more than decoding. So the arena is
//! one anonymous mapping advised for transparent huge pages (on Linux; 512x
//! fewer faults), and the last arena a process frees is kept for the next read, as
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
        // Safety: `bytes` is at least 8 (Arena::new), and `memory::take` never returns null.
        Mapping { ptr: NonNull::new(unsafe { memory::take(bytes) } as *mut i64).unwrap(), bytes }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Safety: gives back exactly the memory taken in `new`.
        unsafe { memory::give_back(self.ptr.as_ptr() as *mut u8, self.bytes) }
    }
}

/// Where arenas come from: anonymous mappings where there is `mmap` (unix), the global
/// allocator elsewhere (Windows). Only Linux advises for transparent huge pages, and
/// only systems with `MADV_FREE` (Linux, macOS, FreeBSD) let the kernel reclaim a kept
/// spare; elsewhere it stays resident until the next read reuses or replaces it.
#[cfg(unix)]
mod memory {
    /// `bytes` of private memory, contents unspecified.
    pub unsafe fn take(bytes: usize) -> *mut u8 {
        let p = libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        if p == libc::MAP_FAILED {
            panic!("cannot map {bytes} bytes for decoded columns");
        }
        // Advice only; failure (no THP support) is harmless.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::madvise(p, bytes, libc::MADV_HUGEPAGE);
        p as *mut u8
    }

    pub unsafe fn give_back(p: *mut u8, bytes: usize) {
        libc::munmap(p as *mut libc::c_void, bytes);
    }

    /// Memory kept for reuse whose pages the kernel may reclaim meanwhile (they then read
    /// as zero, which is fine for unspecified contents).
    pub unsafe fn may_reclaim(p: *mut u8, bytes: usize) {
        #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple", target_os = "freebsd"))]
        libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_FREE);
        #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple", target_os = "freebsd")))]
        let _ = (p, bytes);
    }
}

#[cfg(not(unix))]
mod memory {
    use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};

    /// Page-aligned, as a mapping would be.
    fn layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, 4096).expect("an arena's size fits a layout")
    }

    pub unsafe fn take(bytes: usize) -> *mut u8 {
        let p = alloc(layout(bytes));
        if p.is_null() {
            handle_alloc_error(layout(bytes));
        }
        p
    }

    pub unsafe fn give_back(p: *mut u8, bytes: usize) {
        dealloc(p, layout(bytes));
    }

    pub unsafe fn may_reclaim(_p: *mut u8, _bytes: usize) {}
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
        // Safety: our own memory, whose contents are unspecified.
        unsafe { memory::may_reclaim(mapping.ptr.as_ptr() as *mut u8, mapping.bytes) }
        // Replacing an older spare unmaps it.
        *SPARE.lock().unwrap() = Some(mapping);
    }
}
