/* mode_layout.h: the harmonic modes as the plan sizes them and the stages use them: where each
 * field's modes start (qp_harmonic_layout), and what the config's spectra ask of the harmonic
 * routes' buffers (the Fisher block sums, whether a spectrum crosses fields). The planner's
 * inputs (inputs.c, planner_chunks.c) and the stages (harmonic_modes.h) share it, so that
 * neither includes the other. */
#ifndef QP_MODE_LAYOUT_H
#define QP_MODE_LAYOUT_H

#include "problem.h"

/** The fields (T = 0, E = 1, B = 2) each spectrum couples, in QML.md 6 order. */
extern const int qp_spectrum_fields[6][2];
/** Sets n_modes and the field layout of the modes (field_offset, field_ell_min): an input of
 *  the plan. */
void qp_harmonic_layout(qp_problem *p);
/** The block sums F is made of (harmonic_fisher.c): B_k(l, l') = sum over m, m' of
 *  W_ab(lm, l'm') W_cd(lm, l'm') for the quadruples of fields k = qp_fisher_block_key(a, b,
 *  c, d) that the spectra of cfg need. slot[k] is k's place among them (-1: not needed; with
 *  merge_swaps, k and its swap (c, d, a, b), the same sums when both windows come from one
 *  matrix, share one; cross-spectra's two matrices W_B and W_A keep them apart); returns how
 *  many there are. */
int qp_fisher_block_slots(const qp_config *cfg, int merge_swaps, int slot[81]);
/** 1 when a spectrum of cfg couples two fields (TE, TB, EB): its entries of D_q pair a mode of
 *  one field with a mode of another, whose columns of Z the projection route's noise bias
 *  lines up (harmonic_bias.c; the memory model's cross_fields). */
int qp_spectra_cross(const qp_config *cfg);
static inline int qp_fisher_block_key(int a, int b, int c, int d) {
  return ((a * 3 + b) * 3 + c) * 3 + d;
}

#endif
