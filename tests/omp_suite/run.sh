#!/usr/bin/env bash
# Runs an OpenMP test suite that nobody here wrote, built with gcc and its libgomp: natively,
# then under `hrt run` with --omp kernel and --omp libgomp. The suite is not part of this
# repository; pass the directory that holds it.
#
# Usage: bash tests/omp_suite/run.sh KIND SUITE_DIR [WORK_DIR]
#   KIND       llvm:  LLVM's OpenMP runtime tests (openmp/runtime/test of llvm/llvm-project;
#                     SUITE_DIR is that `runtime/test` directory or one containing it)
#              ompvv: the OpenMP Validation and Verification suite (github
#                     OpenMP-Validation-and-Verification/OpenMP_VV; SUITE_DIR holds tests/ and
#                     ompvv/), its C tests (offloading ones run on the host, as gcc 12 builds
#                     them without an offload device)
#              gomp:  GCC's own libgomp testsuite (libgomp/testsuite of gcc, the release matching
#                     the installed gcc; SUITE_DIR is gcc's source tree, its libgomp/ or
#                     libgomp/testsuite/), the C tests of libgomp.c/ and libgomp.c-c++-common/
#              gomp-fortran: the Fortran tests of the same testsuite (libgomp.fortran/), built
#                     with gfortran at -O2 (libgomp's testsuite builds them at several levels)
#              gomp-c++: its C++ tests as libgomp's testsuite runs them: libgomp.c++/*.C and
#                     libgomp.c-c++-common/*.c compiled as C++, with g++
#              examples: the OpenMP ARB's examples (github OpenMP/Examples; SUITE_DIR is that
#                     repository), the C and C++ sources that are complete programs
#   WORK_DIR   where binaries and logs go (default target/omp-suite-KIND)
# Environment:
#   LINKS="pie static dyn"        how to link (gcc -static-pie / -static / default dynamic)
#   CONFIGS="2:unset 2:1 2:3"     CPUS:OMP_NUM_THREADS pairs to run under hrt ("unset" = not set)
#   RUNTIMES="kernel libgomp"     the --omp values
#   REPEAT=1                      runs per case under hrt (a case passes only if all pass)
#   HRT=path                      the hrt binary (default target/release/hrt)
#   TIMEOUT=60                    seconds per run
#   SKIP=REGEX                    leave out tests whose path matches (e.g. LLVM's tasking tests
#                                 that sleep 1 s per task: tasking/omp_task.c takes ~125 s)
#   ONLY=REGEX                    run only the selected tests whose path matches
#
# Selection (llvm): every .c test outside ompt/ and affinity/ that gcc can run: not marked
# `REQUIRES: ompt/affinity/hwloc` or `UNSUPPORTED:`/`XFAIL:` for gcc, not using LLVM-only
# kmp_*/__kmpc_* interfaces, with a RUN line that runs it. Each RUN line that runs the program
# is one case, with its environment and arguments (FileCheck patterns are not checked).
# Selection (ompvv): every .c test under tests/ that uses neither the `allocate` directive nor
# `uses_allocators` (which gcc 12 does not build); `target` and `teams` tests included: gcc 12
# runs them on the host (libgomp's host fallback). Tests gcc cannot build are left out when
# their build fails.
# Selection (gomp): gomp-dg.pl reads each test's DejaGnu directives: the tests libgomp's
# testsuite runs on x86_64 Linux (`dg-do run`, its default when absent, with a target selector
# that holds), built with -fopenmp, dg-options (default -O2) and the dg-additional-options and
# dg-additional-sources that apply here, run with their dg-set-target-env-var variables (natively
# and under hrt). Left out: dg-do compile/link, dg-skip-if everywhere, tests that
# need an offload device or offload compiler (offload_device*, nvptx, -foffload). A
# dg-shouldfail test passes when it fails (with the status it has natively); a test with
# dg-output patterns passes only when its output (stdout and stderr) matches them
# (gomp-dg.pl --output). libgomp's internal headers (libgomp_g.h) are found when SUITE_DIR
# is gcc's tree. gomp-fortran: the same rules, -O2 unless dg-options say otherwise; each test is
# built in a directory of its own (modules). gomp-c++: the same rules, the `c++` effective
# target instead of `c`.
# Selection (examples): every */sources/*.c and *.cpp tagged `@@operation: run` and `@@expect:
# success`, built with gcc or g++ -fopenmp -O2 and run with its `@@env` variables. Its sorted
# stdout is compared with the native run's, unless it differs between three native runs (the
# output depends on timing: then the exit status only; results.txt names these).
# The native run uses as many CPUs as the guest has vCPUs (taskset) when that is fewer than the
# host's: the default team size, the places and the affinity routines follow the CPU count.
# A case counts when it builds and passes natively (exit status 0, or for gomp's dg-shouldfail
# tests a failure status, and its dg-output) under the same OMP_NUM_THREADS; it passes under hrt
# when it ends with the same status as natively and matches its dg-output. Prints one summary
# line per (link, config); details are in WORK_DIR/results.txt and WORK_DIR/logs/.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage="usage: run.sh llvm|ompvv|gomp|gomp-fortran|gomp-c++|examples SUITE_DIR [WORK_DIR]"
kind="${1:?$usage}"
suite="${2:?$usage}"
lang=c
case "$kind" in
llvm)
    [ -d "$suite/runtime/test" ] && suite="$suite/runtime/test"
    [ -f "$suite/omp_testsuite.h" ] || { echo "no omp_testsuite.h in $suite" >&2; exit 2; }
    include="$suite"
    ;;
