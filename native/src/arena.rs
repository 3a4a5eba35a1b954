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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Arenas smaller than this are not worth keeping. An export's windows (`ftdc/batches.py`: 32 million values each,
/// those of the columns that are not 0 throughout stored) hold some 50 - 60 MB of a real node: kept, the next window
/// reuses them instead of faulting in a fresh mapping (a week's export faulted 2.5 GB, 44 windows, when the threshold
/// was 64 MB).
const KEEP_FROM_BYTES: usize = 16 << 20;

/// Bytes of fresh mappings made for arenas so far by this process (`counters`): what a read did not find kept.
pub static BYTES_MAPPED: AtomicU64 = AtomicU64::new(0);

struct Mapping {
    ptr: NonNull<i64>,
    bytes: usize,
}

// Safety: a mapping is plain memory with one owner at a time.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(bytes: usize) -> Mapping {
        BYTES_MAPPED.fetch_add(bytes as u64, Ordering::Relaxed);
        // Safety: `bytes` is at least 8 (Arena::new), and `memory::take` never returns null.
        Mapping { ptr: NonNull::new(unsafe { memory::take(bytes) } as *mut i64).unwrap(), bytes }
    }

    /// This mapping made `bytes` long (more than it is), its pages kept where the system can move them
    /// (`memory::grow`: only the new ones are faulted in, as they are first written); else a fresh one.
    fn grown(self, bytes: usize) -> Mapping {
        // Safety: our own mapping, of `self.bytes`; on success the old address is no longer ours to unmap.
        match unsafe { memory::grow(self.ptr.as_ptr() as *mut u8, self.bytes, bytes) } {
            Some(p) => {
                std::mem::forget(self);
                Mapping { ptr: NonNull::new(p as *mut i64).unwrap(), bytes }
            }
            None => Mapping::new(bytes),
        }
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

    /// The mapping at `p` of `bytes` made `to` bytes long, moved if it must be, its pages kept (Linux's `mremap`);
    /// None where the system cannot (the mapping is then as it was).
    pub unsafe fn grow(p: *mut u8, bytes: usize, to: usize) -> Option<*mut u8> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let moved = libc::mremap(p as *mut libc::c_void, bytes, to, libc::MREMAP_MAYMOVE);
            (moved != libc::MAP_FAILED).then_some(moved as *mut u8)
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = (p, bytes, to);
            None
        }
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

    /// The global allocator's memory is not grown in place here: a fresh allocation is made instead.
    pub unsafe fn grow(_p: *mut u8, _bytes: usize, _to: usize) -> Option<*mut u8> {
        None
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

/// What a read of `bytes` does with a spare of `spare` bytes.
#[derive(Debug, PartialEq, Eq)]
enum Spare {
    /// It fits without holding far more than needed.
    Reused,
    /// It is a little short: grown, its pages kept. A stream of windows a few MB longer or shorter than each other,
    /// as an export decodes, then reuses one mapping throughout.
    Grown,
    /// The read is too small to be worth it: the spare stays for the next large read.
    Kept,
    /// Far short or far too large for a large read: unmapped before a fresh mapping is made.
    Unmapped,
}

fn use_of_spare(spare: usize, bytes: usize) -> Spare {
    if (bytes..=2 * bytes).contains(&spare) {
        Spare::Reused
    } else if bytes < KEEP_FROM_BYTES {
        Spare::Kept
    } else if (bytes / 2..bytes).contains(&spare) {
        Spare::Grown
    } else {
        Spare::Unmapped
    }
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
        // The spare is taken under the lock, and mapped, grown or unmapped after it: a large mapping populated
        // while holding it would hold up every other read's arena, made or freed, as long.
        let taken = {
            let mut spare = SPARE.lock().unwrap();
            match spare.as_ref().map(|m| use_of_spare(m.bytes, bytes)) {
                None | Some(Spare::Kept) => None,
                Some(decided) => spare.take().map(|m| (decided, m)),
            }
        };
        let mapping = match taken {
            Some((Spare::Reused, m)) => m,
            Some((Spare::Grown, m)) => m.grown(bytes),
            Some((_, unmapped)) => {
                drop(unmapped);
                Mapping::new(bytes)
            }
            None => Mapping::new(bytes),
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
    fn a_spare_is_reused_when_it_fits_grown_when_a_little_short_and_left_alone_by_a_small_read() {
        let mb = 1 << 20;
        assert_eq!(use_of_spare(60 * mb, 56 * mb), Spare::Reused);
        assert_eq!(use_of_spare(112 * mb, 56 * mb), Spare::Reused);
        assert_eq!(use_of_spare(56 * mb, 57 * mb), Spare::Grown);
        assert_eq!(use_of_spare(29 * mb, 57 * mb), Spare::Grown);
        assert_eq!(use_of_spare(28 * mb, 57 * mb), Spare::Unmapped, "far short");
        assert_eq!(use_of_spare(120 * mb, 57 * mb), Spare::Unmapped, "far too large");
        assert_eq!(use_of_spare(60 * mb, 1024), Spare::Kept, "a small read");
        assert_eq!(use_of_spare(1500, 1024), Spare::Reused, "one that fits is taken whatever its size");
    }

    #[test]
    fn a_grown_mapping_keeps_its_values_and_can_be_written_throughout() {
        let page = memory::page_size();
        let mapping = Mapping::new(4 * page);
        // Safety: the mapping's own values.
        unsafe { std::slice::from_raw_parts_mut(mapping.ptr.as_ptr(), 4 * page / 8) }.iter_mut().for_each(|v| *v = 7);
        let grown = mapping.grown(9 * page);
        // Safety: the grown mapping's values, the new ones written before they are read.
        let values = unsafe { std::slice::from_raw_parts_mut(grown.ptr.as_ptr(), 9 * page / 8) };
        values[4 * page / 8..].iter_mut().for_each(|v| *v = 3);
        assert!(values[..4 * page / 8].iter().all(|&v| v == 7) && values[4 * page / 8..].iter().all(|&v| v == 3));
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
