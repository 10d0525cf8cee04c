/* blas_library.h: which BLAS and LAPACK the process really runs, asked of the process itself.
 *
 * The build picks one (-DQP_BLAS=openblas, the default, or blis: cmake/qp_blas.cmake), but
 * what runs is what the loader bound: the library file that provides dgemm_ and dpotrf_ at
 * run time (dlsym(RTLD_DEFAULT) + dladdr), not what the build meant. Every library-specific
 * call is looked up with dlsym, so this compiles with any CBLAS header and does nothing
 * where the library lacks it: OpenBLAS's openblas_get_config / openblas_get_corename /
 * openblas_get_num_threads / openblas_get_parallel, BLIS's bli_info_get_version_str /
 * bli_arch_string / bli_thread_get_num_threads. Code outside linalg/ that would call an
 * OpenBLAS-only function asks here instead. */
#ifndef QP_BLAS_LIBRARY_H
#define QP_BLAS_LIBRARY_H

#include <stddef.h>

/** 1 when the process's dgemm_ is OpenBLAS's (the library that defines it also defines
 *  openblas_get_config), else 0. */
int qp_blas_library_is_openblas(void);

/** 1 when the process's dgemm_ is BLIS's (its library defines bli_info_get_version_str). */
int qp_blas_library_is_blis(void);

/** "OpenBLAS", "BLIS" or "an unknown BLAS" (never NULL): the name of the dgemm_ library. */
const char *qp_blas_library_name(void);

/** The threads the BLAS uses for one call: openblas_get_num_threads() under OpenBLAS,
 *  bli_thread_get_num_threads() under BLIS (1 where it has no setting), else 1. */
int qp_blas_library_threads(void);

/** BLIS runs single-threaded unless BLIS_NUM_THREADS, OMP_NUM_THREADS or one of
 *  BLIS_{JC,PC,IC,JR,IR}_NT is set, where OpenBLAS takes every core: under BLIS with none of
 *  them set, gives it omp_get_max_threads() threads (bli_thread_set_num_threads) and returns
 *  that count; elsewhere (OpenBLAS, a variable set) does nothing and returns 0. Call early in
 *  main, before the first BLAS call of another thread. */
int qp_blas_library_threads_default(void);

/** The library's name and version ("OpenBLAS 0.3.21", "BLIS 0.9.0", else the file that
 *  defines dgemm_) and its kernel (openblas_get_corename(): "Haswell", "SkylakeX"; BLIS's
 *  arch: "zen3"; else "unknown"), as the library says them: what a measurement of its
 *  buffers is recorded against (linalg/blas/openblas_tuning.h). Truncated to the sizes given. */
void qp_blas_library_identity(char *library, size_t library_size, char *kernel, size_t kernel_size);

/** Lines, each ending in '\n', saying what runs: "BLAS: <name> <version> (<kernel/arch>,
 *  <threading>, <n> threads) <file>", "LAPACK: <version> <file>" (the file of dpotrf_), and,
 *  where they apply: another loaded library that defines dgemm_ (not the one calls bind to),
 *  OpenBLAS loaded beside another BLAS ("two BLAS in the process"), and, in a ScaLAPACK build,
 *  which libraries ScaLAPACK's libblas.so.3 / liblapack.so.3 are and whether they differ from
 *  qmlpipe's own. Truncated to n - 1 characters; returns the length it needed (as snprintf). */
size_t qp_blas_library_describe(char *buf, size_t n);

#endif
