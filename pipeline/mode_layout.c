/* mode_layout.c: the harmonic modes' layout and the shapes the spectra give them
 * (mode_layout.h). */
#include "mode_layout.h"

#include "spin_harmonics.h"

/* The fields (T = 0, E = 1, B = 2) each spectrum couples, in QML.md 6 order. */
const int qp_spectrum_fields[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

void qp_harmonic_layout(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int has[3] = {p->n_obs_t > 0, p->n_obs_p > 0, p->n_obs_p > 0};
  p->n_modes = 0;
  for (int f = 0; f < 3; ++f) {
    p->field_ell_min[f] = f == 0 ? cfg->ell_min : (cfg->ell_min > 2 ? cfg->ell_min : 2);
    p->field_offset[f] = has[f] ? p->n_modes : -1;
    if (has[f] && cfg->lmax >= p->field_ell_min[f])
      p->n_modes += qp_harmonic_count(p->field_ell_min[f], cfg->lmax);
  }
}

int qp_fisher_block_slots(const qp_config *cfg, int merge_swaps, int slot[81]) {
  int used[9] = {0}; /* the field pairs (fa, fb) of D_q's entries: both orders of a spectrum */
  for (int i = 0; i < cfg->n_spectra; ++i) {
    const int f1 = qp_spectrum_fields[cfg->spectra[i]][0],
              f2 = qp_spectrum_fields[cfg->spectra[i]][1];
    used[f1 * 3 + f2] = used[f2 * 3 + f1] = 1;
  }
  for (int k = 0; k < 81; ++k)
    slot[k] = -1;
  int n = 0;
  /* An entry (fa, fb) of D_q with one (fc, fd) of D_r reads W_{fb fc} W_{fa fd} (F's sum). */
  for (int g = 0; g < 9; ++g)
    for (int h = 0; h < 9; ++h) {
      if (!used[g] || !used[h]) continue;
      const int fa = g / 3, fb = g % 3, fc = h / 3, fd = h % 3;
      const int k = qp_fisher_block_key(fb, fc, fa, fd), swap = qp_fisher_block_key(fa, fd, fb, fc);
      if (!merge_swaps) {
        if (slot[k] < 0) slot[k] = n++;
        continue;
      }
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
