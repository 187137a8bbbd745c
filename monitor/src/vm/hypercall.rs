//! Serving the kernel's hypercalls. The request block and every buffer it names are guest
//! addresses: each is checked against guest RAM before use.

use std::io::Write;

use hrt_abi::{nr, Hypercall};

use super::vcpu::{Exit, Shared};

/// The program's memory as forwarded calls see it: only its pool, never the kernel's memory.
struct ProgramMemory<'a> {
    ram: &'a super::memory::GuestRam,
    range: (u64, u64),
}

impl crate::forward::GuestMemory for ProgramMemory<'_> {
    fn host_range(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        if addr < self.range.0 || end > self.range.1 {
            return None;
        }
        self.ram.slice(addr, len).map(|s| s.as_ptr() as *mut u8)
    }
}

/// What the vCPU loop does after a hypercall.
pub enum Outcome {
    Continue,
    Stop(Exit),
}

pub fn serve(shared: &Shared, block_addr: u64) -> Outcome {
    let ram = &shared.ram;
    let Some(mut call) = ram.read_obj::<Hypercall>(block_addr) else {
        eprintln!("hrt: the guest passed a hypercall block outside its memory ({block_addr:#x})");
        return Outcome::Stop(Exit::Failure(1));
    };
    let mut outcome = Outcome::Continue;
    call.ret = match call.nr {
        nr::CONSOLE_WRITE => match ram.slice(call.args[0], call.args[1]) {
            Some(bytes) => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(bytes);
                0
            }
            None => -(libc::EFAULT as i64),
        },
        nr::SHUTDOWN => {
            outcome = Outcome::Stop(Exit::Status(call.args[0] as i32));
            0
        }
        nr::START_CPUS => {
            shared.release_secondaries();
            0
        }
        nr::SYSCALL => match &shared.forwarder {
            Some(f) => {
                let a = &call.args;
                let view = ProgramMemory { ram, range: shared.program_mem };
                f.call(&view, a[0], [a[1], a[2], a[3], a[4], a[5], a[6]])
            }
            None => -(libc::ENOSYS as i64),
        },
        nr::MEM_COPY => match (ram.slice(call.args[0], call.args[2]), ram.slice(call.args[1], call.args[2])) {
            (Some(dst), Some(src)) => {
                // SAFETY: both ranges are inside guest RAM (checked); they may overlap.
                unsafe { std::ptr::copy(src.as_ptr(), dst.as_ptr() as *mut u8, src.len()) };
                0
            }
            _ => -(libc::EFAULT as i64),
        },
        nr::MEM_ZERO => match ram.slice(call.args[0], call.args[1]) {
            Some(dst) => {
                // SAFETY: inside guest RAM (checked).
                unsafe { std::ptr::write_bytes(dst.as_ptr() as *mut u8, 0, dst.len()) };
                0
            }
            None => -(libc::EFAULT as i64),
        },
        nr::PANIC => {
            outcome = Outcome::Stop(Exit::Failure(hrt_abi::PANIC_STATUS as u8));
            0
        }
        _ => -(libc::ENOSYS as i64),
    };
    let ret_addr = block_addr + std::mem::offset_of!(Hypercall, ret) as u64;
    if ram.write_obj(ret_addr, &call.ret).is_err() {
        return Outcome::Stop(Exit::Failure(1));
    }
    outcome
}
