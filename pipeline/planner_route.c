/* planner_route.c: the route of a run and why (planner.h): the config's, or the cheapest the
 * limits allow by leading cost (QML.md 3), SMW left out when its noise is too ill-conditioned
 * for cfg->accuracy, from the scalar variances or the variance map's figures read at plan
 * time (conditioning.h says why only SMW is concerned). */
#include "planner_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bytes_text.h"
#include "comm.h"
#include "field_scale.h"
#include "mode_layout.h"
#include "spin_harmonics.h"

/* Leading flop counts of the three routes (QML.md 3, "Choosing the path"). */
/* Projection without W: the flops of its windows' products (harmonic_fisher.c), chunk by chunk
 * of every panel, each chunk's rows down to its last column: syrk's n_pix n_modes^2 but the
 * chunks' triangles. */
static double qp_w_window_flops(const qp_problem *p, const qp_plan *plan) {
  const qp_config *cfg = p->cfg;
  const int64_t n_lm = (int64_t)(cfg->lmax + 1) * (cfg->lmax + 1);
  const qp_model_dims *d = &plan->model_dims;
  const int64_t panel = qp_model_field_panel(d), chunk = qp_model_w_chunk(d);
  int slot[81], need[3][3] = {{0}};
  qp_fisher_block_slots(cfg, 1, slot);
  for (int k = 0; k < 81; ++k)
    if (slot[k] >= 0) need[k / 27][k / 9 % 3] = need[k / 3 % 3][k % 3] = 1;
  double flops = 0;
  for (int g = 0; g < 3; ++g)
    for (int h = 0; h < 3; ++h) {
      if (!need[g][h] || p->field_offset[g] < 0 || p->field_offset[h] < 0) continue;
      if (p->field_ell_min[g] > cfg->lmax || p->field_ell_min[h] > cfg->lmax) continue;
      const int64_t row0 = n_lm - qp_harmonic_count(p->field_ell_min[g], cfg->lmax),
                    first = n_lm - qp_harmonic_count(p->field_ell_min[h], cfg->lmax);
      for (int64_t col0 = 0; col0 < n_lm; col0 += panel) {
        const int64_t end = col0 + panel < n_lm ? col0 + panel : n_lm;
        for (int64_t c0 = first > col0 ? first : col0; c0 < end; c0 += chunk) {
          const int64_t c1 = c0 + chunk < end ? c0 + chunk : end;
          if (c1 > row0) flops += 2.0 * (double)p->n_pix * (double)(c1 - row0) * (double)(c1 - c0);
        }
      }
    }
  return flops;
}

