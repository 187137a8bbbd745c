! A Fortran OpenMP program with a nestable lock, which the kernel's runtime does not provide to
! Fortran (libgomp's Fortran nest lock is a pointer to a lock it allocates): `hrt run --omp
! kernel` refuses it, naming the routine, and `--omp auto` runs it on its own libgomp.
program omp_fortran_nest
    use omp_lib
    implicit none
    integer(kind=omp_nest_lock_kind) :: lck
    integer :: total
    total = 0
    call omp_init_nest_lock(lck)
    !$omp parallel num_threads(3) reduction(+:total)
    call omp_set_nest_lock(lck)
    call omp_set_nest_lock(lck)
    total = total + omp_test_nest_lock(lck)
    call omp_unset_nest_lock(lck)
    call omp_unset_nest_lock(lck)
    call omp_unset_nest_lock(lck)
    !$omp end parallel
    call omp_destroy_nest_lock(lck)
    print '(a,i0)', 'nesting depths summed: ', total
end program omp_fortran_nest
