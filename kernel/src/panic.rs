//! Kernel panics: print what happened, where (CPU, thread) and the registers, then ask the
//! monitor to stop the VM with a failure status.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::{hypercall, irq, traps::TrapFrame};

static PANICKING: AtomicBool = AtomicBool::new(false);

fn where_am_i() -> (usize, u64, &'static str) {
    let (tid, name) = crate::sched::current_description();
    (crate::cpu::id(), tid, name)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    irq::disable();
    if PANICKING.swap(true, Ordering::SeqCst) {
        // Another CPU is already reporting; its report is the interesting one.
        hypercall::report_panic();
    }
    let (cpu, tid, name) = where_am_i();
    let rsp: u64;
    // SAFETY: reads the stack pointer.
    unsafe { core::arch::asm!("mov {}, rsp", out(reg) rsp) };
    kprintln!("KERNEL PANIC on CPU {cpu}, thread {tid} ({name}): {}", info.message());
    if let Some(loc) = info.location() {
        kprintln!("  at {}:{}:{}, rsp={:#x}", loc.file(), loc.line(), loc.column(), rsp);
    }
    hypercall::report_panic()
}

/// An exception nothing handles.
pub fn exception_panic(frame: &TrapFrame, cr2: u64) -> ! {
    if PANICKING.swap(true, Ordering::SeqCst) {
        hypercall::report_panic();
    }
    let (cpu, tid, name) = where_am_i();
    kprintln!(
        "KERNEL PANIC on CPU {cpu}, thread {tid} ({name}): {} (vector {})",
        crate::arch::traps::exception_name(frame.vector),
        frame.vector
    );
    kprintln!(
        "  rip={:#x} rsp={:#x} cr2={:#x} error={:#x} rflags={:#x} cs={:#x}",
        frame.rip,
        frame.rsp,
        cr2,
        frame.error,
        frame.rflags,
        frame.cs
    );
    kprintln!(
        "  rax={:#x} rbx={:#x} rcx={:#x} rdx={:#x} rsi={:#x} rdi={:#x} rbp={:#x}",
        frame.rax,
        frame.rbx,
        frame.rcx,
        frame.rdx,
        frame.rsi,
        frame.rdi,
        frame.rbp
    );
    hypercall::report_panic()
}
