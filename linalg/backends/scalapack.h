/* scalapack.h: the BLACS, PBLAS and ScaLAPACK routines qmlpipe calls (Debian's
 * libscalapack-openmpi ships no C header). Fortran routines take every argument by
 * reference, and after them one hidden length per character argument (gfortran: size_t). */
#ifndef QP_SCALAPACK_H
#define QP_SCALAPACK_H

#include <stddef.h>

void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);

void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *info, size_t uplo_len);
void pdtrtri_(const char *uplo, const char *diag, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, int *info, size_t uplo_len, size_t diag_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia,
              const int *ja, const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, int *info, size_t uplo_len);
void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja,
              const int *desca, int *ipiv, int *info);
void pdtrmm_(const char *side, const char *uplo, const char *transa, const char *diag,
             const int *m, const int *n, const double *alpha, const double *a, const int *ia,
             const int *ja, const int *desca, double *b, const int *ib, const int *jb,
             const int *descb, size_t side_len, size_t uplo_len, size_t transa_len,
             size_t diag_len);
void pdtrsm_(const char *side, const char *uplo, const char *transa, const char *diag,
             const int *m, const int *n, const double *alpha, const double *a, const int *ia,
             const int *ja, const int *desca, double *b, const int *ib, const int *jb,
             const int *descb, size_t side_len, size_t uplo_len, size_t transa_len,
             size_t diag_len);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja,
             const int *desca, const double *b, const int *ib, const int *jb, const int *descb,
             const double *beta, double *c, const int *ic, const int *jc, const int *descc,
             size_t transa_len, size_t transb_len);
/* C <- beta C + alpha A^T (PBLAS); C is m x n, A is n x m. */
void pdtran_(const int *m, const int *n, const double *alpha, const double *a, const int *ia,
             const int *ja, const int *desca, const double *beta, double *c, const int *ic,
             const int *jc, const int *descc);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia, const int *ja,
               const int *desca, double *b, const int *ib, const int *jb, const int *descb,
               const int *context);
double pdlange_(const char *norm, const int *m, const int *n, const double *a, const int *ia,
                const int *ja, const int *desca, double *work, size_t norm_len);
void pdpocon_(const char *uplo, const int *n, const double *a, const int *ia, const int *ja,
              const int *desca, const double *anorm, double *rcond, double *work,
              const int *lwork, int *iwork, const int *liwork, int *info, size_t uplo_len);
void pdtrsv_(const char *uplo, const char *trans, const char *diag, const int *n,
             const double *a, const int *ia, const int *ja, const int *desca, double *x,
             const int *ix, const int *jx, const int *descx, const int *incx, size_t uplo_len,
             size_t trans_len, size_t diag_len);
void pdgecon_(const char *norm, const int *n, const double *a, const int *ia, const int *ja,
              const int *desca, const double *anorm, double *rcond, double *work,
              const int *lwork, int *iwork, const int *liwork, int *info, size_t norm_len);

#endif
