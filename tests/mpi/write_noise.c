/* write_noise.c: writes a dense noise covariance for the distributed tests:
 *   write_noise OUT.h5 N VARIANCE
 * N = VARIANCE (I + 0.2 T) with T_ij = exp(-|i - j| / 3) (i != j): symmetric and positive
 * definite (an exponential Toeplitz kernel), with correlations across block boundaries, so a
 * wrong block in the distributed read changes the results. Dataset "/covariance". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "h5_matrix.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: write_noise OUT.h5 N VARIANCE\n");
    return 2;
  }
  const long n = atol(argv[2]);
  const double variance = atof(argv[3]);
  double *m = n > 0 ? malloc((size_t)(n * n) * sizeof *m) : NULL;
  if (!m) return 1;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i)
      m[i + j * n] = variance * (i == j ? 1.0 : 0.2 * exp(-fabs((double)(i - j)) / 3.0));
  qp_err err = qp_h5_matrix_write(argv[1], "/covariance", n, n, m);
  free(m);
  if (err != QP_OK) qp_error_print(stderr, 0);
  return err == QP_OK ? 0 : 1;
}
