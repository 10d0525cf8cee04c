/* harmonic_modes.h: what the harmonic routes' basis_setup (harmonic_route.c) and their
 * fisher_run and spectra_run (harmonic_fisher.c, harmonic_bias.c, harmonic_spectra.c) share: where
 * a mode (field, l, m) sits, the beam and pixel window, and the entries of each D_p = dLambda/dp
 * (sparse: one per (l, m) of its bin, two for a cross spectrum). Internal to stages/. */
#ifndef QP_HARMONIC_MODES_H
#define QP_HARMONIC_MODES_H

#include <stdint.h>

#include "mode_layout.h"
#include "problem.h"

/** One entry (a, b, v) of a D_p. */
typedef struct qp_entry {
  int64_t a, b; /* the modes (fa, l, m) and (fb, l, m) */
  double v;
  int64_t lm; /* l^2 + l + m: the entry's (l, m) among all (l, m) up to lmax */
  int fa, fb; /* the fields (T = 0, E = 1, B = 2) of a and b */
} qp_entry;

/** The spectrum coupling fields f1 and f2. */
qp_spectrum qp_fields_spectrum(int f1, int f2);
/** The index of mode (field, l, m) in the layout of qp_harmonic_layout. */
int64_t qp_mode(const qp_problem *p, int field, int l, int m);
/** The weight of multipole l in Lambda and in every D_p between a mode of field fa and one of
 *  field fb (T = 0, E = 1, B = 2): B_l^2 w^fa_l w^fb_l, the beam and both fields' pixel windows
 *  (qp_field_weight without the (2l+1)/(4 pi) the harmonic basis carries). */
double qp_mode_weight(const qp_problem *p, int fa, int fb, int l);
/** Lists the entries of every D_q: entries[start[q] .. start[q+1]). malloc'd (O(n_modes)). */
qp_err qp_param_entries(const qp_problem *p, qp_entry **entries, int64_t **start);

#endif
