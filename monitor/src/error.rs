//! User-facing errors: each is one line, printed as `hrt: <message>`.

use std::fmt;

#[derive(Debug)]
pub struct Error {
    message: String,
    status: u8,
}

/// `hrt run`: the program was found but cannot be run (as a shell reports it).
pub const CANNOT_EXECUTE: u8 = 126;
/// `hrt run`: the program does not exist (as a shell reports it).
pub const NOT_FOUND: u8 = 127;

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Error { message: message.into(), status: 1 }
    }

    /// An error with its own exit status (see README, "Exit status").
    pub fn with_status(message: impl Into<String>, status: u8) -> Self {
        Error { message: message.into(), status }
    }

    pub fn exit_status(&self) -> u8 {
        self.status
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Builds an `Error` from a format string.
macro_rules! err {
    ($($arg:tt)*) => { $crate::error::Error::new(format!($($arg)*)) };
}
pub(crate) use err;
