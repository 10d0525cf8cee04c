/* omp_wait.h: libgomp's idle threads sleep at once after a parallel region, unless the user
 * chose otherwise.
 *
 * With OMP_WAIT_POLICY unset, libgomp keeps each idle thread spinning (GOMP_SPINCOUNT 300000
 * pause loops, ~6 ms of a core on this VM) after every parallel region. Every stage follows
 * its OpenMP regions with BLAS calls (V's build then potrf, F's block sums then the noise
 * bias's trsm, the maps' loops in spectra_run), and OpenBLAS's threads then share the cores
 * with a spinning thread: T nside 16 on 2 cores, median of 8 alternating runs 0.514 -> 0.492
 * s with OMP_WAIT_POLICY=passive (basis_setup 0.289 -> 0.276, spectra_run 0.010 -> 0.006),
 * the pixel-direct route 9.85 -> 9.24 s, QU nside 16 and SMW unchanged (docs/benchmarks.md).
 *
 * libgomp reads the variable once, in its constructor. Linked into the program (CMakeLists.txt,
 * qp_openmp: GCC's libgomp.a), that constructor is a plain one of the program, and the
 * program's constructors of a higher priority run before it: this file's sets
 * OMP_WAIT_POLICY=passive there. A user's OMP_WAIT_POLICY or GOMP_SPINCOUNT stands. Where
 * libgomp is a shared library (built without libgomp.a, QP_OPENMP_LINKED_IN unset) it has
 * read the environment before any code of the program runs: nothing is set. */
#ifndef QP_OMP_WAIT_H
#define QP_OMP_WAIT_H

/** 1 when OMP_WAIT_POLICY=passive was set for the OpenMP runtime by this program (neither it
 *  nor GOMP_SPINCOUNT was in the environment, and libgomp is linked in), 0 else. A program
 *  gets the setting by calling something of this file (qmlpipe: qp_omp_wait_forget in main):
 *  a static library's object file, constructor and all, is linked only when referenced. */
int qp_omp_wait_passive_set(void);

/** Takes OMP_WAIT_POLICY away again where this program set it: the runtime has read it, and
 *  no child process should inherit a setting the user did not make. */
void qp_omp_wait_forget(void);

#endif