ompvv)
    [ -f "$suite/ompvv/ompvv.h" ] || { echo "no ompvv/ompvv.h in $suite" >&2; exit 2; }
    include="$suite/ompvv"
    ;;
examples)
    [ -f "$suite/openmp-examples.tex" ] || { echo "no openmp-examples.tex in $suite" >&2; exit 2; }
    include="$suite"
    ;;
gomp | gomp-fortran | gomp-c++)
    [ "$kind" = gomp-fortran ] && lang=fortran
    [ "$kind" = gomp-c++ ] && lang=c++
    [ -d "$suite/libgomp/testsuite" ] && suite="$suite/libgomp/testsuite"
    [ -d "$suite/testsuite/libgomp.c" ] && suite="$suite/testsuite"
    [ -d "$suite/libgomp.c" ] || { echo "no libgomp.c/ in $suite" >&2; exit 2; }
    include="$suite/.."
    ;;
*) echo "unknown suite kind $kind (llvm, ompvv, gomp, gomp-fortran, gomp-c++ or examples)" >&2; exit 2 ;;
esac
suite="$(cd "$suite" && pwd)"
include="$(cd "$include" && pwd)"
work="${3:-$root/target/omp-suite-$kind}"
links="${LINKS:-pie static dyn}"
configs="${CONFIGS:-2:unset 2:1 2:3}"
runtimes="${RUNTIMES:-kernel libgomp}"
repeat="${REPEAT:-1}"
hrt="${HRT:-$root/target/release/hrt}"
timeout_s="${TIMEOUT:-60}"
mkdir -p "$work/bin" "$work/logs" "$work/cwd"
# Absolute paths: the programs run in $work/cwd (some tests write files where they run).
work="$(cd "$work" && pwd)"
[ -x "$hrt" ] && hrt="$(realpath "$hrt")"
: >"$work/summary.txt"

# --- selection -------------------------------------------------------------------------------
skipped() {
    { [ -n "${SKIP:-}" ] && grep -qE "$SKIP" <<<"$1"; } || { [ -n "${ONLY:-}" ] && ! grep -qE "$ONLY" <<<"$1"; }
}

selected_llvm() {
    find "$suite" -name '*.c' -not -path '*/ompt/*' -not -path '*/affinity/*' | sort |
        while read -r f; do
            grep -qE '^// *REQUIRES:.*(ompt|affinity|hwloc)' "$f" && continue
            grep -qP '^// *(UNSUPPORTED|XFAIL):.*\bgcc\b(?!-)' "$f" && continue
            # (-c, not -q: an early exit of the second grep could end the first with SIGPIPE, and
            # pipefail then failed the pipeline whatever it found, keeping a kmp_ test at random)
            [ "$(grep -v '^// *RUN' "$f" | grep -cE '\bkmp_|__kmpc|\bKMP_[A-Z]')" != 0 ] && continue
            grep -qE '^// *RUN:.*(%libomp-run|%libomp-compile-and-run)' "$f" || continue
            skipped "$f" || echo "$f"
        done
}

