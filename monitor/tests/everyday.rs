//! Everyday programs under `hrt run` (issue 13): shell command lines that use the tools a
//! script uses, each run natively and as `hrt run --children hrt sh -c LINE` (every program the
//! line starts is an HRT process of its own) and as `hrt run sh -c LINE` (its children run on
//! the host), with the same output and exit status. Each line once failed or differed under
//! hrt, or covers a call it needs: `script` (a signalfd for SIGCHLD, a pseudo-terminal), `tail
//! -f` (inotify), `mkfifo` (mknod), the umask, `cp -a` (setting xattrs), Python's subprocess
//! (close_range), threads, json and loopback sockets, and the usual pipelines.

mod common;
use common::hostile::{assert_same, hrt_cmd, run};
use std::process::Command;

/// Runs `line` with `sh -c` natively, then under hrt with both kinds of children, in `dir`:
/// the same status, stdout and stderr.
fn same_as_linux(dir: &std::path::Path, line: &str) {
    let mut native = Command::new("sh");
    native.current_dir(dir).args(["-c", line]);
    let linux = run(native, None);
    for children in ["hrt", "host"] {
        let mut cmd = hrt_cmd();
        cmd.current_dir(dir).args(["run", "--cpus", "2", "--children", children, "--", "sh", "-c", line]);
        let got = run(cmd, None);
        let what = format!("{line} (--children {children})");
        assert_same(&what, &linux, &got);
        // Nothing said about a call hrt lacks, no tool's complaint natively absent.
        assert_eq!(linux.stderr, got.stderr, "{what}: stderr");
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hrt-everyday-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn shell_tools_behave_as_on_linux() {
    let dir = scratch("tools");
    for line in [
        "mkdir -p d && echo hello > d/x && tar czf a.tgz d && rm -r d && tar xzf a.tgz && cat d/x && gzip -c d/x | gunzip; rm -r d a.tgz",
        "printf 'b 2\\na 1\\nc 3\\n' | sort | awk '{s+=$2; print $1} END {print s}' | sed 's/a/A/'",
        "mkdir -p f && touch f/one f/two && find f -type f -exec echo found {} \\; | sort; rm -r f",
        "printf '1\\n2\\n3\\n4\\n' | xargs -P2 -n1 echo | sort",
        "timeout 1 sleep 5; echo status $?",
        "nohup echo hi > /dev/null; echo $?",
        "flock lk -c 'echo locked'; rm lk",
        "date -d @0 -u",
        "env -i /usr/bin/env; echo $?",
        "perl -e 'my $p = fork; if ($p == 0) { exit 7 } waitpid($p, 0); print \"child \", $? >> 8, \"\\n\"; pipe(R, W); print W \"piped\\n\"; close W; print scalar <R>'",
        "mkfifo ff && (echo through the fifo > ff &) && cat ff; rm ff",
        "umask 077 && touch u && mkdir ud && stat -c '%a %n' u ud; rm -r u ud",
        "echo x > src && cp -a src dst && cat dst; rm src dst",
        "script -qc 'echo in a pty' /dev/null | tr -d '\\r'",
        "echo a > tf; : > out; tail -f tf > out & p=$!; echo b >> tf; i=0; until grep -qx b out || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; kill $p; wait $p; cat out; rm tf out",
        "ls -la /proc/self/ | awk '{print $1, $NF}' | grep -v '^total' | sed 's/ ->.*//' | sort | head -5",
    ] {
        same_as_linux(&dir, line);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Python script with subprocess (close_range in the child), threads, json and a socket on
/// the loopback interface.
#[test]
fn python_behaves_as_on_linux() {
    let dir = scratch("python");
    std::fs::write(
        dir.join("t.py"),
        r#"import subprocess, threading, json, socket, sys
print("subprocess:", subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip())
res = []
ts = [threading.Thread(target=lambda i=i: res.append(i * i)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads:", sorted(res))
print("json:", json.dumps({"a": [1, 2, {"b": None}]}, sort_keys=True))
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def serve():
    c, _ = srv.accept(); c.sendall(c.recv(100).upper()); c.close()
t = threading.Thread(target=serve); t.start()
cl = socket.create_connection(srv.getsockname()); cl.sendall(b"ping"); print("socket:", cl.recv(100)); cl.close(); t.join()
p = subprocess.Popen([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("popen:", p.communicate(b"abc")[0])
"#,
    )
    .unwrap();
    same_as_linux(&dir, "python3 t.py 2>&1");
    let _ = std::fs::remove_dir_all(&dir);
}
