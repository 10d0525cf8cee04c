/* blas_threads.c: OpenBLAS's idle worker threads put to sleep soon after each call
 * (blas_threads.h). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "blas_threads.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "blas_library.h"
#include "job_limit.h"

/* openblas_get_parallel()'s answer for the pthreads build (0 serial, 2 OpenMP). */
#define QP_OPENBLAS_PTHREADS 1

qp_blas_threads_outcome qp_blas_threads_settle(void) {
  if (getenv("OPENBLAS_THREAD_TIMEOUT")) return QP_BLAS_THREADS_USER;
  if (qp_address_space_limit() != 0.0) return QP_BLAS_THREADS_LIMITED; /* or unreadable */
  /* Symbols, not declarations: OpenBLAS's headers do not declare these (see the .h). */
  void (*read_env)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "openblas_read_env");
  int (*timeout)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_thread_timeout");
  int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
  int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_init");
  /* Looked up too, so that a build against another BLAS (BLIS: cmake/qp_blas.cmake) compiles
   * and does nothing here. */
  int (*parallel)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  int (*threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  if (!read_env || !timeout || !shutdown || !init || !parallel || !threads ||
      !qp_blas_library_is_openblas() || parallel() != QP_OPENBLAS_PTHREADS || threads() < 2)
    return QP_BLAS_THREADS_NOT_POOL;
  char value[16];
  snprintf(value, sizeof value, "%d", QP_BLAS_THREAD_TIMEOUT);
  if (setenv("OPENBLAS_THREAD_TIMEOUT", value, 1) != 0) return QP_BLAS_THREADS_NOT_POOL;
  read_env();
  (void)unsetenv("OPENBLAS_THREAD_TIMEOUT");
  if (timeout() != QP_BLAS_THREAD_TIMEOUT) return QP_BLAS_THREADS_NOT_POOL;
  /* The pool reads the timeout only as it starts: stop it (the workers join) and start it
   * again, as OpenBLAS itself does after a fork. */
  (void)shutdown();
  (void)init();
  return QP_BLAS_THREADS_SETTLED;
}
