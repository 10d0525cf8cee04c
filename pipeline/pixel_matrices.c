/* pixel_matrices.c: S and the bin matrices P_b from Legendre polynomials (pixel_matrices.h). */
#include "pixel_matrices.h"

#include <stdlib.h>

#include "legendre.h"

/* a[j + i n] = a[i + j n] for i > j, tile by tile. */
static void qp_mirror_lower(double *a, int64_t n) {
  const int64_t tile = 64;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t jb = 0; jb < n; jb += tile) {
    for (int64_t ib = jb; ib < n; ib += tile) {
      int64_t j_end = jb + tile < n ? jb + tile : n, i_end = ib + tile < n ? ib + tile : n;
      for (int64_t i = ib; i < i_end; ++i)
        for (int64_t j = jb; j < j_end && j < i; ++j) a[j + i * n] = a[i + j * n];
    }
  }
}

void qp_pixel_matrices_build(const qp_problem *p, double *cov, int first_bin, int n_slots, double *slots,
                     size_t slot_stride) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  const double *v = p->vectors;
  /* The recursion runs only as far as the highest multipole anything needs. */
  int lmax = 0;
  if (cov) lmax = cfg->lmax_signal;
  if (n_slots > 0 && p->bin_hi[first_bin + n_slots - 1] > lmax)
    lmax = p->bin_hi[first_bin + n_slots - 1];
  double *signal_coeff = malloc((size_t)(lmax + 1) * sizeof *signal_coeff);
  for (int l = 0; l <= lmax; ++l)
    signal_coeff[l] = (l >= cfg->ell_min && l <= cfg->lmax_signal && cov)
                          ? p->cls.cl[QP_TT][l] * p->ell_weight[l]
                          : 0.0;
#pragma omp parallel
  {
    double *leg = malloc((size_t)(lmax + 1) * sizeof *leg);
#pragma omp for schedule(dynamic, 8)
    for (int64_t j = 0; j < n; ++j) {
      const double *rj = v + 3 * j;
      for (int64_t i = j; i < n; ++i) {
        const double *ri = v + 3 * i;
        double z = ri[0] * rj[0] + ri[1] * rj[1] + ri[2] * rj[2];
        z = z > 1.0 ? 1.0 : (z < -1.0 ? -1.0 : z);
        qp_legendre(lmax, z, leg);
        if (cov) {
          double s = 0.0;
          for (int l = cfg->ell_min; l <= cfg->lmax_signal; ++l) s += signal_coeff[l] * leg[l];
          cov[i + j * n] = s;
        }
        for (int k = 0; k < n_slots; ++k) {
          const int b = first_bin + k;
          double s = 0.0;
          for (int l = p->bin_lo[b]; l <= p->bin_hi[b]; ++l) s += p->ell_weight[l] * leg[l];
          slots[(size_t)k * slot_stride + i + j * n] = s;
        }
      }
    }
    free(leg);
  }
  free(signal_coeff);
  /* Only the lower triangles were written above (contiguous stores); mirror them now in
   * cache-sized tiles: writing both halves pair by pair strides through memory and cost more
   * than the Legendre recursion itself. */
  if (cov) qp_mirror_lower(cov, n);
  for (int k = 0; k < n_slots; ++k) qp_mirror_lower(slots + (size_t)k * slot_stride, n);
}
