! Fortran nestable locks (libgomp's Fortran nest lock holds the address of a C nest lock that
! omp_init_nest_lock allocates) and omp_pause_resource(_all): under `hrt run --omp kernel` the
! program must print what it prints natively on libgomp.
program omp_fortran_nest
    use omp_lib
    implicit none
    integer(kind=omp_nest_lock_kind) :: lck
    integer :: total, depth, in_task, paused
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
    print '(a,i0)', 'nesting depths summed: ', total
    ! Locks are owned by tasks: an included task does not own its creator's lock.
    depth = omp_test_nest_lock(lck)
    !$omp task if(.false.) shared(in_task)
    in_task = omp_test_nest_lock(lck)
    !$omp end task
    print '(a,i0,a,i0)', 'depth ', depth, ', from an included task ', in_task
    call omp_unset_nest_lock(lck)
    call omp_destroy_nest_lock(lck)
    paused = omp_pause_resource_all(omp_pause_soft) + &
        omp_pause_resource(omp_pause_hard, omp_get_initial_device())
    print '(a,i0)', 'pause: ', paused
end program omp_fortran_nest
