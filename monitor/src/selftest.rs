//! `hrt selftest`: boots the kernel with the self-test command line.

use crate::cli::SelftestArgs;
use crate::error::{err, Result};
use crate::kernel_image::KernelImage;

/// Runs the kernel's self-tests; returns the kernel's status.
pub fn run(args: &SelftestArgs) -> Result<u8> {
    let kvm = crate::vm::open_kvm()?;
    let mut cmdline = String::from("selftest");
    if let Some(f) = &args.filter {
        if f.is_empty() || f.contains(char::is_whitespace) {
            return Err(err!("--filter takes one test name (without spaces)"));
        }
        cmdline.push_str(" filter=");
        cmdline.push_str(f);
    }
    let config = crate::vm_args::config(&args.vm, &kvm, cmdline)?;
    let image = KernelImage::load(args.vm.kernel.as_deref())?;
    crate::vm::run(kvm, config, &image)
}
