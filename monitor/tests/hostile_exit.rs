//! Two ends of the program at once: a thread dies of SIGABRT while the main thread exits.
//! Whichever wins, the report on stderr and the exit status must belong to the same end
//! (before the fix, hrt could print "Aborted" and exit 0). The runs vary the main thread's
//! delay so both orders occur; the test checks the invariant, not which end wins.

mod common;
use common::hostile::{build, hrt};

#[test]
fn report_and_status_belong_to_the_same_end() {
    let prog = build("exit_race", &[]);
    for delay in ["0", "1000", "100000", "0", "10000", "0"] {
        for cpus in ["2", "4"] {
            let got = hrt(&["--cpus", cpus], &prog, &[delay]);
            assert!(!got.hung, "exit_race {delay} hung");
            let aborted = got.stderr.contains("Aborted");
            match got.code() {
                134 => assert!(aborted, "status 134 without the report: {got:?}"),
                0 => assert!(!aborted, "\"Aborted\" reported but status 0: {got:?}"),
                other => panic!("exit_race --cpus {cpus} {delay}: status {other}: {got:?}"),
            }
        }
    }
}
