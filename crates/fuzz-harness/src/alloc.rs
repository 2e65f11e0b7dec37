//! The global allocator of the fuzz targets and of the corpus test: the
//! system's, aborting on any single allocation over [`MAX_ALLOC`].
//! libFuzzer's `-malloc_limit_mb` needs a sanitizer's malloc hooks, which
//! the stable toolchain's `-s none` builds do not have.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// The largest single allocation allowed: 512 MiB.
pub const MAX_ALLOC: usize = 512 << 20;

/// Declare with `#[global_allocator] static A: Limited = Limited;`.
pub struct Limited;

fn check(size: usize) {
    if size > MAX_ALLOC {
        // No formatting: nothing here may allocate.
        let _ = std::io::stderr().write_all(b"fuzz: single allocation over 512 MiB\n");
        std::process::abort();
    }
}

// SAFETY: every call is passed on to `System` unchanged.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
