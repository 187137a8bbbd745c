//! Messages from signal handlers: no allocation, no locks, only `write`.

/// Writes `n` in decimal into `buf`, returning the digits.
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Writes `parts` to stderr, one after the other.
pub fn write_stderr(parts: &[&[u8]]) {
    for p in parts {
        // SAFETY: write is async-signal-safe; the buffers are live.
        unsafe { libc::write(2, p.as_ptr() as *const libc::c_void, p.len()) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimal_digits() {
        let mut buf = [0u8; 20];
        assert_eq!(super::decimal(0, &mut buf), b"0");
        assert_eq!(super::decimal(31, &mut buf), b"31");
        assert_eq!(super::decimal(u64::MAX, &mut buf), b"18446744073709551615");
    }
}
