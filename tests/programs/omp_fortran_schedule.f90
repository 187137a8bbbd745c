! omp_get_schedule from Fortran: libgomp's Fortran routine leaves the monotonic modifier out of
! the kind (OpenMP 4.5 code compares it with omp_sched_static and the like), where the C routine
! keeps it. Run with OMP_SCHEDULE set; under `hrt run --omp kernel` the program must print what
! it prints natively on libgomp.
program omp_fortran_schedule
    use omp_lib
    implicit none
    integer(kind=omp_sched_kind) :: kind
    integer :: chunk
    integer(8) :: chunk8
    call omp_get_schedule(kind, chunk)
    print '(a,i0,a,i0,a,l1,a,l1)', 'kind ', kind, ' chunk ', chunk, ' static ', kind == omp_sched_static, &
        ' guided ', kind == omp_sched_guided
    call omp_set_schedule(omp_sched_dynamic, 3)
    call omp_get_schedule(kind, chunk8)
    print '(a,i0,a,i0)', 'after set: kind ', kind, ' chunk ', chunk8
end program
