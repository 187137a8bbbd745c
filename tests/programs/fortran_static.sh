# Sourced by build.sh and tests/omp_suite/run.sh: sets `fortran_static`, the linker flags a
# static (or static-PIE) gfortran OpenMP program needs. libgfortran locks its I/O units through
# weak references to pthread functions, which a static link leaves at address 0 unless
# something pulls them in: -u does (else the first OPEN crashes natively).
fortran_static=()
for f in pthread_mutex_destroy pthread_mutex_init pthread_mutex_lock pthread_mutex_trylock \
    pthread_mutex_unlock pthread_key_create pthread_key_delete pthread_getspecific \
    pthread_setspecific pthread_cond_broadcast pthread_cond_destroy pthread_cond_init \
    pthread_cond_wait pthread_create pthread_join pthread_self; do
    fortran_static+=("-Wl,-u,$f")
done
