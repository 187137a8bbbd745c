#!/usr/bin/env bash
# Builds the NAS Parallel Benchmarks 3.4 (OpenMP) from an unmodified NPB3.4-OMP tree.
# NPB is not part of HRT: get NPB3.4.2.tar.gz from https://www.nas.nasa.gov/software/npb.html
# and unpack it anywhere; pass its NPB3.4-OMP directory here. The tree is copied, never edited.
#
#   bench/npb/build.sh NPB3.4-OMP OUTDIR LINK BENCHMARKS CLASSES
#     LINK: static | static-pie | dynamic
#     BENCHMARKS: e.g. "bt cg ep ft is lu mg sp ua dc";  CLASSES: e.g. "S W"
# Binaries land in OUTDIR/LINK/<bench>.<CLASS>.x; a benchmark that does not build is reported
# on stderr and skipped (the others still build).
set -u
if [ $# -ne 5 ]; then
    sed -n '2,10p' "$0" >&2
    exit 2
fi
src=$1 out=$2 link=$3 benches=$4 classes=$5
[ -f "$src/sys/setparams.c" ] || { echo "build.sh: $src is not an NPB3.4-OMP tree" >&2; exit 2; }
# libgfortran refers to the pthread functions it locks its I/O units with by weak references,
# which a static link leaves at address 0 unless something else pulls them in (the Fortran
# benchmarks then crash natively on their first OPEN); -u pulls them in.
weak=""
for f in pthread_mutex_destroy pthread_mutex_init pthread_mutex_lock pthread_mutex_trylock \
    pthread_mutex_unlock pthread_key_create pthread_key_delete pthread_getspecific \
    pthread_setspecific pthread_cond_broadcast pthread_cond_destroy pthread_cond_init \
    pthread_cond_wait pthread_create pthread_join pthread_self; do
    weak="$weak -Wl,-u,$f"
done
case $link in
    static) cflags="-O3 -fopenmp" ldflags="-static$weak" ;;
    static-pie) cflags="-O3 -fopenmp -fPIE" ldflags="-static-pie$weak" ;;
    dynamic) cflags="-O3 -fopenmp" ldflags="" ;;
    *) echo "build.sh: LINK must be static, static-pie or dynamic" >&2; exit 2 ;;
esac
tree=$out/src-$link
bin=$(realpath -m "$out/$link")
mkdir -p "$out" "$bin"
rm -rf "$tree"
cp -r "$src" "$tree"
cat > "$tree/config/make.def" <<DEF
FC = gfortran
FLINK = \$(FC)
F_LIB =
F_INC =
FFLAGS = $cflags
FLINKFLAGS = $cflags $ldflags
CC = gcc
CLINK = \$(CC)
C_LIB = -lm
C_INC =
CFLAGS = $cflags
CLINKFLAGS = $cflags $ldflags
UCC = gcc
BINDIR = $bin
RAND = randi8
WTIME = wtime.c
DEF
status=0
for b in $benches; do
    for c in $classes; do
        if ! make -C "$tree" "$b" CLASS="$c" > "$out/build-$link-$b.$c.log" 2>&1 ||
            [ ! -x "$bin/$b.$c.x" ]; then
            echo "build.sh: $b.$c ($link) did not build, see $out/build-$link-$b.$c.log" >&2
            status=1
        fi
    done
done
exit $status
