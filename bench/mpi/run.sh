#!/usr/bin/env bash
# MPI programs nobody here wrote, natively and under `hrt run`, side by side (issue 13):
# the NAS Parallel Benchmarks' MPI and MPI+OpenMP (multi-zone) versions and the OSU
# micro-benchmarks, with the distribution's MPICH (mpif77, mpicc, mpirun).
#
#   bench/mpi/run.sh SUITE_DIR [ROUNDS]
#
# SUITE_DIR holds the suites' sources, fetched by the user (never vendored here), in any of:
#   SUITE_DIR/NPB3.3-MPI or NPB3.4-MPI      (NPB's MPI directory: EP CG MG FT IS LU BT SP ...)
#   SUITE_DIR/NPB3.3-MZ-MPI or NPB3.4-MZ-MPI (BT-MZ SP-MZ LU-MZ)
#   SUITE_DIR/osu                            (osu-micro-benchmarks, with its configure script)
# Missing suites are skipped. Builds go into SUITE_DIR (NPB's bin/, osu-inst/). Environment:
# HRT (default: this tree's target/release/hrt), CLASSES (default "S W"), TMO (seconds per
# run, default 300), HRT_ARGS (extra `hrt run` options, default none: the plain
# `mpirun -np N hrt run ./prog`). One line per run: suite, program, ranks, side, status,
# verification, NPB's own time or OSU's figures; a hang shows as status 124.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
suite=${1:?usage: bench/mpi/run.sh SUITE_DIR [ROUNDS]}
suite=$(cd "$suite" && pwd)
rounds=${2:-1}
hrt=${HRT:-$here/target/release/hrt}
classes=${CLASSES:-S W}
tmo=${TMO:-300}
read -r -a hrt_args <<<"${HRT_ARGS:-}"

echo "# $(date -u +%FT%TZ) $(uname -r) load: $(cut -d' ' -f1-3 /proc/loadavg) cpus: $(nproc)"
echo "# $(mpichversion 2>/dev/null | head -1) hrt: $hrt ${hrt_args[*]}"

# run NP SIDE PROG [ARGS]: prints the output of `mpirun -np NP [hrt run] PROG ARGS`, then
# "#status N" and "#wall S".
run() {
    local np=$1 side=$2
    shift 2
    local start end
    start=$(date +%s.%N)
    if [ "$side" = hrt ]; then
        timeout "$tmo" mpirun -np "$np" "$hrt" run "${hrt_args[@]}" -- "$@" 2>&1
    else
        timeout "$tmo" mpirun -np "$np" "$@" 2>&1
    fi
    echo "#status $?"
    end=$(date +%s.%N)
    echo "#wall $(echo "$end - $start" | bc)"
}

# npb_line NAME NP SIDE OUTPUT
npb_line() {
    local out=$4
    local st ver t wall
    st=$(sed -n 's/^#status //p' <<<"$out")
    wall=$(sed -n 's/^#wall //p' <<<"$out")
    ver=$(awk '/Verification +=/ {print $3; exit}' <<<"$out")
    t=$(awk '/Time in seconds/ {print $5; exit}' <<<"$out")
    printf 'npb %-12s np=%s %-6s status=%-3s %-12s time=%-8s wall=%.2f\n' "$1" "$2" "$3" "$st" "${ver:-NONE}" "${t:--}" "$wall"
}

# NPB: NAME NP CLASS DIR KIND(mpi|mz)
npb_build() {
    local dir=$1 kind=$2
    [ -f "$dir/config/make.def" ] && return
    if [ "$kind" = mz ]; then
        printf '%s\n' 'OPENMP = -fopenmp' 'MPIF77 = mpif77' 'FLINK = $(MPIF77)' \
            'FFLAGS = -O2 $(OPENMP) -fallow-argument-mismatch -mcmodel=medium' 'F_INC =' 'F_LIB =' \
            'FLINKFLAGS = $(FFLAGS)' 'CC = cc' 'UCC = cc' 'BINDIR = ../bin' 'RAND = randi8' >"$dir/config/make.def"
        sed -i '/make.build/d' "$dir/sys/make.common"
    else
        printf '%s\n' 'MPIF77 = mpif77' 'FLINK = $(MPIF77)' 'FMPI_LIB =' 'FMPI_INC =' \
            'FFLAGS = -O2 -fallow-argument-mismatch -mcmodel=medium' 'FLINKFLAGS = -O2' 'MPICC = mpicc' \
            'CLINK = $(MPICC)' 'CMPI_LIB =' 'CMPI_INC =' 'CFLAGS = -O2' 'CLINKFLAGS = -O2' 'CC = cc -g' \
            'BINDIR = ../bin' 'RAND = randi8' >"$dir/config/make.def"
    fi
}

npb() {
    local dir=$1 kind=$2 np=$3
    shift 3
    npb_build "$dir" "$kind"
    for b in "$@"; do
        for c in $classes; do
            local exe
            if [ "$kind" = mz ]; then exe="$dir/bin/${b}_$c.$np"; else exe="$dir/bin/$b.$c.$np"; fi
            [ -x "$exe" ] || make -C "$dir" "$b" NPROCS="$np" CLASS="$c" >/dev/null 2>&1 || {
                echo "npb $b.$c.$np: build failed"
                continue
            }
            for _ in $(seq "$rounds"); do
                for side in linux hrt; do
                    npb_line "$(basename "$exe")" "$np" "$side" "$(cd "$dir/bin" && run "$np" "$side" "$exe")"
                done
            done
        done
    done
}

for d in NPB3.4-MPI NPB3.3-MPI; do
    if [ -d "$suite/$d" ]; then
        npb "$suite/$d" mpi 2 ep cg mg ft is lu
        npb "$suite/$d" mpi 4 bt sp lu ft
        break
    fi
done
for d in NPB3.4-MZ-MPI NPB3.3-MZ-MPI; do
    if [ -d "$suite/$d" ]; then
        OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} npb "$suite/$d" mz 2 bt-mz sp-mz lu-mz
        break
    fi
done

# OSU: latency and bandwidth tables, both sides next to each other.
if [ -d "$suite/osu" ]; then
    osu=$suite/osu-inst/libexec/osu-micro-benchmarks/mpi
    if [ ! -x "$osu/pt2pt/osu_latency" ]; then
        (cd "$suite/osu" && CC=mpicc CXX=mpicxx ./configure --prefix="$suite/osu-inst" >/dev/null &&
            make -j"$(nproc)" >/dev/null && make install >/dev/null) || echo "osu: build failed"
    fi
    for t in pt2pt/osu_latency pt2pt/osu_bw pt2pt/osu_bibw collective/osu_allreduce; do
        for _ in $(seq "$rounds"); do
            for side in linux hrt; do
                echo "osu $(basename $t) $side:"
                run 2 "$side" "$osu/$t" | grep -E '^[0-9]|^#status' | sed 's/^/    /'
            done
        done
    done
fi
