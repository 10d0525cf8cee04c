/* harmonic_modes.h: what the harmonic routes' basis_setup (harmonic_route.c) and their
 * fisher_run and spectra_run (harmonic_estimates.c) share: where a mode (field, l, m) sits,
 * the beam, and the entries of each D_p = dLambda/dp (sparse: one per (l, m) of its bin, two
 * for a cross spectrum). Internal to stages/. */
#ifndef QP_HARMONIC_MODES_H
#define QP_HARMONIC_MODES_H

#include <stdint.h>

#include "problem.h"

/** One entry (a, b, v) of a D_p. */
typedef struct qp_entry {
  int64_t a, b; /* the modes (fa, l, m) and (fb, l, m) */
  double v;
  int64_t lm;   /* l^2 + l + m: the entry's (l, m) among all (l, m) up to lmax */
  int fa, fb;   /* the fields (T = 0, E = 1, B = 2) of a and b */
} qp_entry;

/** The fields (T = 0, E = 1, B = 2) each spectrum couples, in QML.md 6 order. */
extern const int qp_spectrum_fields[6][2];
/** The spectrum coupling fields f1 and f2. */
qp_spectrum qp_fields_spectrum(int f1, int f2);
/** The index of mode (field, l, m) in the layout of qp_harmonic_layout. */
int64_t qp_mode(const qp_problem *p, int field, int l, int m);
/** B_l^2 from the pixel weights (2l+1)/(4 pi) B_l^2: the harmonic basis carries (2l+1)/(4 pi). */
double qp_beam2(const qp_problem *p, int l);
/** The block sums F is made of (harmonic_estimates.c): B_k(l, l') = sum over m, m' of
 *  W_ab(lm, l'm') W_cd(lm, l'm') for the quadruples of fields k = qp_fisher_block_key(a, b,
 *  c, d) that the spectra of cfg need. slot[k] is k's place among them (-1: not needed; k and
 *  its swap (c, d, a, b), the same sums, share one); returns how many there are. */
int qp_fisher_block_slots(const qp_config *cfg, int slot[81]);
/** 1 when a spectrum of cfg couples two fields (TE, TB, EB): its entries of D_q pair a mode of
 *  one field with a mode of another, whose columns of Z the projection route's noise bias
 *  lines up (harmonic_estimates.c; the memory model's cross_fields). */
int qp_spectra_cross(const qp_config *cfg);
static inline int qp_fisher_block_key(int a, int b, int c, int d) {
  return ((a * 3 + b) * 3 + c) * 3 + d;
}
/** Lists the entries of every D_q: entries[start[q] .. start[q+1]). malloc'd (O(n_modes)). */
qp_err qp_param_entries(const qp_problem *p, qp_entry **entries, int64_t **start);

#endif
