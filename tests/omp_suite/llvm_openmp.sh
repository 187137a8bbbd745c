#!/usr/bin/env bash
# Runs LLVM's OpenMP runtime tests (openmp/runtime/test of llvm/llvm-project, or a copy of it)
# built with gcc and its libgomp: natively, then under `hrt run` with --omp kernel and --omp
# libgomp. The suite is not part of this repository; pass the directory that holds it.
#
# Usage: bash tests/omp_suite/llvm_openmp.sh SUITE_DIR [WORK_DIR]
#   SUITE_DIR  the `runtime/test` directory (or a directory containing runtime/test)
#   WORK_DIR   where binaries and logs go (default target/llvm-openmp)
# Environment:
#   LINKS="pie static dyn"        how to link (gcc -static-pie / -static / default dynamic)
#   CONFIGS="2:unset 2:1 2:3"     CPUS:OMP_NUM_THREADS pairs to run under hrt ("unset" = not set)
#   RUNTIMES="kernel libgomp"     the --omp values
#   REPEAT=1                      runs per case (a case passes only if all pass)
#   HRT=path                      the hrt binary (default target/release/hrt)
#   TIMEOUT=60                    seconds per run
#   SKIP=REGEX                    leave out tests whose path matches (e.g. the slow tasking
#                                 tests that sleep 1 s per task: omp_task.c takes ~125 s)
#
# Selection: every .c test outside ompt/ and affinity/ that gcc can run: not marked
# `REQUIRES: ompt/affinity/hwloc` or `UNSUPPORTED:`/`XFAIL:` for gcc, not using LLVM-only
# kmp_*/__kmpc_* interfaces, with a RUN line that runs it. Each RUN line that runs the program
# is one case, with its environment and arguments. A case counts when it passes natively (exit
# status 0) under the same OMP_NUM_THREADS; it passes under hrt when its exit status is 0.
# Prints one summary line per (link, runtime, config); details are in WORK_DIR/results.txt and
# WORK_DIR/logs/.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suite="${1:?usage: llvm_openmp.sh SUITE_DIR [WORK_DIR]}"
[ -d "$suite/runtime/test" ] && suite="$suite/runtime/test"
[ -f "$suite/omp_testsuite.h" ] || { echo "no omp_testsuite.h in $suite" >&2; exit 2; }
suite="$(cd "$suite" && pwd)"
work="${2:-$root/target/llvm-openmp}"
links="${LINKS:-pie static dyn}"
configs="${CONFIGS:-2:unset 2:1 2:3}"
runtimes="${RUNTIMES:-kernel libgomp}"
repeat="${REPEAT:-1}"
hrt="${HRT:-$root/target/release/hrt}"
timeout_s="${TIMEOUT:-60}"
mkdir -p "$work/bin" "$work/logs"
: >"$work/summary.txt"

# --- selection -------------------------------------------------------------------------------
selected() {
    find "$suite" -name '*.c' -not -path '*/ompt/*' -not -path '*/affinity/*' | sort |
        while read -r f; do
            grep -qE '^// *REQUIRES:.*(ompt|affinity|hwloc)' "$f" && continue
            grep -qP '^// *(UNSUPPORTED|XFAIL):.*\bgcc\b(?!-)' "$f" && continue
            grep -v '^// *RUN' "$f" | grep -qE '\bkmp_|__kmpc|\bKMP_[A-Z]' && continue
            grep -qE '^// *RUN:.*(%libomp-run|%libomp-compile-and-run)' "$f" || continue
            [ -n "${SKIP:-}" ] && grep -qE "$SKIP" <<<"$f" && continue
            echo "$f"
        done
}

