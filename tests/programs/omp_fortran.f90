! OpenMP from Fortran (gfortran): the omp_lib routines with arguments by reference, in their
! INTEGER(4) and INTEGER(8) forms, simple locks, and the constructs the NAS Parallel Benchmarks
! use (parallel do with reductions, atomic, critical, barrier, single, a pipeline of threads
! waiting on each other's flags with flush, as NPB LU does). Prints values that do not depend
! on the CPU count, so a run under `hrt run --omp kernel` must print what a native run prints.
program omp_fortran
    use omp_lib
    implicit none
    integer, parameter :: n = 100000, stages = 64
    integer :: i, t, nt, failures, kind4, chunk4, level_seen
    integer(kind=omp_sched_kind) :: sched
    integer(8) :: chunk8, total8
    integer(kind=omp_lock_kind) :: lck
    integer :: counter, crit_count, atomic_count, singles
    integer, allocatable :: done(:), order(:)
    double precision :: t0, t1, sum, expect
    logical :: got

    failures = 0

    ! Team sizes and numbers, set both ways.
    call omp_set_num_threads(3)
    call check('max_threads after set_num_threads(3)', omp_get_max_threads() == 3)
    call omp_set_num_threads(2_8)
    call check('max_threads after set_num_threads(2_8)', omp_get_max_threads() == 2)
    nt = 0
    !$omp parallel num_threads(3) reduction(+:nt)
    nt = nt + 1
    if (omp_get_num_threads() /= 3) nt = nt + 1000
    if (omp_get_thread_num() < 0 .or. omp_get_thread_num() >= 3) nt = nt + 1000
    !$omp end parallel
    print '(a,i0)', 'threads in a team of 3: ', nt
    call check('outside a region: one thread, not in parallel', &
        omp_get_num_threads() == 1 .and. .not. omp_in_parallel() .and. omp_get_thread_num() == 0)

    ! Dynamic, nesting and levels.
    call omp_set_dynamic(.false.)
    call check('get_dynamic', .not. omp_get_dynamic())
    call omp_set_max_active_levels(2)
    call check('max_active_levels 2', omp_get_max_active_levels() == 2)
    call omp_set_max_active_levels(1_8)
    call check('max_active_levels 1_8', omp_get_max_active_levels() == 1)
    call omp_set_max_active_levels(2)
    level_seen = -1
    !$omp parallel num_threads(2)
    !$omp parallel num_threads(2)
    if (omp_get_thread_num() == 1 .and. omp_get_ancestor_thread_num(1) == 1) then
        !$omp critical
        level_seen = omp_get_level() * 100 + omp_get_active_level() * 10 + omp_get_team_size(1)
        if (omp_get_team_size(2_8) /= 2 .or. omp_get_ancestor_thread_num(2_8) /= 1) level_seen = -2
        if (.not. omp_in_parallel() .or. omp_in_final()) level_seen = -3
        !$omp end critical
    end if
    !$omp end parallel
    !$omp end parallel
    print '(a,i0)', 'level, active level, outer team size: ', level_seen
    call check('ancestor of level 0 is thread 0', omp_get_ancestor_thread_num(0) == 0)
    call check('no level 5', omp_get_team_size(5) == -1 .and. omp_get_ancestor_thread_num(5_8) == -1)

    ! The run-time schedule, set and read back with 4- and 8-byte chunks.
    call omp_set_schedule(omp_sched_dynamic, 7)
    call omp_get_schedule(sched, chunk4)
    kind4 = sched
    print '(a,i0,a,i0)', 'schedule dynamic,7: kind ', kind4, ' chunk ', chunk4
    call omp_set_schedule(omp_sched_guided, 5_8)
    call omp_get_schedule(sched, chunk8)
    kind4 = sched
    print '(a,i0,a,i0)', 'schedule guided,5_8: kind ', kind4, ' chunk ', chunk8
    total8 = 0
    !$omp parallel do schedule(runtime) reduction(+:total8) num_threads(3)
    do i = 1, n
        total8 = total8 + i
    end do
    !$omp end parallel do
    print '(a,i0)', 'runtime-scheduled sum: ', total8

    ! Time.
    t0 = omp_get_wtime()
    sum = 0
    do i = 1, 1000000
        sum = sum + sqrt(dble(i))
    end do
    t1 = omp_get_wtime()
    call check('wtime advances', t1 > t0 .and. t1 - t0 < 100d0 .and. sum > 0)
    call check('wtick is positive and below a millisecond', omp_get_wtick() > 0 .and. omp_get_wtick() < 1d-3)

    ! A reduction over doubles, atomics, criticals, single and barrier in one region.
    call omp_set_num_threads(4)
    sum = 0
    atomic_count = 0
    crit_count = 0
    singles = 0
    !$omp parallel private(t) reduction(+:sum)
    !$omp do schedule(static)
    do i = 1, n
        sum = sum + 1d0 / dble(i)
    end do
    !$omp end do
    do t = 1, 1000
        !$omp atomic
        atomic_count = atomic_count + 1
    end do
    !$omp critical (named)
    crit_count = crit_count + omp_get_num_threads()
    !$omp end critical (named)
    !$omp barrier
    !$omp single
    singles = singles + 1
    !$omp end single
    !$omp end parallel
    expect = 0
    do i = 1, n
        expect = expect + 1d0 / dble(i)
    end do
    call check('harmonic sum', abs(sum - expect) < 1d-9)
    print '(a,i0,a,i0,a,i0)', 'atomics per thread ', atomic_count / 4, ', criticals ', crit_count, ', singles ', singles

    ! Simple locks: a counter every thread increments under the lock, and omp_test_lock.
    call omp_init_lock(lck)
    counter = 0
    !$omp parallel private(t)
    do t = 1, 2000
        call omp_set_lock(lck)
        counter = counter + 1
        call omp_unset_lock(lck)
    end do
    !$omp end parallel
    print '(a,i0)', 'locked increments per thread: ', counter / 4
    call omp_set_lock(lck)
    got = omp_test_lock(lck)
    call check('test_lock fails while held', .not. got)
    call omp_unset_lock(lck)
    got = omp_test_lock(lck)
    call check('test_lock takes a free lock', got)
    call omp_unset_lock(lck)
    call omp_destroy_lock(lck)

    ! A pipeline: thread k may do stage s only after thread k-1 did it (NPB LU's wait on a
    ! neighbour's flag, with flush), so every thread sees every earlier thread's work.
    allocate(done(0:3), order(0:3))
    done = 0
    order = 0
    !$omp parallel private(t, i) num_threads(4)
    t = omp_get_thread_num()
    do i = 1, stages
        if (t > 0) then
            do
                !$omp flush(done)
                if (done(t - 1) >= i) exit
            end do
        end if
        order(t) = order(t) + 1
        !$omp flush(done, order)
        done(t) = i
        !$omp flush(done)
    end do
    !$omp end parallel
    print '(a,4i4)', 'pipeline stages done: ', done
    call check('pipeline stage counts', all(order == stages))

    if (failures == 0) then
        print '(a)', 'all checks passed'
    else
        print '(i0,a)', failures, ' checks failed'
        stop 1
    end if

contains

    subroutine check(what, ok)
        character(*), intent(in) :: what
        logical, intent(in) :: ok
        if (.not. ok) then
            print '(a,a)', 'FAILED: ', what
            failures = failures + 1
        end if
    end subroutine check

end program omp_fortran
