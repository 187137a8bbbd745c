//! `hrt run PROG`: a PROG without a slash is looked up in PATH as a shell (execvp) does.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The file to run for `prog`: `prog` itself when it contains a slash, else the first
/// executable regular file `DIR/prog` for DIR in PATH (an empty entry is the working directory;
/// without PATH, execvp's default "/bin:/usr/bin"). None when nothing matches.
pub fn resolve(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Some(PathBuf::from(prog));
    }
    if prog.is_empty() {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    search(prog, &path)
}

fn search(prog: &str, path: &OsString) -> Option<PathBuf> {
    path.as_bytes()
        .split(|&b| b == b':')
        .map(|dir| if dir.is_empty() { PathBuf::from(".") } else { PathBuf::from(OsString::from_vec(dir.to_vec())) })
        .map(|dir| dir.join(prog))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_means_a_path() {
        assert_eq!(resolve("./x"), Some(PathBuf::from("./x")));
        assert_eq!(resolve("/no/such"), Some(PathBuf::from("/no/such")));
    }

    #[test]
    fn first_executable_match_wins() {
        let dir = std::env::temp_dir().join(format!("hrt-path-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        // In a: not executable; in b: executable. A directory of that name is skipped too.
        std::fs::write(a.join("tool"), b"").unwrap();
        std::fs::write(b.join("tool"), b"").unwrap();
        std::fs::set_permissions(b.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(a.join("sub")).unwrap();
        let path = OsString::from(format!("{}:{}", a.display(), b.display()));
        assert_eq!(search("tool", &path), Some(b.join("tool")));
        assert_eq!(search("sub", &path), None);
        assert_eq!(search("missing", &path), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
