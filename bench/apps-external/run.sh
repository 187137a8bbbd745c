#!/usr/bin/env bash
# Runs the OpenMP apps that bench/apps-external/build.sh built (BOTS, LULESH, XSBench, RSBench,
# STREAM, miniFE, Rodinia codes) natively and under `hrt run`, checks each run's result, and
# prints one line per run and a table of medians (bench/npb/run.sh's table).
#
#   bench/apps-external/run.sh [options] BINDIR [NAME ...]     (default: every app below)
#     -t "1 2 4"                  thread counts (OMP_NUM_THREADS; `hrt run --cpus` the same)
#     -m "native libgomp kernel"  modes: native, or `hrt run --omp` libgomp|kernel|auto
#     -r 1                        repetitions, interleaved (the table shows the median)
#     -T 300                      timeout of one run, seconds
#     -o FILE                     also append the per-run lines to FILE
#   bench/apps-external/run.sh -s "MODES" FILE...   only the table, from RUN lines saved with -o
# Environment: HRT (default: target/release/hrt of this checkout), HRT_ARGS (extra options).
# Per-run line: RUN <name> threads=<n> mode=<m> rc=<exit status> verified=<yes|no>
# time=<the program's own seconds, or the wall time> wall=<seconds>.
# verified: the program's own check passed (BOTS, STREAM, lud), or its result lines are those
# of the native run at the same thread count (the others; run native first, as -m's default).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/run_options.sh
. "$here/../common/run_options.sh"
limit=300
usage() { sed -n '2,18p' "$0" >&2; exit 2; }
run_options "$@"
shift $((OPTIND - 1))
if [ -n "$summary" ]; then
    exec "$here/../npb/run.sh" -s "$summary" "$@"
fi
bin=$(realpath "$1")
shift

# name | binary (under BINDIR) | arguments (@N: the thread count, @IN: BOTS's inputs) | result lines (regex) |
# time (sed expression printing the program's seconds; empty: wall time) | file it writes, whose
# checksum is a result too. Inputs are the smallest that run 0.1-2 s natively here.
# XSBench and RSBench are told the thread count (`-t`): by default they take
# omp_get_num_procs(), not OMP_NUM_THREADS, so a "1 thread" row compared HRT on one vCPU with
# as many native threads as the host has CPUs (their offload versions have no `-t`).
# Left out as not comparable: miniFE's later residuals and Rodinia's streamcluster above one
# thread depend on the order of a floating-point reduction (streamcluster also races on its
# `lower` array), and Rodinia's particlefilter and lavaMD seed their inputs with the time.
bots_time='s/^Time Program *= *\([0-9.]*\).*/\1/p'
bots_ok='Verification += successful'
apps() {
    local b
    for b in bots bots-pie; do
        cat << EOF
$b.fib|$b/fib.gcc.omp-tasks|-n 25 -c|$bots_ok|$bots_time|
$b.nqueens|$b/nqueens.gcc.omp-tasks|-n 10 -c|$bots_ok|$bots_time|
$b.sort|$b/sort.gcc.omp-tasks|-n 1048576 -c|$bots_ok|$bots_time|
$b.sparselu|$b/sparselu.gcc.single-omp-tasks|-n 20 -m 40 -c|$bots_ok|$bots_time|
$b.strassen|$b/strassen.gcc.omp-tasks|-n 512 -c|$bots_ok|$bots_time|
$b.health|$b/health.gcc.omp-tasks|-f @IN/health/test.input -c|$bots_ok|$bots_time|
$b.floorplan|$b/floorplan.gcc.omp-tasks|-f @IN/floorplan/input.5 -c|$bots_ok|$bots_time|
$b.uts|$b/uts.gcc.omp-tasks|-f @IN/uts/test.input -c|$bots_ok|$bots_time|
$b.alignment|$b/alignment.gcc.for-omp-tasks|-f @IN/alignment/prot.20.aa -c|$bots_ok|$bots_time|
$b.fft|$b/fft.gcc.omp-tasks|-n 262144 -c|$bots_ok|$bots_time|
EOF
    done
    cat << 'EOF'
lulesh|lulesh|-s 8 -i 20|Final Origin|MaxAbsDiff|TotalAbsDiff|MaxRelDiff|Iteration count|s/^Elapsed time *= *\([0-9.]*\).*/\1/p|
xsbench|xsbench|-s small -m event -l 100000 -G nuclide -t @N|checksum|s/^Runtime: *\([0-9.]*\).*/\1/p|
xsbench-offload|xsbench-offload|-s small -m event -l 50000 -G nuclide|checksum|s/^Runtime: *\([0-9.]*\).*/\1/p|
rsbench-pie|rsbench-pie|-s small -m event -l 100000 -t @N|checksum|s/^Runtime: *\([0-9.]*\).*/\1/p|
rsbench-offload-pie|rsbench-offload-pie|-s small -m event -l 50000|checksum|s/^Runtime: *\([0-9.]*\).*/\1/p|
stream-pie|stream-pie||Solution Validates||
minife|minife|nx=24 ny=24 nz=24|Initial Residual|Iteration = 20 ||
backprop|backprop|65536|Training done||
lud|lud|-s 512 -v -n @N|Verify|mismatch||
nw|nw|1024 10 @N|Processing||result.txt
pathfinder-pie|pathfinder-pie|100000 100|^[0-9 ]+$||
srad2|srad2|128 128 0 31 0 31 @N 0.5 10|^[0-9. ]+$||
EOF
}
# Each field is split on the last four '|'; the regex may itself contain '|'.
field() { awk -F'|' -v k="$2" '{ n = NF; if (k == 1) print $1; else if (k == 2) print $2; else if (k == 3) print $3; else if (k == 4) { s = $4; for (i = 5; i <= n - 2; i++) s = s "|" $i; print s } else if (k == 5) print $(n - 1); else print $n }' <<< "$1"; }

