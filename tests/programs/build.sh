#!/usr/bin/env bash
# Builds the C test programs into target/programs/ (or $HRT_PROGRAMS_OUT): NAME-static
# (gcc -O2 -static) and NAME-pie (gcc -O2 -static-pie) for every NAME.c here, NAME-musl with
# musl-gcc for a few programs when musl-gcc is installed, and hello-dyn (dynamically linked, as
# gcc builds by default), bare-static (bare/bare.c, no libc), NAME-static and NAME-pie for every
# NAME.cc (g++ -fopenmp), and NAME-static and NAME-pie for every NAME.f90 when gfortran is installed. Rebuilds only what is older than its source or this script.
# Usage: bash tests/programs/build.sh [-v]    (-v: print every compiler command)
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$src_dir/../.." && pwd)"
out="${HRT_PROGRAMS_OUT:-$root/target/programs}"
cc="${CC:-gcc}"
verbose=0
[ "${1:-}" = "-v" ] && verbose=1
mkdir -p "$out"

musl_programs=" hello pthreads malloc_stress "
cflags=(-O2 -g -Wall -Wextra)
built=0

# build OUTPUT SOURCE COMPILER FLAGS...: compiles when OUTPUT is missing or older than SOURCE or
# this script. Writes to a temporary name first, so an interrupted build leaves no stale binary.
build() {
    local output="$1" source="$2" compiler="$3"
    shift 3
    if [ -e "$output" ] && [ "$output" -nt "$source" ] && [ "$output" -nt "${BASH_SOURCE[0]}" ]; then
        return 0
    fi
    [ "$verbose" = 1 ] && echo "$compiler $* -o $output $source"
    local log
    # The linker's warning that static libgomp contains a dlopen call is expected: keep the
    # compiler's messages and show them only when the build fails.
    if ! log="$("$compiler" "$@" -o "$output.tmp" "$source" 2>&1)"; then
        printf '%s\n' "$log" >&2
        echo "build.sh: failed to build $output" >&2
        rm -f "$output.tmp"
        exit 1
    fi
    [ "$verbose" = 1 ] && [ -n "$log" ] && printf '%s\n' "$log" >&2
    mv -f "$output.tmp" "$output"
    built=$((built + 1))
}

have_musl=0
command -v musl-gcc >/dev/null 2>&1 && have_musl=1

for source in "$src_dir"/*.c; do
    name="$(basename "$source" .c)"
    extra=()
    case "$name" in
        openmp | omp_*) extra=(-fopenmp) ;;
        pthreads | affinity) extra=(-pthread) ;;
    esac
    build "$out/$name-static" "$source" "$cc" "${cflags[@]}" "${extra[@]}" -static
    build "$out/$name-pie" "$source" "$cc" "${cflags[@]}" "${extra[@]}" -static-pie -fPIE
    if [ "$have_musl" = 1 ] && [[ "$musl_programs" == *" $name "* ]]; then
        build "$out/$name-musl" "$source" musl-gcc "${cflags[@]}" "${extra[@]}" -static
    fi
done
# C++ OpenMP programs (*.cc), with g++.
for source in "$src_dir"/*.cc; do
    name="$(basename "$source" .cc)"
    build "$out/$name-static" "$source" "${CXX:-g++}" "${cflags[@]}" -fopenmp -static
    build "$out/$name-pie" "$source" "${CXX:-g++}" "${cflags[@]}" -fopenmp -static-pie -fPIE
done
# Fortran OpenMP programs (*.f90), when gfortran is installed (.ci/run installs it), statically
# linked with the flags fortran_static.sh gives.
if command -v gfortran >/dev/null 2>&1; then
    # shellcheck source=fortran_static.sh
    source "$src_dir/fortran_static.sh"
    for source in "$src_dir"/*.f90; do
        name="$(basename "$source" .f90)"
        build "$out/$name-static" "$source" gfortran -O2 -g -Wall -fopenmp -static "${fortran_static[@]}"
        build "$out/$name-pie" "$source" gfortran -O2 -g -Wall -fopenmp -fPIE -static-pie "${fortran_static[@]}"
    done
elif [ "$verbose" = 1 ]; then
    echo "build.sh: gfortran is not installed: the Fortran programs (*.f90) are not built"
fi
build "$out/hello-dyn" "$src_dir/hello.c" "$cc" "${cflags[@]}"
# bare/bare.c has no libc and uses general registers only (no SSE), so it also runs in ring 0
# where guest ring 0 is emulated (PVM hosts), whose emulator lacks SSE.
build "$out/bare-static" "$src_dir/bare/bare.c" "$cc" "${cflags[@]}" -nostdlib -static -ffreestanding \
    -mgeneral-regs-only -fno-stack-protector

[ "$verbose" = 1 ] && echo "build.sh: $built built, output in $out"
exit 0
