//! What the runtime prints for the program (affinity lines, OMP_DISPLAY_ENV) goes to the
//! program's standard error, as libgomp's does: a `write(2, ...)` forwarded to the host like
//! the program's own, from a buffer on the calling thread's stack (the program's memory).

/// Writes `bytes` to the program's descriptor 2; errors are ignored, as libgomp ignores them.
pub fn stderr(bytes: &[u8]) {
    const NR_WRITE: u64 = linux_raw_sys::general::__NR_write as u64;
    let mut buf = [0u8; 256];
    for chunk in bytes.chunks(buf.len()) {
        buf[..chunk.len()].copy_from_slice(chunk);
        let mut done = 0;
        while done < chunk.len() {
            let args = [2, buf[done..].as_ptr() as u64, (chunk.len() - done) as u64, 0, 0, 0];
            let ret = crate::linux::syscall::forward(NR_WRITE, args);
            if ret == -(crate::linux::errno::EINTR as i64) {
                continue;
            }
            if ret <= 0 {
                return;
            }
            done += ret as usize;
        }
    }
}