static double qp_route_cost(const qp_problem *p, const qp_plan *plan, qp_model_path path) {
  const double n = (double)p->n_pix, nm = (double)p->n_modes, np = (double)p->n_params;
  const int dense = plan->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  switch (path) {
  case QP_MODEL_PIXEL_DIRECT: {
    /* Cross-spectra factor C_B too and whiten no noise (no bias). */
    const double cross = p->cfg->n_maps2 > 0;
    /* The window functions (binned): Y_q = C_A^-1 P_q C_B^-1 (2 n^3 each; cross-spectra's
     * covariance wants them too, and K_p = Y_p S), the unbinned P_ell's pair sums (~n^2 lmax
     * a pass of up to 16 of them, more for Q/U's Wigner recursions: an estimate,
     * docs/science.md gives figures) and their dots with the Y_q. */
    const int windows = p->cfg->window_functions && p->n_bins != p->cfg->lmax - p->cfg->ell_min + 1;
    const double n_window = (double)p->cfg->n_spectra * (p->cfg->lmax - p->cfg->ell_min + 1);
    const double passes = n_window < 16 ? 1.0 : ceil(n_window / 16.0); /* window_batch <= 16 */
    const double window =
        windows ? np * 2.0 * n * n * n +
                      passes * n * n * p->cfg->lmax * (p->cfg->fields == QP_FIELDS_T ? 4.0 : 20.0) +
                      n_window * n * n * np
                : 0.0;
    /* K_p = Y_p S (the windows' Y_p) or G_p R, R = L_B^-1 S L_A^-T by two trmm (stage_fisher.c) */
    const double covariance =
        cross ? np * 2.0 * n * n * n + (windows ? 0.0 : 2.0 * n * n * n) : 0.0;
    return (1.0 + cross) * n * n * n / 3.0 + (np + 1.0 - cross) * 2.0 * n * n * n + window +
           covariance;
  }
  case QP_MODEL_HARMONIC_SMW:
    if (p->cfg->n_maps2 > 0) { /* cross: both sets' N_eff, K, LU and W; H = (W_B Lambda) W_A;
                                  the switch's Q and M_B^-1 Q M_A^-T (harmonic_smw_cross.c) */
      const int dense_b = plan->switched || p->cfg->noise2_kind == QP_NOISE_COVARIANCE;
      return 2.0 * (nm * nm * n + 2.3 * nm * nm * nm) + 2.0 * nm * nm * nm +
             (dense + dense_b) * (n * n * n / 3.0 + nm * n * n) +
             (plan->switched ? 3.0 * nm * n * n + 2.0 * nm * nm * n + 4.0 * nm * nm * nm : 0.0);
    }
    return nm * nm * n + 2.3 * nm * nm * nm + (dense ? n * n * n / 3.0 + nm * n * n : 0.0);
  case QP_MODEL_HARMONIC_PROJECTED:
    if (p->cfg->n_maps2 > 0) /* cross: both sets' L, Y and W; H = (W_B Lambda) W_A; the
                                switch's Z_B^T S_fixed Z_A (harmonic_cross.c) */
      return 2.0 * (n * n * n / 3.0 + nm * n * n + nm * nm * n) + 2.0 * nm * nm * nm +
             (plan->switched ? 3.0 * nm * n * n + 2.0 * nm * nm * n : 0.0);
    if (qp_model_w_windows(&plan->model_dims))
      return n * n * n / 3.0 + 2.0 * nm * n * n + qp_w_window_flops(p, plan);
    return n * n * n / 3.0 + 2.0 * nm * n * n + nm * nm * n;
  }
  return 0;
}

/* "memory.host_limit 1.000 GiB and memory.device_limit 0.500 GiB": the limits the plan keeps to. */
const char *qp_plan_limits_text(const qp_problem *p, const qp_plan *plan) {
  static _Thread_local char text[160];
  int used = 0;
  text[0] = '\0';
  if (plan->host_limit > 0)
    used = snprintf(text, sizeof text, "%s %s",
                    plan->limit_from_job ? "the job's memory limit" : "memory.host_limit",
                    qp_bytes_readable(plan->host_limit).text);
  if (p->cfg->device_limit > 0)
    snprintf(text + used, sizeof text - (size_t)used, "%smemory.device_limit %s",
             used ? " and " : "", qp_bytes_readable(p->cfg->device_limit).text);
  return text;
}

/* Appends to plan->path_reason (printf-style), cutting what does not fit. */
__attribute__((format(printf, 2, 3))) static void qp_plan_reason_append(qp_plan *plan,
                                                                        const char *format, ...) {
  const size_t used = strnlen(plan->path_reason, sizeof plan->path_reason);
  if (used + 1 >= sizeof plan->path_reason) return;
  va_list args;
  va_start(args, format);
  (void)vsnprintf(plan->path_reason + used, sizeof plan->path_reason - used, format, args);
  va_end(args);
}

/* Cross-spectra on the projection route hold W_A and W_B whole, their host windows too; on SMW
 * every map of both sets on the device at once (no batches), the host windows unpanelled: a
 * route whose pieces ask otherwise is left out, why in `why` (and in `first` if it is empty,
 * the plan's error when no route is left). 1 when it is. */