selected_ompvv() {
    find "$suite/tests" -name '*.c' | sort | while read -r f; do
        grep -qE 'uses_allocators|omp +allocate' "$f" && continue
        skipped "$f" || echo "$f"
    done
}

selected_examples() {
    find "$suite" -path '*/sources/*' \( -name '*.c' -o -name '*.cpp' \) | sort | while read -r f; do
        grep -qE '@@operation:\s*run\b' "$f" && grep -qE '@@expect:\s*success\b' "$f" || continue
        skipped "$f" || echo "$f"
    done
}

selected_gomp() {
    local -a dirs=("$suite/libgomp.c" "$suite/libgomp.c-c++-common") names=(-name '*.c')
    if [ "$kind" = gomp-fortran ]; then
        dirs=("$suite/libgomp.fortran")
        names=(-regex '.*\.[fF]\(\|90\|95\|03\|08\)')
    elif [ "$kind" = gomp-c++ ]; then
        dirs=("$suite/libgomp.c++" "$suite/libgomp.c-c++-common")
        names=(-regex '.*/libgomp\.c\+\+/.*\.C\|.*/libgomp\.c-c\+\+-common/.*\.c')
    fi
    find "${dirs[@]}" -maxdepth 1 -type f "${names[@]}" | sort |
        while read -r f; do
            perl "$here/gomp-dg.pl" --lang "$lang" "$f" | grep -q '^flags' || continue
            skipped "$f" || echo "$f"
        done
}

# gomp_dg FILE WHAT: the flags, sources or env line gomp-dg.pl prints for FILE.
gomp_dg() { perl "$here/gomp-dg.pl" --lang "$lang" "$1" | sed -n "s/^$2 *//p"; }
gomp_kind() { [[ "$kind" == gomp* ]]; }

# cases FILE: one line per way to run the program: "ENV_ASSIGNMENTS|ARGS".
cases() {
    if gomp_kind; then
        echo "$(gomp_dg "$1" env)|"
        return
    fi
    if [ "$kind" = examples ]; then
        # `@@env: A=1 B="x y"` lines: the assignments, unquoted, separated by \x1f.
        perl -ne 'if (/\@\@env:(.*)/) { my $l = $1; push @e, "$1=" . ($2 // $3)
            while $l =~ /([A-Z_]+)=(?:"([^"]*)"|(\S+))/g } END { print join("\x1f", @e), "|\n" }' "$1"
        return
    fi
    if [ "$kind" != llvm ]; then
        echo "|"
        return
    fi
    grep -E '^// *RUN:.*(%libomp-run|%libomp-compile-and-run)' "$1" | while read -r line; do
        line="${line#*RUN:}"
        line="${line##*&&}" # the last command of `compile && run`
        line="${line%%|*}"  # drop `| FileCheck ...`
        local envs="" args=""
        envs="$(grep -oE "[A-Z_]+=('[^']*'|[^ ]+)" <<<"${line%%%libomp-*}" | tr -d "'" | tr '\n' ' ')"
        case "$line" in
        *%libomp-run*) args="${line#*%libomp-run}" ;;
        esac
        # shellcheck disable=SC2086
        echo "${envs% }|$(echo $args)"
    done | sort -u
}

test_name() {
    local name
    name="$(realpath --relative-to="$suite" "$1" | tr '/' '_')"
    echo "${name%.*}"
}
selected_gomp-fortran() { selected_gomp; }
selected_gomp-c++() { selected_gomp; }

# The linker flags a static gfortran OpenMP program needs (fortran_static).
# shellcheck source=../programs/fortran_static.sh
source "$root/tests/programs/fortran_static.sh"
export FORTRAN_STATIC="${fortran_static[*]}"

