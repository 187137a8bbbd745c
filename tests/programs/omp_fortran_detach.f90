! Detachable tasks from Fortran: omp_lib declares omp_fulfill_event's handle `value`, so the
! program passes the handle itself to omp_fulfill_event_. A chain of tasks, each fulfilling the
! event of the one before; under `hrt run --omp kernel` the program must print what it prints
! natively on libgomp.
program omp_fortran_detach
    use omp_lib
    implicit none
    integer(kind=omp_event_handle_kind) :: ev1, ev2
    integer :: x, y, z
    x = 0
    y = 0
    z = 0
    !$omp parallel
    !$omp single
    !$omp task detach(ev1) shared(x)
    x = x + 1
    !$omp end task
    !$omp task detach(ev2) shared(y, ev1)
    y = y + 1
    call omp_fulfill_event(ev1)
    !$omp end task
    !$omp task shared(z, ev2)
    z = z + 1
    call omp_fulfill_event(ev2)
    !$omp end task
    !$omp end single
    !$omp end parallel
    print '(a,3i2)', 'detached tasks ran: ', x, y, z
end program omp_fortran_detach
