/* harmonic_modes.c: the mode layout and the sparse D_p of the harmonic routes (harmonic_modes.h). */
#include "harmonic_modes.h"

#include <math.h>
#include <stdlib.h>

#include "spin_harmonics.h"

/* The fields (T = 0, E = 1, B = 2) each spectrum couples, in QML.md 6 order. */
const int qp_spectrum_fields[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

/* The spectrum coupling fields f1 and f2. */
qp_spectrum qp_fields_spectrum(int f1, int f2) {
  static const qp_spectrum table[3][3] = {
      {QP_TT, QP_TE, QP_TB}, {QP_TE, QP_EE, QP_EB}, {QP_TB, QP_EB, QP_BB}};
  return table[f1][f2];
}

int64_t qp_mode(const qp_problem *p, int field, int l, int m) {
  return p->field_offset[field] + qp_harmonic_index(l, m, p->field_ell_min[field]);
}

/* B_l^2 from the pixel weights (2l+1)/(4 pi) B_l^2: the harmonic basis carries (2l+1)/(4 pi). */
double qp_beam2(const qp_problem *p, int l) {
  return p->ell_weight[l] * 4.0 * M_PI / (2.0 * l + 1.0);
}

int qp_fisher_block_slots(const qp_config *cfg, int slot[81]) {
  int used[9] = {0}; /* the field pairs (fa, fb) of D_q's entries: both orders of a spectrum */
  for (int i = 0; i < cfg->n_spectra; ++i) {
    const int f1 = qp_spectrum_fields[cfg->spectra[i]][0], f2 = qp_spectrum_fields[cfg->spectra[i]][1];
    used[f1 * 3 + f2] = used[f2 * 3 + f1] = 1;
  }
  for (int k = 0; k < 81; ++k) slot[k] = -1;
  int n = 0;
  /* An entry (fa, fb) of D_q with one (fc, fd) of D_r reads W_{fb fc} W_{fa fd} (F's sum). */
  for (int g = 0; g < 9; ++g)
    for (int h = 0; h < 9; ++h) {
      if (!used[g] || !used[h]) continue;
      const int fa = g / 3, fb = g % 3, fc = h / 3, fd = h % 3;
      const int k = qp_fisher_block_key(fb, fc, fa, fd), swap = qp_fisher_block_key(fa, fd, fb, fc);
      const int first = k < swap ? k : swap;
      if (slot[first] < 0) slot[first] = n++;
      slot[k] = slot[swap] = slot[first];
    }
  return n;
}

int qp_spectra_cross(const qp_config *cfg) {
  int cross = 0;
  for (int i = 0; i < cfg->n_spectra; ++i)
    cross |= qp_spectrum_fields[cfg->spectra[i]][0] != qp_spectrum_fields[cfg->spectra[i]][1];
  return cross;
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
        const double v = qp_beam2(p, l);
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
