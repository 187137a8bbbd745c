#!/usr/bin/env bash
# Runs NAS Parallel Benchmarks 3.4 (OpenMP) binaries natively and under `hrt run`, and prints
# one line per run and a table of medians (the docs/benchmarks.md NPB table).
# NPB is not part of HRT: get NPB3.4.2.tar.gz from https://www.nas.nasa.gov/software/npb.html,
# unpack it, and build it with bench/npb/build.sh (which takes its NPB3.4-OMP directory).
#
#   bench/npb/run.sh [options] BINDIR [NAME.CLASS ...]      (default: every *.x in BINDIR)
#     -t "1 2 4"                  thread counts (OMP_NUM_THREADS; `hrt run --cpus` the same)
#     -m "native libgomp kernel"  modes: native, or `hrt run --omp` libgomp|kernel|auto
#     -r 1                        repetitions, interleaved (the table shows the median)
#     -T 600                      timeout of one run, seconds
#     -o FILE                     also append the per-run lines to FILE
#   bench/npb/run.sh -s "MODES" FILE...   only the table, from RUN lines saved with -o
# Environment: HRT (default: target/release/hrt of this checkout), HRT_ARGS (extra options).
# Per-run line: RUN <name.class> threads=<n> mode=<m> rc=<exit status> verified=<yes|no>
# time=<the benchmark's "Time in seconds", or -> wall=<seconds>.
set -u
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,16p' "$0" >&2; exit 2; }
# shellcheck source=../common/run_options.sh
. "$here/../common/run_options.sh"
limit=600
run_options "$@"
shift $((OPTIND - 1))

# The table from RUN lines in files $2...: per benchmark and thread count, the median of the
# benchmark's own time in each mode of $1, HRT/native ratios of the medians, and whether every
# run verified (else the failures counted).
table() {
    local modes=$1
    shift
    printf '| benchmark | threads |'
    for m in $modes; do printf ' %s |' "$m"; done
    for m in $modes; do [ "$m" = native ] || printf ' %s/native |' "$m"; done
    printf ' verified |\n|---|---|'
    for m in $modes; do printf -- '---|'; [ "$m" = native ] || printf -- '---|'; done
    printf -- '---|\n'
    awk -v modes="$modes" '
        /^RUN / {
            split($3, t, "="); split($4, m, "="); split($6, v, "="); split($7, s, "=")
            row = $2 SUBSEP t[2]; k = row SUBSEP m[2]
            if (!(row in seen)) { seen[row] = 1; order[++rows] = row }
            runs[k]++
            if (v[2] == "yes" && s[2] != "-") times[k] = times[k] " " s[2]; else bad[k]++
        }
        function median(list,   a, n, i, j, x) {
            n = split(list, a, " ")
            if (n == 0) return ""
            for (i = 2; i <= n; i++) {
                x = a[i] + 0
                for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]
                a[j + 1] = x
            }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            nm = split(modes, ms, " ")
            for (i = 1; i <= rows; i++) {
                split(order[i], p, SUBSEP)
                line = "| " p[1] " | " p[2] " |"; ok = "yes"; base = ""
                for (j = 1; j <= nm; j++) {
                    k = order[i] SUBSEP ms[j]; med[j] = median(times[k])
                    if (ms[j] == "native") base = med[j]
                    line = line " " (med[j] == "" ? "-" : med[j]) " |"
                    if (bad[k]) ok = (ok == "yes" ? "" : ok "; ") "no: " ms[j] " " bad[k] " of " runs[k]
                }
                for (j = 1; j <= nm; j++) {
                    if (ms[j] == "native") continue
                    line = line " " ((base + 0 > 0 && med[j] != "") ? sprintf("%.2f", med[j] / base) : "-") " |"
                }
                print line " " ok " |"
            }
        }' "$@"
}

if [ -n "$summary" ]; then
    table "$summary" "$@"
    exit 0
fi

bindir=$(realpath "$1")
shift
if [ $# -gt 0 ]; then names="$*"; else names=$(cd "$bindir" && ls -- *.x | sed 's/\.x$//'); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
echo "# $(date -u +%FT%TZ) host CPUs=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"

# One run; prints its RUN line (and the output's tail when it did not verify).
run_one() {
    local name=$1 n=$2 mode=$3 out=$work/out.txt start end rc cmd
    if [ "$mode" = native ]; then
        cmd=("$bindir/$name.x")
    else
        # shellcheck disable=SC2206
        cmd=("$hrt" run --cpus "$n" --omp "$mode" ${HRT_ARGS:-} -- "$bindir/$name.x")
    fi
    start=$(date +%s.%N)
    OMP_NUM_THREADS=$n timeout "$limit" "${cmd[@]}" > "$out" 2>&1 < /dev/null
    rc=$?
    end=$(date +%s.%N)
    local verified=no time
    grep -Eq 'Verification += +SUCCESSFUL' "$out" && verified=yes
    time=$(sed -n 's/.*Time in seconds = *\([0-9.]*\).*/\1/p' "$out" | head -1)
    [ $rc -eq 124 ] && rc=timeout
    printf 'RUN %s threads=%s mode=%s rc=%s verified=%s time=%s wall=%.2f\n' \
        "$name" "$n" "$mode" "$rc" "$verified" "${time:--}" "$(echo "$end - $start" | bc)" | tee -a "$log"
    if [ "$verified" = no ]; then
        tail -5 "$out" | sed 's/^/#   /'
    fi
}

all=$work/all.txt
for name in $names; do
    for n in $threads; do
        for _ in $(seq "$reps"); do
            for mode in $modes; do
                run_one "$name" "$n" "$mode" | tee -a "$all"
            done
        done
    done
done
echo "# $(date -u +%FT%TZ) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
echo
table "$modes" "$all"