# cases FILE: one line per RUN line that runs the program: "ENV_ASSIGNMENTS|ARGS".
cases() {
    grep -E '^// *RUN:.*(%libomp-run|%libomp-compile-and-run)' "$1" | while read -r line; do
        line="${line#*RUN:}"
        line="${line##*&&}"              # the last command of `compile && run`
        line="${line%%|*}"               # drop `| FileCheck ...`
        local envs="" args=""
        envs="$(grep -oE "[A-Z_]+=('[^']*'|[^ ]+)" <<<"${line%%%libomp-*}" | tr -d "'" | tr '\n' ' ')"
        case "$line" in
        *%libomp-run*) args="${line#*%libomp-run}" ;;
        esac
        echo "${envs% }|$(echo $args)"
    done | sort -u
}

# --- build -----------------------------------------------------------------------------------
build_one() {
    local f="$1" link="$2" name out flags=()
    name="$(realpath --relative-to="$suite" "$f" | tr '/' '_')"
    name="${name%.c}"
    out="$work/bin/$name.$link"
    case "$link" in
    pie) flags=(-static-pie) ;;
    static) flags=(-static) ;;
    dyn) flags=() ;;
    esac
    [ "$out" -nt "$f" ] && return 0
    gcc -fopenmp -O2 -w "${flags[@]}" -I "$suite" -o "$out" "$f" -lm -lpthread \
        >"$work/logs/$name.$link.build" 2>&1 || rm -f "$out"
}
export -f build_one
export suite work

selected >"$work/selected.txt"
echo "selected $(wc -l <"$work/selected.txt") tests in $suite"
for link in $links; do
    sed "s/\$/ $link/" "$work/selected.txt" | xargs -P "$(nproc)" -n 2 bash -c 'build_one "$0" "$1"'
done

# --- runs ------------------------------------------------------------------------------------
# run_case MODE BIN ENVS ARGS CPUS NT: MODE native or a --omp value; prints the exit status.
run_case() {
    local mode="$1" bin="$2" envs="$3" args="$4" cpus="$5" nt="$6" log="$7" i st=0
    local -a envv=(env -u OMP_NUM_THREADS)
    [ "$nt" != unset ] && envv+=("OMP_NUM_THREADS=$nt")
    # shellcheck disable=SC2206
    envv+=($envs)
    for ((i = 0; i < repeat; i++)); do
        if [ "$mode" = native ]; then
            # shellcheck disable=SC2086
            timeout "$timeout_s" "${envv[@]}" "$bin" $args >"$log" 2>&1
        else
            # shellcheck disable=SC2086
            timeout "$timeout_s" "${envv[@]}" "$hrt" run --cpus "$cpus" --omp "$mode" -- "$bin" $args >"$log" 2>&1
        fi
        st=$?
        [ "$st" = 0 ] || break
    done
    echo "$st"
}

results="$work/results.txt"
: >"$results"
for link in $links; do
    for cfg in $configs; do
        cpus="${cfg%%:*}" nt="${cfg#*:}"
        declare -A total=() pass=()
        while read -r f; do
            name="$(realpath --relative-to="$suite" "$f" | tr '/' '_')"
            name="${name%.c}"
            bin="$work/bin/$name.$link"
            [ -x "$bin" ] || continue
            n=0
            while IFS='|' read -r envs args; do
                n=$((n + 1))
                id="$name#$n.$link.c$cpus.t$nt"
                st="$(run_case native "$bin" "$envs" "$args" "$cpus" "$nt" "$work/logs/$id.native")"
                total[native]=$((${total[native]:-0} + 1))
                if [ "$st" != 0 ]; then
                    echo "$id native FAIL($st) [$envs] $args" >>"$results"
                    continue
                fi
                pass[native]=$((${pass[native]:-0} + 1))
                for rt in $runtimes; do
                    st="$(run_case "$rt" "$bin" "$envs" "$args" "$cpus" "$nt" "$work/logs/$id.$rt")"
                    total[$rt]=$((${total[$rt]:-0} + 1))
                    if [ "$st" = 0 ]; then
                        pass[$rt]=$((${pass[$rt]:-0} + 1))
                    else
                        echo "$id $rt FAIL($st) [$envs] $args" >>"$results"
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
