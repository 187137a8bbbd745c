# shellcheck shell=bash
# The options bench/npb/run.sh and bench/apps-external/run.sh share (their headers describe
# them): sets hrt (HRT, or target/release/hrt of this checkout), threads, modes, reps, limit
# (the caller's value is the default), log and summary, and calls the caller's `usage` on a bad
# option or when no argument follows the options. The caller then shifts $((OPTIND - 1)).
run_options() {
    hrt=${HRT:-$(dirname "${BASH_SOURCE[0]}")/../../target/release/hrt}
    threads="1 2 4" modes="native libgomp kernel" reps=1 log=/dev/null summary=""
    local opt
    OPTIND=1
    while getopts "t:m:r:T:o:s:" opt; do
        case $opt in
            t) threads=$OPTARG ;;
            m) modes=$OPTARG ;;
            r) reps=$OPTARG ;;
            T) limit=$OPTARG ;;
            o) log=$OPTARG ;;
            s) summary=$OPTARG ;;
            *) usage ;;
        esac
    done
    [ $# -ge "$OPTIND" ] || usage
}