# --- build -----------------------------------------------------------------------------------
build_one() {
    local f="$1" link="$2" name out flags=() test_flags=(-fopenmp -O2) src
    local -a sources=()
    name="$(realpath --relative-to="$suite" "$f" | tr '/' '_')"
    name="${name%.*}"
    out="$work/bin/$name.$link"
    case "$link" in
    pie) flags=(-static-pie) ;;
    static) flags=(-static) ;;
    dyn) flags=() ;;
    esac
    [ "$out" -nt "$f" ] && return 0
    if [ "$kind" = gomp-fortran ]; then
        read -ra test_flags <<<"$(gomp_dg "$f" flags)"
        for src in $(gomp_dg "$f" sources); do sources+=("$(dirname "$f")/$src"); done
        # shellcheck disable=SC2206
        [ "$link" != dyn ] && flags+=($FORTRAN_STATIC)
        local dir
        dir="$(mktemp -d)"
        # The test's directory for its `include` files and its own for the modules it writes.
        (cd "$dir" && gfortran "${test_flags[@]}" -w "${flags[@]}" -I "$(dirname "$f")" -o "$out" \
            "$f" "${sources[@]}" -lm -lpthread) >"$work/logs/$name.$link.build" 2>&1 || rm -f "$out"
        rm -rf "$dir"
        return 0
    fi
    local cc=gcc
    [ "$kind" = examples ] && flags+=(-I "$(dirname "$f")") && [[ "$f" == *.cpp ]] && cc=g++
    if [ "$kind" = gomp ] || [ "$kind" = gomp-c++ ]; then
        read -ra test_flags <<<"$(gomp_dg "$f" flags)"
        for src in $(gomp_dg "$f" sources); do sources+=("$(dirname "$f")/$src"); done
        flags+=(-I "$include/../include")
    fi
    # g++ compiles the .c files of libgomp.c-c++-common as C++ too.
    [ "$kind" = gomp-c++ ] && cc=g++
    "$cc" "${test_flags[@]}" -w "${flags[@]}" -I "$include" -o "$out" "$f" "${sources[@]}" -lm -lpthread \
        >"$work/logs/$name.$link.build" 2>&1 || rm -f "$out"
}
export -f build_one gomp_dg gomp_kind
export suite work include kind here lang

"selected_$kind" >"$work/selected.txt"
echo "selected $(wc -l <"$work/selected.txt") tests in $suite"
for link in $links; do
    sed "s/\$/ $link/" "$work/selected.txt" | xargs -P "$(nproc)" -n 2 bash -c 'build_one "$0" "$1"'
    echo "$link: $(ls "$work/bin" | grep -c "\.$link\$") built"
done

# --- runs ------------------------------------------------------------------------------------
# judge FILE EXPECT ST LOG: prints PASS when a run that ended with status ST and wrote LOG
# passes: ST is EXPECT (0, or for a gomp dg-shouldfail test `fail` natively, any failure but a
# timeout, and under hrt the native status), LOG matches the test's dg-output patterns, and
# (examples) LOG's sorted lines are those of $ref when that is set.
judge() {
    local f="$1" expect="$2" st="$3" log="$4"
    if [ -n "${ref:-}" ] && ! sort "$log" | cmp -s - "$ref"; then
        echo "FAIL($st, stdout differs)"
        return
    fi
    if [ "$expect" = fail ]; then
        if [ "$st" = 0 ] || [ "$st" = 124 ]; then
            echo "FAIL($st, should fail)"
            return
        fi
    elif [ "$st" != "$expect" ]; then
        echo "FAIL($st)"
        return
    fi
    if gomp_kind && ! perl "$here/gomp-dg.pl" --lang "$lang" --output "$f" "$log" >>"$log"; then
        echo "FAIL($st, dg-output)"
        return
    fi
    echo PASS
}

# launch LOG COMMAND...: runs COMMAND (under the time limit) with its output in LOG; the
# examples' stderr goes to LOG.stderr (their stdout is compared).
launch() {
    local log="$1"
    shift
    if [ "$kind" = examples ]; then
        timeout "$timeout_s" "$@" >"$log" 2>"$log.stderr"
    else
        timeout "$timeout_s" "$@" >"$log" 2>&1
    fi
}