static int qp_cross_unbuilt(const qp_problem *p, const qp_plan *plan, qp_model_path r,
                            const qp_plan_pieces *k, char *why, size_t why_size, char *first,
                            size_t first_size) {
  const int smw = r == QP_MODEL_HARMONIC_SMW;
  if (p->cfg->n_maps2 == 0 || r == QP_MODEL_PIXEL_DIRECT) return 0;
  const int blocked = smw ? k->map_batch < p->n_maps : k->w_block > 0 && k->w_block < p->n_modes;
  if (!blocked && k->host_panel == 0) return 0;
  snprintf(why, why_size, "cross-spectra with %s or host panels are not supported yet",
           smw ? "maps in batches" : "W in blocks");
  if (!first[0])
    snprintf(first, first_size,
             "cross-spectra on harmonic (%s) need %s and the host windows unpanelled, which %s "
             "does not allow; give %spath: pixel_direct or raise the limit",
             smw ? "smw" : "projected",
             smw ? "every map of both sets on the device at once"
                 : "W_A and W_B whole on the device",
             qp_plan_limits_text(p, plan), smw ? "harmonic_method: projected, " : "");
  return 1;
}

/* Picks the route: the config's, or among those it allows the cheapest whose predicted peak
 * fits memory.host_limit (the cheapest of all when none fits: the limit check then refuses
 * it, saying by how much). Writes the reason to plan->path_reason and sets plan->model. */
