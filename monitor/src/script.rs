//! Scripts: a program file that starts with `#!` runs its interpreter, as Linux's binfmt_script
//! does. The line is read from the file's first 256 bytes; the interpreter is the first word
//! after `#!` (blanks skipped), and the rest of the line, trimmed, is one optional argument.
//! The interpreter then gets argv `[interpreter, argument?, script path, script arguments...]`.
//!
//! `hrt run` of an executable text file without a `#!` line runs it with `/bin/sh`, as a shell
//! and glibc's `execvp` (env, nice, timeout, xargs) do when execve refuses it (ENOEXEC); a file
//! whose first line holds a NUL byte is a binary, refused as bash refuses it. (Inside the VM
//! execve answers ENOEXEC as Linux does: `parse` alone, and the program's libc retries.)

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result, CANNOT_EXECUTE};

/// Linux's BINPRM_BUF_SIZE: how much of the file the `#!` line may use.
const LINE_MAX: usize = 256;

/// What a `#!` line names.
#[derive(Debug, PartialEq, Eq)]
pub struct Interpreter {
    pub path: String,
    pub arg: Option<String>,
}

/// The interpreter the file at `path` (given as `given`) names, or None if it is no script.
pub fn interpreter(given: &str, path: &Path) -> Result<Option<Interpreter>> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // Only an executable regular file can be a script, as for execve; anything else (a FIFO
    // would block the open) is left to the program checks, which say why it cannot run.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
        _ => return Ok(None),
    }
    let mut head = Vec::with_capacity(LINE_MAX);
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(f) => f.take(LINE_MAX as u64).read_to_end(&mut head).map(|_| ()).unwrap_or(()),
        // Not readable: the program checks say why.
        Err(_) => return Ok(None),
    }
    match parse(given, &head)? {
        Some(interp) => Ok(Some(interp)),
        None if !head.starts_with(b"\x7fELF") && !binary(&head) => {
            Ok(Some(Interpreter { path: "/bin/sh".to_string(), arg: None }))
        }
        None => Ok(None),
    }
}

/// Whether a file that starts with `head` is a binary: a NUL byte before the end of its first
/// line (bash's test before it runs a file execve refused as a shell script).
fn binary(head: &[u8]) -> bool {
    head.iter().take_while(|&&b| b != b'\n').any(|&b| b == 0)
}

pub fn parse(given: &str, head: &[u8]) -> Result<Option<Interpreter>> {
    let Some(rest) = head.strip_prefix(b"#!") else {
        return Ok(None);
    };
    let bad = |why: &str| Error::with_status(format!("{given}: bad interpreter line: {why}"), CANNOT_EXECUTE);
    let spacetab = |b: &u8| *b == b' ' || *b == b'\t';
    let line = match rest.iter().position(|&b| b == b'\n') {
        Some(end) => &rest[..end],
        None if head.len() < LINE_MAX => rest,
        None => {
            // No line end in the first 256 bytes: Linux takes the first 255 as the line if the
            // interpreter's name ends in them (a blank or NUL after it), cutting the argument
            // short; else the name itself may be cut, and the file is no script it can run.
            let line = &rest[..LINE_MAX - 3];
            let Some(name) = line.iter().position(|b| !spacetab(b)) else { return Err(bad("no interpreter")) };
            if !line[name..].iter().any(|b| spacetab(b) || *b == 0) {
                return Err(bad("longer than 256 bytes"));
            }
            line
        }
    };
    // The line is read as C strings: a NUL ends it (the interpreter's name, or its argument).
    let line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
    let line = std::str::from_utf8(line).map_err(|_| bad("not valid UTF-8"))?;
    let line = line.trim_matches(|c| c == ' ' || c == '\t');
    let (path, arg) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], line[i..].trim_matches(|c| c == ' ' || c == '\t')),
        None => (line, ""),
    };
    if path.is_empty() {
        return Err(bad("no interpreter"));
    }
    Ok(Some(Interpreter { path: path.to_string(), arg: (!arg.is_empty()).then(|| arg.to_string()) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interp(line: &str) -> Option<Interpreter> {
        parse("s", line.as_bytes()).unwrap()
    }

    #[test]
    fn binaries_are_told_from_shell_scripts_by_their_first_line() {
        assert!(binary(b"\x01\x00abc\n"));
        assert!(!binary(b"echo hi\n\x00"));
        assert!(!binary(b""));
    }

    #[test]
    fn lines_split_as_linux_does() {
        let i = |p: &str, a: Option<&str>| Some(Interpreter { path: p.into(), arg: a.map(Into::into) });
        assert_eq!(interp("#!/bin/x\necho"), i("/bin/x", None));
        assert_eq!(interp("#!  /bin/x  -a b  \n"), i("/bin/x", Some("-a b")));
        assert_eq!(interp("#!/bin/x\t-f\n"), i("/bin/x", Some("-f")));
        assert_eq!(interp("\x7fELF"), None);
        assert!(parse("s", b"#!   \n").is_err());
        assert!(parse("s", &[b"#!/".as_slice(), &[b'a'; 300]].concat()).is_err());
        // A long line whose name ends in the first 255 bytes: the argument is cut there.
        let long = [b"#!/bin/x ".as_slice(), &[b'a'; 300]].concat();
        assert_eq!(parse("s", &long[..256]).unwrap(), i("/bin/x", Some(&"a".repeat(246))));
        assert_eq!(interp("#!/bin/x\0 -a\n"), i("/bin/x", None));
    }
}
