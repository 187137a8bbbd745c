! The Fortran forms of the affinity-format routines, omp_display_env and the allocator
! routines (CHARACTER arguments with hidden lengths, blank-padded results), compared with
! libgomp's output. Only fields that do not change between runs are displayed.
program omp_fortran_display
  use omp_lib
  implicit none
  character(len=64) :: fmt, buf
  character(len=8) :: short
  integer :: n
  integer(omp_allocator_handle_kind) :: al
  type(omp_alloctrait) :: traits(1)

  n = omp_get_affinity_format(fmt)
  print '(a,i0,3a)', 'format ', n, ' [', trim(fmt), ']'
  call omp_set_affinity_format('thread %n of %N at level %L')
  n = omp_get_affinity_format(short)
  print '(a,i0,3a)', 'short ', n, ' [', short, ']'
  n = omp_capture_affinity(buf, '')
  print '(a,i0,3a)', 'capture ', n, ' [', trim(buf), ']'
  n = omp_capture_affinity(buf, '%.3n|%0.4N|%{nesting_level}')
  print '(a,i0,3a)', 'capture ', n, ' [', trim(buf), ']'
  flush(6)
  call omp_display_affinity('display %n/%N')
  call omp_display_affinity('')
  call omp_display_env(.false.)

  traits(1)%key = omp_atk_alignment
  traits(1)%value = 512
  al = omp_init_allocator(omp_default_mem_space, 1, traits)
  print '(a,l1)', 'allocator made ', al /= omp_null_allocator
  call omp_set_default_allocator(al)
  print '(a,l1)', 'default set ', omp_get_default_allocator() == al
  call omp_set_default_allocator(omp_default_mem_alloc)
  call omp_destroy_allocator(al)
  print '(a,l1)', 'default back ', omp_get_default_allocator() == omp_default_mem_alloc
  print '(a)', 'all checks passed'
end program omp_fortran_display
