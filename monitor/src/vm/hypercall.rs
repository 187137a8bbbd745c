//! Serving the kernel's hypercalls. The request block and every buffer it names are guest
//! addresses: each is checked against guest RAM before use.

use std::io::Write;

use hrt_abi::{nr, Hypercall};

use super::vcpu::{Exit, Shared};

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