# run_case MODE FILE EXPECT BIN ENVS ARGS CPUS NT LOG: MODE native or a --omp value; prints
# judge's verdict, and the exit status of the last run on a second line.
run_case() {
    local mode="$1" f="$2" expect="$3" bin="$4" envs="$5" args="$6" cpus="$7" nt="$8" log="$9"
    local i st=0 n=1 verdict
    local -a envv=(env -u OMP_NUM_THREADS) more cmd=("$bin")
    [ "$nt" != unset ] && envv+=("OMP_NUM_THREADS=$nt")
    # Variables separated by \x1f (values with spaces: the examples' @@env), else by spaces.
    if [[ "$envs" == *$'\x1f'* ]]; then
        IFS=$'\x1f' read -ra more <<<"$envs"
    else
        read -ra more <<<"$envs"
    fi
    envv+=("${more[@]}")
    if [ "$mode" != native ]; then
        n="$repeat" && cmd=("$hrt" run --cpus "$cpus" --omp "$mode" -- "$bin")
    elif [ "$cpus" -lt "$host_cpus" ]; then
        # Like with like: natively on as many CPUs as the guest has (the default team size,
        # the places and what the affinity routines report follow the CPU count).
        cmd=(taskset -c "0-$((cpus - 1))" "$bin")
    fi
    for ((i = 0; i < n; i++)); do
        # shellcheck disable=SC2086
        launch "$log" "${envv[@]}" "${cmd[@]}" $args
        st=$?
        verdict="$(judge "$f" "$expect" "$st" "$log")"
        [ "$verdict" = PASS ] || break
    done
    echo "$verdict"
    echo "$st"
}

# reference FILE BIN ENVS ARGS CPUS NT LOG: for the examples, after a native run that passed and
# wrote LOG: prints the file holding its sorted stdout when two more native runs print the
# same lines; prints nothing (the output depends on timing) when not.
reference() {
    local f="$1" bin="$2" envs="$3" args="$4" cpus="$5" nt="$6" log="$7" i verdict
    [ "$kind" = examples ] || return 0
    sort "$log" >"$log.sorted"
    for i in 1 2; do
        { read -r verdict; read -r _; } < <(ref="$log.sorted" run_case native "$f" 0 "$bin" "$envs" "$args" "$cpus" "$nt" "$log.again")
        [ "$verdict" = PASS ] || return 0
    done
    echo "$log.sorted"
}

host_cpus="$(nproc)"
results="$work/results.txt"
cd "$work/cwd" || exit 2
: >"$results"
for link in $links; do
    for cfg in $configs; do
        cpus="${cfg%%:*}" nt="${cfg#*:}"
        declare -A total=() pass=()
        while read -r f; do
            name="$(test_name "$f")"
            bin="$work/bin/$name.$link"
            [ -x "$bin" ] || continue
            n=0
            while IFS='|' read -r envs args; do
                n=$((n + 1))
                id="$name#$n.$link.c$cpus.t$nt"
                expect=0
                gomp_kind && [ "$(gomp_dg "$f" shouldfail)" = yes ] && expect=fail
                { read -r verdict; read -r st; } < <(ref="" run_case native "$f" "$expect" "$bin" "$envs" "$args" "$cpus" "$nt" "$work/logs/$id.native")
                total[native]=$((${total[native]:-0} + 1))
                if [ "$verdict" != PASS ]; then
                    echo "$id native $verdict [$envs] $args" >>"$results"
                    continue
                fi
                pass[native]=$((${pass[native]:-0} + 1))
                native_ref="$(reference "$f" "$bin" "$envs" "$args" "$cpus" "$nt" "$work/logs/$id.native")"
                [ "$kind" = examples ] && [ -z "$native_ref" ] && echo "$id native output varies: exit status compared" >>"$results"
                for rt in $runtimes; do
                    { read -r verdict; read -r _; } < <(ref="$native_ref" run_case "$rt" "$f" "$st" "$bin" "$envs" "$args" "$cpus" "$nt" "$work/logs/$id.$rt")
                    total[$rt]=$((${total[$rt]:-0} + 1))
                    if [ "$verdict" = PASS ]; then
                        pass[$rt]=$((${pass[$rt]:-0} + 1))
                    else
                        echo "$id $rt $verdict [$envs] $args" >>"$results"
                    fi
                done
            done < <(cases "$f")
        done <"$work/selected.txt"
        line="$link cpus=$cpus OMP_NUM_THREADS=$nt: native ${pass[native]:-0}/${total[native]:-0}"
        for rt in $runtimes; do
            line+="; --omp $rt ${pass[$rt]:-0}/${total[$rt]:-0}"
        done
        echo "$line" | tee -a "$work/summary.txt"
        unset total pass
    done
done
grep FAIL "$results" | grep -v ' native ' || true
