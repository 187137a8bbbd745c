//! In-kernel tests, run by `hrt selftest`. Each prints its name and `ok` or `FAIL`, and the
//! run ends with the line `N passed, M failed`. Tests print the sizes they use.

mod fault_tests;
mod mem_tests;
mod random_tests;
mod spin_tests;
mod sync_tests;
mod thread_tests;
mod time_tests;

use alloc::string::String;

pub type TestResult = Result<(), String>;

struct Test {
    name: &'static str,
    run: fn() -> TestResult,
    /// Tests that deliberately crash the kernel run only when named exactly.
    crashes: bool,
}

const fn test(name: &'static str, run: fn() -> TestResult) -> Test {
    Test { name, run, crashes: false }
}

static TESTS: &[Test] = &[
    test("paging", fault_tests::paging),
    test("fault_report", fault_tests::fault_report),
    test("buddy_stress", mem_tests::buddy_stress),
    test("heap", mem_tests::heap),
    test("page_reserve", mem_tests::page_reserve),
    test("threads_1000", thread_tests::threads_1000),
    test("thread_create_join", thread_tests::create_join_cycles),
    test("thread_fork", thread_tests::fork_join),
    test("fpu_state", thread_tests::fpu_state),
    test("tasks", thread_tests::tasks),
    test("spinlock_counter", sync_tests::spinlock_counter),
    test("condvar_pingpong", sync_tests::condvar_pingpong),
    test("fork_waits_for_lock_holders", sync_tests::fork_waits_for_lock_holders),
    test("barrier", sync_tests::barrier_rounds),
    test("waitqueue", sync_tests::waitqueue),
    test("ipi", sync_tests::ipi_all),
    test("spin_loop_shapes", spin_tests::spin_loop_shapes),
    test("sleep", time_tests::sleep_never_early),
    test("sleepers_take_turns", time_tests::sleepers_take_turns),
    test("random", random_tests::generator),
    test("preemption", time_tests::preemption),
    Test { name: "crash_page_fault", run: fault_tests::crash_page_fault, crashes: true },
    Test { name: "crash_panic", run: fault_tests::crash_panic, crashes: true },
    Test { name: "crash_kernel_stack_overflow", run: fault_tests::crash_kernel_stack_overflow, crashes: true },
];

fn selected(t: &Test, filter: Option<&str>) -> bool {
    match filter {
        None => !t.crashes,
        Some(f) if t.crashes => t.name == f,
        Some(f) => t.name.contains(f),
    }
}

/// Runs the tests whose names contain `filter` (all but the crash tests when None).
/// Returns the kernel's exit status: 0 when everything passed.
pub fn run_all(filter: Option<&str>) -> i32 {
    if filter == Some("-") {
        // Boot only: used to measure boot-to-exit time.
        kprintln!("0 passed, 0 failed");
        return 0;
    }
    if !TESTS.iter().any(|t| selected(t, filter)) {
        kprintln!("hrt selftest: no test matches '{}'; tests are:", filter.unwrap_or(""));
        for t in TESTS {
            kprintln!("  {}", t.name);
        }
        return 2;
    }
    let start = crate::time::now_ns();
    let (mut passed, mut failed) = (0, 0);
    for t in TESTS.iter().filter(|t| selected(t, filter)) {
        kprintln!("test {} ...", t.name);
        let t0 = crate::time::now_ns();
        let result = (t.run)();
        let ms = (crate::time::now_ns() - t0) / 1_000_000;
        match result {
            Ok(()) => {
                passed += 1;
                kprintln!("test {} ok ({} ms)", t.name, ms);
            }
            Err(msg) => {
                failed += 1;
                kprintln!("test {} FAIL: {} ({} ms)", t.name, msg, ms);
            }
        }
    }
    kprintln!("self-tests took {} ms on {} CPU(s)", (crate::time::now_ns() - start) / 1_000_000, crate::cpu::count());
    kprintln!("{} passed, {} failed", passed, failed);
    if failed == 0 {
        0
    } else {
        1
    }
}

/// Fails the test with a formatted message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(alloc::format!($($arg)*));
        }
    };
}
