//! Live heap bytes: what the process's allocations hold right now and at their peak, counted
//! by [`Counted`], a wrapper a binary puts around its global allocator.
//!
//! The resident set size says what the kernel has given the process, which is not what the
//! process uses: an allocator that returns freed pages with `MADV_FREE` (mimalloc purging by
//! reset, as `mentor rescue` does) leaves them counted in RSS until the kernel needs them. The
//! counts here are the sizes the program asked for and has not freed yet, the allocator's own
//! overhead (page rounding, free lists) not included. Where the wrapper is not installed (a
//! test binary, a user's own binary) [`live`] answers `None`.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes allocated and not freed yet.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The most `CURRENT` has been since the start or the last [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// A global allocator that counts live bytes and passes every call on to `A`:
/// `#[global_allocator] static GLOBAL: Counted<mimalloc::MiMalloc> = Counted(mimalloc::MiMalloc);`
///
/// Each allocation and free costs one relaxed atomic add (and a second one when it sets a new
/// peak).
#[derive(Debug, Default)]
pub struct Counted<A>(pub A);

fn grow(n: usize) {
    let now = CURRENT.fetch_add(n, Relaxed).wrapping_add(n);
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

fn shrink(n: usize) {
    CURRENT.fetch_sub(n, Relaxed);
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged and returns what
// `A` returned, so `A`'s guarantees are this allocator's; the counting touches only atomics.
#[allow(unsafe_code)]
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { self.0.dealloc(ptr, layout) };
        shrink(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // On failure the old block stays allocated: nothing changes.
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                shrink(layout.size() - new_size);
            }
        }
        p
    }
}

/// Live bytes now and at their peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Live {
    /// Allocated and not freed yet.
    pub current: usize,
    /// The most that was live at once since the process started or [`reset_peak`].
    pub peak: usize,
}

/// Live heap bytes, or `None` where [`Counted`] is not the global allocator (nothing counted).
pub fn live() -> Option<Live> {
    let peak = PEAK.load(Relaxed);
    (peak > 0).then(|| Live { current: CURRENT.load(Relaxed), peak })
}

/// Starts a new peak from what is live now (to measure one stage's peak).
pub fn reset_peak() {
    PEAK.store(CURRENT.load(Relaxed), Relaxed);
}

/// Bytes as MiB.
pub fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrapper's accounting, run on the system allocator directly (the test binary's
    /// global allocator is not wrapped): allocations add, frees subtract, realloc moves by the
    /// difference, and the peak holds the most at once until reset.
    #[test]
    #[allow(unsafe_code)]
    fn counts_allocations_frees_and_the_peak() {
        let a = Counted(std::alloc::System);
        let before = CURRENT.load(Relaxed);
        let l = Layout::from_size_align(1 << 20, 64).unwrap();
        // SAFETY: non-zero layouts; each block freed once with the layout (and size) it has.
        unsafe {
            let p = a.alloc(l);
            let q = a.alloc_zeroed(l);
            assert!(!p.is_null() && !q.is_null());
            assert_eq!(CURRENT.load(Relaxed) - before, 2 << 20);
            assert!(PEAK.load(Relaxed) >= before + (2 << 20));
            let p = a.realloc(p, l, 3 << 20);
            assert!(!p.is_null());
            assert_eq!(CURRENT.load(Relaxed) - before, 4 << 20);
            let p = a.realloc(p, Layout::from_size_align(3 << 20, 64).unwrap(), 1 << 19);
            assert_eq!(CURRENT.load(Relaxed) - before, (1 << 20) + (1 << 19));
            a.dealloc(p, Layout::from_size_align(1 << 19, 64).unwrap());
            a.dealloc(q, l);
        }
        assert_eq!(CURRENT.load(Relaxed), before);
        assert!(live().is_some_and(|l| l.peak >= 4 << 20));
        reset_peak();
        assert_eq!(PEAK.load(Relaxed), CURRENT.load(Relaxed));
    }
}