qp_err qp_plan_route(const qp_problem *p, qp_plan *plan) {
  const qp_config *cfg = p->cfg;
  static const char *const names[3] = {"pixel_direct", "harmonic (smw)", "harmonic (projected)"};
  int allowed[3] = {cfg->path != QP_PATH_HARMONIC, cfg->path != QP_PATH_PIXEL_DIRECT,
                    cfg->path != QP_PATH_PIXEL_DIRECT};
  if (cfg->harmonic_method == 1) allowed[2] = 0;
  if (cfg->harmonic_method == 2) allowed[1] = 0;
  if (p->n_modes == 0) allowed[1] = allowed[2] = 0;
  QP_CHECK(allowed[0] || allowed[1] || allowed[2], QP_ERR_INPUT,
           "config '%s': the harmonic path has no modes (lmax %d)", cfg->source, cfg->lmax);
  /* SMW inverts N: a noise too ill-conditioned for cfg->accuracy rules it out when another
   * route is allowed (conditioning.h); when it is the only one, its stage refuses the run. */
  if (plan->smw_refused[0] && allowed[1] && (allowed[0] || allowed[2])) allowed[1] = 0;
  double cost[3], peak[3], smallest_peak = 0;
  int best = -1, best_fit = -1;
  /* Each route's pieces; the pixel-direct chunks are the only ones below n_params. */
  qp_plan_pieces pieces[3];
  int64_t default_batch[3] = {p->n_maps, p->n_maps, p->n_maps};
  for (int r = 0; r < 3; ++r)
    pieces[r] = (qp_plan_pieces){p->n_params, p->n_params, 0, 0, 0, 0};
  int64_t *fisher_chunk = &pieces[0].fisher_chunk, *spectra_chunk = &pieces[0].spectra_chunk;
  /* A route whose model has a term beyond 2^56 bytes cannot be sized: it is left out (the
   * same on every rank: the model decides on whole sizes); when no route is left, the first
   * one's error is the plan's. */
  char unsized[3][128] = {"", "", ""}, first_unsized[1024] = "";
  for (int r = 0; r < 3; ++r) {
    if (!allowed[r]) continue;
    qp_plan_pieces *k = &pieces[r];
    qp_err err = r == QP_MODEL_HARMONIC_PROJECTED ? qp_plan_w_block(p, plan, &k->w_block) : QP_OK;
    if (err == QP_OK)
      err = qp_plan_map_batch(p, plan, (qp_model_path)r, k->w_block, &k->map_batch,
                              &default_batch[r]);
    if (err == QP_OK && r == QP_MODEL_HARMONIC_PROJECTED)
      err = qp_plan_product_panel(p, plan, k, &k->product_panel, &smallest_peak);
    if (err == QP_OK && r == 0)
      err = qp_plan_chunks(p, plan, k->map_batch, fisher_chunk, spectra_chunk, &plan->model);
    /* The route's model with its own pieces. */
    if (err == QP_OK)
      err = qp_plan_model(p, plan, (qp_model_path)r, k, &plan->model, &plan->model_dims);
    if (err == QP_ERR_INPUT && plan->model.oversize_term[0]) {
      snprintf(unsized[r], sizeof unsized[r], "term '%s' needs %.3g bytes",
               plan->model.oversize_term, plan->model.oversize_bytes);
      if (!first_unsized[0])
        snprintf(first_unsized, sizeof first_unsized, "%s", qp_error_message());
      qp_error_clear();
      continue;
    }
    QP_CALL(err);
    /* Its host windows in panels where the host limit asks. */
    QP_CALL(qp_plan_host_panel(p, plan));
    k->host_panel = plan->model_dims.host_panel;
    if (qp_cross_unbuilt(p, plan, (qp_model_path)r, k, unsized[r], sizeof unsized[r], first_unsized,
                         sizeof first_unsized))
      continue;
    cost[r] = qp_route_cost(p, plan, (qp_model_path)r);
    if (r == 0 && *fisher_chunk < p->n_params) {
      /* Streaming re-forms the later products: ~n_params^2 / (2 chunk) more of them. */
      double extra = 0;
      for (int64_t first = *fisher_chunk; first < p->n_params; first += *fisher_chunk)
        extra += (double)(p->n_params - first);
      cost[r] += extra * 2.0 * pow((double)p->n_pix, 3);
      /* Cross-spectra's covariance chunk by chunk: X_q = (R G_q R)^T for every q of a chunk and
       * after it, 4 n^3 each, in place of K_p = G_p R's 2 n^3 (stage_fisher.c). */
      if (cfg->n_maps2 > 0)
        cost[r] += ((double)p->n_params + extra) * 4.0 * pow((double)p->n_pix, 3) -
                   (double)p->n_params * 2.0 * pow((double)p->n_pix, 3);
    }
    peak[r] = (double)(qp_model_peak(&plan->model) + plan->model.overhead_bytes);
    QP_CALL(qp_comm_max(&peak[r], 1)); /* distributed: the largest rank decides */
    /* Each rank's device holds its own part: the largest rank decides, as for the host. */
    double device_peak = (double)qp_model_peak_in(&plan->model, QP_SPACE_DEVICE);
    QP_CALL(qp_comm_max(&device_peak, 1));
    if (best < 0 || cost[r] < cost[best]) best = r;
    if ((plan->host_limit <= 0 || peak[r] <= plan->host_limit) &&
        (cfg->device_limit <= 0 || device_peak <= qp_plan_device_room(p)) &&
        (best_fit < 0 || cost[r] < cost[best_fit]))
      best_fit = r;
  }
  QP_CHECK(best >= 0, QP_ERR_INPUT, "config '%s': %s", cfg->source, first_unsized);
  const int chosen = best_fit >= 0 ? best_fit : best;
  int n_allowed = allowed[0] + allowed[1] + allowed[2];
  plan->path_reason[0] = '\0';
  qp_plan_reason_append(plan, "%s: ", names[chosen]);
  if (n_allowed == 1) {
    qp_plan_reason_append(plan, "the only route the config allows");
    if (chosen == 2 && smallest_peak > 0)
      qp_plan_reason_append(plan, "; %.2e flop, peak %s", cost[2], qp_bytes_readable(peak[2]).text);
  } else {
    qp_plan_reason_append(plan, "%s leading cost of the routes allowed",
                          chosen == best ? "lowest" : "lowest fitting the memory limit:");
    for (int r = 0; r < 3; ++r)
      if (allowed[r] && unsized[r][0])
        qp_plan_reason_append(plan, "; %s: cannot be sized (%s)", names[r], unsized[r]);
      else if (allowed[r])
        qp_plan_reason_append(plan, "; %s %.2e flop, peak %s", names[r], cost[r],
                              qp_bytes_readable(peak[r]).text);
  }
  /* Projection without W trades memory for time in its products' panels (qp_plan_product_panel):
   * the width chosen, and the least peak any width allows (after its flops and peak). */
  if (allowed[2] && !unsized[2][0] && smallest_peak > 0 && (n_allowed > 1 || chosen == 2))
    qp_plan_reason_append(plan, " (W's windows %s; %s at the narrowest panel)",
                          pieces[2].product_panel > 0 ? "in panels" : "whole",
                          qp_bytes_readable(smallest_peak).text);
  if (plan->smw_refused[0] && !allowed[1])
    qp_plan_reason_append(plan, "; harmonic (smw) skipped: %s", plan->smw_refused);
  plan->path_used = chosen == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
  plan->smw = chosen == 1;
  plan->flops = cost[chosen];
  /* The chosen route's model with the pieces it was weighed with, its host panel included. */
  const qp_plan_pieces *k = &pieces[chosen];
  QP_CALL(qp_plan_model(p, plan, (qp_model_path)chosen, k, &plan->model, &plan->model_dims));
  if (chosen == 0 && (k->fisher_chunk < p->n_params || k->spectra_chunk < p->n_params))
    qp_plan_reason_append(plan,
                          "; chunks for %s: %lld of %lld products held in fisher_run, %lld "
                          "bin matrices at a time in spectra_run",
                          qp_plan_limits_text(p, plan), (long long)k->fisher_chunk,
                          (long long)p->n_params, (long long)k->spectra_chunk);
  if (qp_model_w_chunked(&plan->model_dims))
    qp_plan_reason_append(plan, "; W in blocks of %lld of %lld columns on the device for %s",
                          (long long)k->w_block, (long long)p->n_modes,
                          qp_plan_limits_text(p, plan));
  plan->map_batch_default = default_batch[chosen];
  if (k->map_batch < default_batch[chosen]) /* memory.device_limit's */
    qp_plan_reason_append(plan, "; maps in batches of %lld of %lld on the device for %s",
                          (long long)k->map_batch, (long long)p->n_maps,
                          qp_plan_limits_text(p, plan));
  else if (k->map_batch < p->n_maps)
    qp_plan_reason_append(plan,
                          "; maps in batches of %lld of %lld (the default: a batch's terms "
                          "within 1/16 of the largest matrix)",
                          (long long)k->map_batch, (long long)p->n_maps);
  if (chosen == 2 && k->product_panel > 0)
    qp_plan_reason_append(plan,
                          "; W's windows and Z's lined-up columns in panels of %lld of %lld "
                          "(l, m) columns for %s",
                          (long long)k->product_panel, (long long)(cfg->lmax + 1) * (cfg->lmax + 1),
                          plan->host_limit > 0 ? qp_plan_limits_text(p, plan)
                                               : "fisher_run within 1/16 of basis_setup's peak");
  if (plan->model_dims.host_panel > 0) {
    char of[64] = "each rank's local lines";
    if (!qp_plan_grid(p, plan)) snprintf(of, sizeof of, "%lld", (long long)p->n_pix);
    qp_plan_reason_append(plan, "; host windows in panels of %lld of %s (%s) for %s",
                          (long long)plan->model_dims.host_panel, of,
                          qp_plan_panel_lines(&plan->model_dims), qp_plan_limits_text(p, plan));
  }
  return QP_OK;
}

