//! Host unit tests of the program-memory allocator (kernel/src/mem/page_runs.rs), which depends
//! on nothing but `core` and `alloc` so it can be compiled here unchanged.

extern crate alloc;

#[allow(dead_code)]
#[path = "../../kernel/src/mem/page_runs.rs"]
mod page_runs;

use page_runs::{PageRuns, PAGE};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[test]
fn exact_runs_use_the_whole_range() {
    let mut runs = PageRuns::new();
    runs.add(0x10_0000, 0x10_0000 + 64 * MIB);
    let mut got = Vec::new();
    // 1 MiB + 4 KiB, as glibc asks for a 1 MiB malloc: 63 fit in 64 MiB, with no rounding.
    while let Some(a) = runs.alloc(MIB + PAGE, PAGE) {
        got.push(a);
    }
    assert_eq!(got.len(), 63);
    assert_eq!(runs.free_bytes(), 64 * MIB - 63 * (MIB + PAGE));
    for a in got {
        runs.give_back(a, a + MIB + PAGE);
    }
    assert_eq!(runs.free_bytes(), 64 * MIB);
    // Everything merged back into one run.
    assert_eq!(runs.alloc(64 * MIB, PAGE), Some(0x10_0000));
}

#[test]
fn aligned_requests_and_best_fit() {
    let mut runs = PageRuns::new();
    runs.add(PAGE, 8 * GIB);
    let a = runs.alloc(3 * GIB, 2 * MIB).unwrap();
    assert!(a.is_multiple_of(2 * MIB));
    let b = runs.alloc(3 * GIB, 2 * MIB).unwrap();
    assert!(b >= a + 3 * GIB || b + 3 * GIB <= a);
    assert!(runs.alloc(3 * GIB, PAGE).is_none(), "only about 2 GiB are left");
    // A small hole is preferred to cutting into the big free run.
    runs.give_back(a + MIB, a + MIB + 4 * PAGE);
    assert_eq!(runs.alloc(4 * PAGE, PAGE), Some(a + MIB));
}

#[test]
fn take_only_free_ranges() {
    let mut runs = PageRuns::new();
    runs.add(0, 16 * MIB);
    assert!(runs.take(4 * MIB, 8 * MIB));
    assert!(!runs.take(7 * MIB, 9 * MIB), "partly taken already");
    assert!(!runs.take(15 * MIB, 17 * MIB), "partly outside");
    assert!(runs.is_free(8 * MIB, 16 * MIB));
    assert!(!runs.is_free(3 * MIB, 5 * MIB));
    assert_eq!(runs.extent_containing(2 * MIB), Some((0, 4 * MIB)));
    assert_eq!(runs.extent_containing(5 * MIB), None);
    runs.give_back(4 * MIB, 8 * MIB);
    assert_eq!(runs.extent_containing(5 * MIB), Some((0, 16 * MIB)));
    assert_eq!(runs.total_bytes(), 16 * MIB);
}

#[test]
fn several_ranges_stay_apart() {
    let mut runs = PageRuns::new();
    runs.add(0, 4 * MIB);
    runs.add(8 * MIB, 12 * MIB);
    assert_eq!(runs.total_bytes(), 8 * MIB);
    assert!(runs.alloc(6 * MIB, PAGE).is_none(), "no run spans the hole");
    assert!(!runs.take(3 * MIB, 9 * MIB));
    assert!(runs.alloc(4 * MIB, PAGE).is_some());
    assert!(runs.alloc(4 * MIB, PAGE).is_some());
    assert_eq!(runs.free_bytes(), 0);
}

#[test]
fn the_lowest_fit_below_a_limit_is_found_without_taking_it() {
    let mut runs = PageRuns::new();
    runs.add(MIB, 4 * MIB);
    runs.add(6 * MIB, 20 * MIB);
    assert_eq!(runs.lowest_fit_below(2 * MIB, 16 * MIB), Some(MIB));
    assert_eq!(runs.lowest_fit_below(4 * MIB, 16 * MIB), Some(6 * MIB), "the first run is too small");
    assert_eq!(runs.lowest_fit_below(4 * MIB, 9 * MIB), None, "the fitting run crosses the limit");
    assert_eq!(runs.lowest_fit_below(3 * MIB, 9 * MIB), Some(MIB));
    assert_eq!(runs.free_bytes(), 17 * MIB, "nothing taken");
}
