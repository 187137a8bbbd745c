//! `hrt bench-kernel`: boots the kernel with the command line `bench [quick]`; the kernel
//! prints its `RESULT` lines on the console (stderr), and the harness reads them there.

use super::args::KernelBenchArgs;
use crate::error::Result;
use crate::kernel_image::KernelImage;
use crate::vm;

pub fn run(args: &KernelBenchArgs) -> Result<u8> {
    let kvm = vm::open_kvm()?;
    let cmdline = if args.quick { "bench quick" } else { "bench" };
    let config = crate::vm_args::config(&args.vm, &kvm, String::from(cmdline))?;
    let image = KernelImage::load(args.vm.kernel.as_deref())?;
    vm::run(kvm, config, &image)
}
