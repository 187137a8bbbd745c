//! Helpers shared by the integration tests.

#[allow(dead_code)] // not every test crate refuses ELFs
/// A minimal ELF header without program headers, for refusal tests: `class` 1 = ELF32,
/// 2 = ELF64; `machine` is e_machine.
pub fn elf_header(class: u8, machine: u16) -> Vec<u8> {
    let mut h = vec![0x7f, b'E', b'L', b'F', class, 1, 1, 0];
    h.resize(16, 0);
    h.extend_from_slice(&2u16.to_le_bytes()); // e_type: executable
    h.extend_from_slice(&machine.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes()); // e_version
    if class == 1 {
        // e_entry, e_phoff, e_shoff, e_flags; e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        for v in [0x0804_8000u32, 0, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [52u16, 32, 0, 40, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
    } else {
        for v in [0x40_0000u64, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&0u32.to_le_bytes());
        for v in [64u16, 56, 0, 64, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
    }
    h
}

// Each test crate uses only some of the helpers.
#[allow(dead_code)]
pub mod hostile;

#[allow(dead_code)] // only the tests that send signals use it
/// Gives `cmd` the default action for the signals these tests send, whatever this test runs
/// under: a background job of a non-interactive shell (`cargo test &`) ignores SIGINT and
/// SIGQUIT, and a program (and `hrt`, which passes the ignored ones on) inherits that.
pub fn with_default_signals(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe, as the code between fork and exec must be.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}
