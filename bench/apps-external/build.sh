#!/usr/bin/env bash
# Builds OpenMP proxy apps and benchmark suites nobody here wrote, unmodified, for
# bench/apps-external/run.sh. None of them is part of HRT: fetch them yourself (e.g.
# github.com/bsc-pm/bots, LLNL/LULESH, ANL-CESAR/XSBench, ANL-CESAR/RSBench, jeffhammond/STREAM,
# Mantevo/miniFE, a Rodinia 3.1 tree with its openmp/ directory) and unpack each under SRC with
# the directory names below; a missing one is skipped. The trees are copied, never edited.
#
#   bench/apps-external/build.sh SRC OUTDIR
#     SRC/bots  SRC/lulesh  SRC/xsbench  SRC/rsbench  SRC/stream  SRC/minife  SRC/rodinia
# gcc/g++ -O2/-O3 -fopenmp; static, and static-pie for RSBench, STREAM, Rodinia's pathfinder
# and a second BOTS set (OUTDIR/bots-pie). Binaries land in OUTDIR; what fails to build is
# reported on stderr and skipped. BOTS's input files go to OUTDIR/bots-inputs.
set -u
[ $# -eq 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
src=$(realpath "$1") out=$2
mkdir -p "$out" && out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "build.sh: $1 did not build (log: $2)" >&2; }
have() { [ -d "$src/$1" ] || { echo "build.sh: no $src/$1, skipped" >&2; return 1; }; }

# BOTS: its own configure and Makefiles, static then static-pie (bin/ of the copy).
bots() {
    local link=$1 dest=$2 opt=$3 tree=$work/bots-$1
    cp -r "$src/bots" "$tree" && rm -rf "$tree/bin"
    (cd "$tree" && ./configure --compiler gcc > /dev/null &&
        sed -i "s/^OMPLINK_FLAGS=.*/OMPLINK_FLAGS=$link/; s/^OPT_FLAGS=.*/OPT_FLAGS=$opt/" config/make.config &&
        cd omp-tasks && make clean && make -k) > "$work/bots-$1.log" 2>&1
    mkdir -p "$dest" && cp "$tree"/bin/* "$dest"/ 2> /dev/null || fail "BOTS ($link)" "$work/bots-$1.log"
}
if have bots; then
    bots -static "$out/bots" -O3
    bots -static-pie "$out/bots-pie" "-O2 -fPIE"
    rm -rf "$out/bots-inputs" && cp -r "$src/bots/inputs" "$out/bots-inputs"
fi

# cc NAME DIR SUBDIR COMMAND...: runs the compile command in SUBDIR of a copy of DIR.
cc() {
    local name=$1 dir=$2 sub=$3
    shift 3
    rm -rf "$work/t" && cp -r "$dir" "$work/t" &&
        (cd "$work/t/$sub" && "$@" > "$work/$name.log" 2>&1) || fail "$name" "$work/$name.log"
}
if have lulesh; then
    cc lulesh "$src/lulesh" . g++ -DUSE_MPI=0 -O3 -fopenmp -I. lulesh.cc lulesh-comm.cc lulesh-viz.cc \
        lulesh-util.cc lulesh-init.cc -o "$out/lulesh" -static -lm
fi
if have xsbench; then
    cc xsbench "$src/xsbench" openmp-threading sh -c "gcc -std=gnu99 -O3 -flto -fopenmp -DOPENMP *.c -o '$out/xsbench' -lm -static"
    cc xsbench-offload "$src/xsbench" openmp-offload sh -c "gcc -std=gnu99 -O3 -fopenmp -foffload=disable *.c -o '$out/xsbench-offload' -lm -static"
fi
if have rsbench; then
    cc rsbench "$src/rsbench" openmp-threading sh -c "gcc -std=gnu99 -O3 -fopenmp -fPIE *.c -o '$out/rsbench-pie' -lm -static-pie"
    cc rsbench-offload "$src/rsbench" openmp-offload sh -c "gcc -std=gnu99 -O3 -fopenmp -foffload=disable -fPIE *.c -o '$out/rsbench-offload-pie' -lm -static-pie"
fi
if have stream; then
    cc stream "$src/stream" . gcc -O2 -fopenmp -fPIE -DSTREAM_ARRAY_SIZE=4000000 -DNTIMES=10 stream.c \
        -o "$out/stream-pie" -static-pie
fi
if have minife; then
    cc minife "$src/minife/openmp" src sh -c "make -f Makefile.gnu.openmp clean; make -f Makefile.gnu.openmp LDFLAGS=-static && cp miniFE.x '$out/minife'"
fi
if have rodinia; then
    r=$src/rodinia/openmp
    cc backprop "$r/backprop" . gcc -O2 -fopenmp backprop.c facetrain.c imagenet.c backprop_kernel.c -o "$out/backprop" -lm -static
    cc lud "$r/lud" omp gcc -O3 -fopenmp -I../common lud.c lud_omp.c ../common/common.c -o "$out/lud" -lm -static
    cc nw "$r/nw" . g++ -O3 -fopenmp needle.cpp -o "$out/nw" -static
    cc pathfinder "$r/pathfinder" . g++ -O2 -fopenmp -fPIE pathfinder.cpp -o "$out/pathfinder-pie" -static-pie
    # OUTPUT: print the result matrix, the only result the program gives.
    cc srad "$r/srad/srad_v2" . g++ -O2 -fopenmp -DOUTPUT srad.cpp -o "$out/srad2" -static
fi
ls "$out"