# Programs whose own check decides (a line that must appear); the others compare with native.
self_checked() { case $1 in bots*|stream-pie) return 0 ;; *) return 1 ;; esac; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%FT%TZ) host CPUs=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"

run_one() {
    local spec=$1 n=$2 mode=$3 name prog args want tsed file out=$work/out.txt
    name=$(field "$spec" 1) prog=$bin/$(field "$spec" 2) args=$(field "$spec" 3)
    want=$(field "$spec" 4) tsed=$(field "$spec" 5) file=$(field "$spec" 6)
    args=${args//@N/$n}
    args=${args//@IN/$bin/bots-inputs}
    local cmd
    # shellcheck disable=SC2206
    if [ "$mode" = native ]; then cmd=("$prog" $args); else cmd=("$hrt" run --cpus "$n" --omp "$mode" ${HRT_ARGS:-} -- "$prog" $args); fi
    mkdir -p "$work/cwd" && rm -f "$work/cwd/$file" 2> /dev/null
    local start end rc
    start=$(date +%s.%N)
    (cd "$work/cwd" && OMP_NUM_THREADS=$n timeout "$limit" "${cmd[@]}" > "$out" 2>&1 < /dev/null)
    rc=$?
    end=$(date +%s.%N)
    local res=$work/$name.$n.$mode.res
    grep -aE "$want" "$out" | sed -E 's/[0-9]+\.[0-9]+ *(seconds|s)$//' > "$res"
    [ -n "$file" ] && { md5sum < "$work/cwd/$file" >> "$res" 2> /dev/null || echo none >> "$res"; }
    local verified=no time
    if self_checked "$name"; then
        [ -s "$res" ] && [ $rc -eq 0 ] && verified=yes
    elif [ "$mode" = native ]; then
        cp "$res" "$work/$name.$n.ref"
        [ -s "$res" ] && verified=yes
    elif [ -s "$res" ] && cmp -s "$res" "$work/$name.$n.ref" && [ "$rc" = "$(cat "$work/$name.$n.rc")" ]; then
        verified=yes
    fi
    [ "$mode" = native ] && echo "$rc" > "$work/$name.$n.rc"
    time=""
    [ -n "$tsed" ] && time=$(sed -n "$tsed" "$out" | head -1)
    [ -n "$time" ] || time=$(echo "$end - $start" | bc | sed 's/^\./0./')
    [ $rc -eq 124 ] && rc=timeout
    printf 'RUN %s threads=%s mode=%s rc=%s verified=%s time=%s wall=%.2f\n' \
        "$name" "$n" "$mode" "$rc" "$verified" "$time" "$(echo "$end - $start" | bc)" | tee -a "$log"
    [ "$verified" = no ] && tail -5 "$out" | sed 's/^/#   /'
}

all=$work/all.txt
apps | while IFS= read -r spec; do
    name=$(field "$spec" 1)
    if [ $# -gt 0 ]; then
        case " $* " in *" $name "*) ;; *) continue ;; esac
    fi
    [ -x "$bin/$(field "$spec" 2)" ] || { echo "# $name: not built, skipped"; continue; }
    for n in $threads; do
        for _ in $(seq "$reps"); do
            for mode in $modes; do
                run_one "$spec" "$n" "$mode"
            done
        done
    done
done | tee -a "$all"
echo "# $(date -u +%FT%TZ) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$here/../npb/run.sh" -s "$modes" "$all"