/* SMW's check of its N before anything is built: C's conditioning as SMW bounds it
 * (harmonic_route.c, qp_basis_smw), in the fields' units, known from the variances and the
 * C_ell alone, so that `auto` can leave SMW. rcond of the diagonal N is that of its least and
 * largest scaled entries (the fields' scales are powers of 2: the same figures as entry by
 * entry, conditioning.h's qp_scaled_noise_diagonal). N itself, diagonal, is inverted exactly:
 * only recorded (plan->noise_rcond); SMW is refused (plan->smw_refused) when the bound of
 * rcond(C) is below what cfg->accuracy needs. */
static void qp_plan_smw_noise_check(const qp_problem *p, const qp_noise_figures *noise,
                                    qp_plan *plan) {
  const qp_run_scale fields = qp_field_scale(p, p->cfg->lmax_signal + 1, p->cfg->lmax_signal, 1);
  const int64_t count[2] = {p->n_obs_t, p->n_pix - p->n_obs_t};
  double lo = INFINITY, hi = 0.0;
  for (int f = 0; f < 2; ++f) {
    if (count[f] == 0) continue;
    const double s = fields.factor[f];
    const double least = fabs(noise->least[f]) * s * s, most = fabs(noise->most[f]) * s * s;
    if (!isfinite(least) || !isfinite(most)) lo = NAN;
    lo = least < lo ? least : lo;
    hi = most > hi ? most : hi;
  }
  const double rcond = isnan(lo) ? NAN : hi > 0 ? lo / hi : 0.0;
  plan->noise_rcond = rcond;
  const double floor = qp_rcond_floor(p->cfg->accuracy);
  const double rcond_c = qp_smw_covariance_rcond(p, &fields, rcond, hi);
  plan->smw_refused[0] = '\0';
  if (!(isfinite(rcond_c) && rcond_c >= floor))
    snprintf(plan->smw_refused, sizeof plan->smw_refused,
             "its bound of rcond(C), rcond(N) / (1 + lambda_max(S) / lambda_max(N)) = %.3g, "
             "is below %.3g (accuracy %.1e)",
             rcond_c, floor, p->cfg->accuracy);
}

