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
//! On Linux a new mapping is populated in the one `mmap` call (MAP_POPULATE),
//! not by a fault per 4 KB page as the decoder first writes it: a fresh
//! process's read of every metric took 0.81x the time at the median
//! (bench_before_after). It is not advised for transparent huge pages: 512x
//! fewer faults, but on these VMs a fresh 2 MB page is often one the host must
//! back anew, and the first touch of 330 MB took 0.25 s or 5 s from one process
//! to the next (4 KB pages: about 1 s every time), which made that read 1.9x
//! slower at the median (issue 22).

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
/// allocator elsewhere (Windows). Only Linux populates a mapping as it makes it, and
/// only systems with `MADV_FREE` (Linux, macOS, FreeBSD) let the kernel reclaim a kept
/// spare; elsewhere it stays resident until the next read reuses or replaces it.
#[cfg(unix)]
mod memory {
    /// `bytes` of private memory, contents unspecified.
    pub unsafe fn take(bytes: usize) -> *mut u8 {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let populate = libc::MAP_POPULATE;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let populate = 0;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate;
        let p = libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0);
        if p == libc::MAP_FAILED {
            panic!("cannot map {bytes} bytes for decoded columns");
        }
        p as *mut u8
    }

    pub unsafe fn give_back(p: *mut u8, bytes: usize) {
        libc::munmap(p as *mut libc::c_void, bytes);
    }

    pub fn page_size() -> usize {
        // Safety: sysconf reads a constant of the system.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1)
    }

    /// Pages whose contents nobody needs, given back at once: they read as zero if touched again (Linux), or as
    /// they were until the kernel needs them (where MADV_DONTNEED only advises).
    pub unsafe fn discard(p: *mut u8, bytes: usize) {
        libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_DONTNEED);
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

    pub fn page_size() -> usize {
        4096
    }

    /// The global allocator gives back a whole allocation or nothing.
    pub unsafe fn discard(_p: *mut u8, _bytes: usize) {}
}

/// The most recently freed large mapping, for the next read to reuse.
static SPARE: Mutex<Option<Mapping>> = Mutex::new(None);

/// Unmaps the spare arena, if any: a process that is done reading (an analysis holding its derived series for the
/// rest of a run) gives its memory back, since pages advised MADV_FREE still count as resident until the kernel
/// needs them. The next read maps a new arena.
pub fn release_spare() {
    SPARE.lock().unwrap().take();
}

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

    /// Hands back to the kernel the pages that lie wholly inside values `start .. start + len`; the pages they share
    /// with values outside stay. Read again, those values are unspecified (zero where the pages went).
    ///
    /// # Safety
    /// Nothing reads those values again before writing them.
    pub unsafe fn discard(&self, start: usize, len: usize) {
        let page = memory::page_size();
        let from = (self.as_mut_ptr().add(start) as usize).next_multiple_of(page);
        let to = self.as_mut_ptr().add(start + len) as usize / page * page;
        if from < to {
            memory::discard(from as *mut u8, to - from);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_large_arena_is_kept_until_the_spare_is_released() {
        drop(Arena::new(KEEP_FROM_BYTES / 8));
        assert!(SPARE.lock().unwrap().is_some());
        release_spare();
        assert!(SPARE.lock().unwrap().is_none());
    }

    #[test]
    fn a_discarded_range_gives_back_only_the_pages_wholly_inside_it() {
        let page = memory::page_size() / 8;
        let arena = Arena::new(4 * page);
        // Safety: the arena's values, written before any is read.
        let values = unsafe { std::slice::from_raw_parts_mut(arena.as_mut_ptr(), 4 * page) };
        values.iter_mut().for_each(|v| *v = 7);
        // Safety: only the values outside the range are read below, and the pages wholly inside it.
        unsafe { arena.discard(page / 2, 2 * page) };
        let values = arena.as_slice();
        assert!(values[..page].iter().all(|&v| v == 7), "the page the range begins in is shared: kept");
        assert!(values[2 * page..].iter().all(|&v| v == 7), "the page it ends in, and those after it, are kept");
        #[cfg(target_os = "linux")]
        assert!(values[page..2 * page].iter().all(|&v| v == 0), "the page wholly inside it went back");
    }
}
