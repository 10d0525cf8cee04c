/* harmonic_modes.c: the mode layout and the sparse D_p of the harmonic routes (harmonic_modes.h).
 */
#include "harmonic_modes.h"

#include <math.h>
#include <stdlib.h>

#include "spin_harmonics.h"

/* The spectrum coupling fields f1 and f2. */
qp_spectrum qp_fields_spectrum(int f1, int f2) {
  static const qp_spectrum table[3][3] = {
      {QP_TT, QP_TE, QP_TB}, {QP_TE, QP_EE, QP_EB}, {QP_TB, QP_EB, QP_BB}};
  return table[f1][f2];
}

int64_t qp_mode(const qp_problem *p, int field, int l, int m) {
  return p->field_offset[field] + qp_harmonic_index(l, m, p->field_ell_min[field]);
}

/* B_l^2 w^fa_l w^fb_l from the pixel weights (2l+1)/(4 pi) B_l^2 w^fa_l w^fb_l: the harmonic
 * basis carries (2l+1)/(4 pi). */
double qp_mode_weight(const qp_problem *p, int fa, int fb, int l) {
  return qp_field_weight(p, fa, fb, l) * 4.0 * M_PI / (2.0 * l + 1.0);
}

/* ---- D_p: the sparse derivative of Lambda ---- */

/* Lists the entries of every D_q: entries[start[q] .. start[q+1]). malloc'd (O(n_modes)). */
qp_err qp_param_entries(const qp_problem *p, qp_entry **entries, int64_t **start) {
  const qp_config *cfg = p->cfg;
  int64_t total = 0;
  *start = malloc((size_t)(p->n_params + 1) * sizeof **start);
  QP_CHECK(*start, QP_ERR_NOMEM, "out of memory for the parameter entries");
  for (int pass = 0; pass < 2; ++pass) {
    int64_t k = 0;
    for (int q = 0; q < p->n_params; ++q) {
      const int bin = q % p->n_bins;
      const qp_spectrum s = cfg->spectra[q / p->n_bins];
      const int f1 = qp_spectrum_fields[s][0], f2 = qp_spectrum_fields[s][1];
      (*start)[q] = k;
      for (int l = p->bin_lo[bin]; l <= p->bin_hi[bin]; ++l) {
        if (l < p->field_ell_min[f1] || l < p->field_ell_min[f2]) continue;
        const double v = qp_mode_weight(p, f1, f2, l);
        for (int m = -l; m <= l; ++m) {
          int64_t a = qp_mode(p, f1, l, m), b = qp_mode(p, f2, l, m);
          const int64_t lm = qp_harmonic_index(l, m, 0);
          if (pass) (*entries)[k] = (qp_entry){a, b, v, lm, f1, f2};
          ++k;
          if (f1 != f2) {
            if (pass) (*entries)[k] = (qp_entry){b, a, v, lm, f2, f1};
            ++k;
          }
        }
      }
    }
    (*start)[p->n_params] = k;
    if (!pass) {
      total = k;
      *entries = malloc((size_t)(total > 0 ? total : 1) * sizeof **entries);
      QP_CHECK(*entries, QP_ERR_NOMEM, "out of memory for %lld parameter entries",
               (long long)total);
    }
  }
  return QP_OK;
}