qp_err qp_plan_build(const qp_problem *p, const qp_noise_figures *noise, qp_plan *plan) {
  const qp_config *cfg = p->cfg;
  /* The switch, once: every stage reads it from here. */
  plan->switched = cfg->lmax < cfg->lmax_signal;
  plan->noise_rcond = NAN;
  plan->smw_refused[0] = '\0';
  plan->rerouted = 0;
  /* Scalar variances give N's conditioning before the route is chosen. With the switch SMW
   * inverts N_eff = N + S_fixed instead, dense, whose rcond basis_setup estimates. A
   * `dimensions:` config sizes a run without its inputs (no C_ell, no variances): no check. */
  if (cfg->noise_kind == QP_NOISE_VARIANCE && !plan->switched && !cfg->has_dimensions) {
    const qp_noise_figures scalar = {1,
                                     {p->noise_field_mean[0], p->noise_field_mean[1]},
                                     {p->noise_field_mean[0], p->noise_field_mean[1]},
                                     {p->noise_field_mean[0], p->noise_field_mean[1]}};
    qp_plan_smw_noise_check(p, &scalar, plan);
  }
  /* Cross-spectra: SMW inverts N_B too, whose scalar variances are judged the same way (a
   * variance map's figures are not read at plan time: basis_setup judges N_B then). Either
   * refusal rules SMW out; rcond(N) is the smaller. */
  if (cfg->n_maps2 > 0 && cfg->noise2_kind == QP_NOISE_VARIANCE && !plan->switched &&
      !cfg->has_dimensions && !plan->smw_refused[0]) {
    const double pol = p->n_pix > p->n_obs_t ? cfg->noise2_variance_pol : cfg->noise2_variance;
    const qp_noise_figures scalar = {
        1, {cfg->noise2_variance, pol}, {cfg->noise2_variance, pol}, {cfg->noise2_variance, pol}};
    const double rcond_a = plan->noise_rcond;
    qp_plan_smw_noise_check(p, &scalar, plan);
    if (rcond_a < plan->noise_rcond) plan->noise_rcond = rcond_a;
    if (plan->smw_refused[0]) {
      char why[sizeof plan->smw_refused];
      snprintf(why, sizeof why, "%s", plan->smw_refused);
      snprintf(plan->smw_refused, sizeof plan->smw_refused, "maps2's noise (noise2): %.200s", why);
    }
  }
  QP_CALL(qp_plan_route(p, plan));
  /* A variance map's figures judge SMW only where it was chosen (the route's reason and the
   * recorded rcond of N stay those of a plan that never weighed it otherwise); when they rule
   * it out, the route is chosen again without it (path auto; the reason says why). */
  if (!noise || !noise->known || plan->switched || plan->path_used != QP_PATH_HARMONIC ||
      !plan->smw)
    return QP_OK;
  qp_plan_smw_noise_check(p, noise, plan);
  if (!plan->smw_refused[0]) return QP_OK;
  QP_CALL(qp_plan_route(p, plan));
  plan->rerouted = !plan->smw; /* SMW the only route allowed: basis_setup refuses it */
  return QP_OK;
}
