/* config_check.c: the checks of a config that involve several keys (config_sections.h), once
 * the whole file was read: required keys, dimensions against maps, lmax_signal >= lmax >=
 * ell_min, bins, per-field noise against fields, spectra against fields; and the defaults
 * that depend on other keys. Each message points at the line of the key at fault. */
#include "config_sections.h"

#include <stdint.h>

/* Per-field variances of `noise` or `noise2` against the fields: none missing, none ignored;
 * variance_p defaults to the variance of T. */
static qp_err qp_cfg_check_noise(const qp_cfg_ctx *ctx, const char *section, int key,
                                 qp_fields fields, qp_noise_kind kind, int t_line, int p_line,
                                 double variance, double *variance_pol) {
  const int has_t = fields != QP_FIELDS_QU, has_p = fields != QP_FIELDS_T;
  if (t_line || p_line) {
    QP_CHECK(has_t == (t_line > 0), QP_ERR_INPUT, "config %s line %d: fields %s %s %s.variance_t",
             ctx->file, ctx->line[key], has_t ? (has_p ? "TQU" : "T") : "QU",
             has_t ? "need" : "have no T for", section);
    QP_CHECK(has_p == (p_line > 0), QP_ERR_INPUT, "config %s line %d: fields %s %s %s.variance_p",
             ctx->file, ctx->line[key], has_p ? (has_t ? "TQU" : "QU") : "T",
             has_p ? "need" : "have no Q/U for", section);
  }
  if (kind == QP_NOISE_VARIANCE) {
    QP_CHECK(!has_t || variance > 0, QP_ERR_INPUT,
             "config %s line %d: fields with T need %s.variance or %s.variance_t", ctx->file,
             ctx->line[key], section, section);
    QP_CHECK(!has_p || *variance_pol > 0 || variance > 0, QP_ERR_INPUT,
             "config %s line %d: fields with Q/U need %s.variance or %s.variance_p", ctx->file,
             ctx->line[key], section, section);
    if (*variance_pol <= 0) *variance_pol = variance;
  }
  return QP_OK;
}

/* maps2 and noise2 go together, maps2 as long as maps (map k crossed with map k). */
static qp_err qp_cfg_check_cross(const qp_cfg_ctx *ctx, qp_config *cfg) {
  if (ctx->line[K_MAPS2] == 0) {
    QP_CHECK(ctx->line[K_NOISE2] == 0, QP_ERR_INPUT,
             "config %s line %d: noise2 is the noise of maps2 (cross-spectra), but there is no "
             "maps2",
             ctx->file, ctx->line[K_NOISE2]);
    return QP_OK;
  }
  QP_CHECK(!cfg->has_dimensions, QP_ERR_INPUT,
           "config %s line %d: 'dimensions' stands for maps: give maps and maps2, not dimensions",
           ctx->file, ctx->line[K_MAPS2]);
  QP_CHECK(ctx->line[K_NOISE2] > 0, QP_ERR_INPUT,
           "config %s line %d: maps2 (cross-spectra) needs noise2, the noise of maps2 (the keys "
           "of noise)",
           ctx->file, ctx->line[K_MAPS2]);
  QP_CHECK(cfg->n_maps2 == cfg->n_maps, QP_ERR_INPUT,
           "config %s line %d: maps2 has %d map(s) and maps %d: map k of maps2 is crossed with map "
           "k of maps, so both lists must be as long",
           ctx->file, ctx->line[K_MAPS2], cfg->n_maps2, cfg->n_maps);
  QP_CALL(qp_cfg_check_noise(ctx, "noise2", K_NOISE2, cfg->fields, cfg->noise2_kind,
                             ctx->variance2_t_line, ctx->variance2_p_line, cfg->noise2_variance,
                             &cfg->noise2_variance_pol));
  return QP_OK;
}

/* The checks that involve several keys, after the whole file was read. */
qp_err qp_cfg_check(qp_cfg_ctx *ctx, qp_config *cfg) {
  static const int required[] = {K_MAPS, K_MASK, K_CLS, K_NOISE, K_LMAX};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; ++i) {
    /* A `dimensions:` block stands for the data: no maps, mask or C_ell file then. */
    if (cfg->has_dimensions && required[i] != K_NOISE && required[i] != K_LMAX) continue;
    QP_CHECK(ctx->line[required[i]] > 0, QP_ERR_INPUT, "config %s: missing required key '%s'",
             ctx->file, qp_top_keys[required[i]]);
  }
  if (cfg->has_dimensions) {
    QP_CHECK(ctx->line[K_MAPS] == 0 && ctx->line[K_MASK] == 0, QP_ERR_INPUT,
             "config %s line %d: 'dimensions' stands for maps and mask: give one or the other",
             ctx->file, ctx->line[K_DIMENSIONS]);
    QP_CHECK(cfg->dim_n_pix > 0 && cfg->dim_n_bins > 0, QP_ERR_INPUT,
             "config %s line %d: 'dimensions' needs n_pix and n_bins (and lmax)", ctx->file,
             ctx->line[K_DIMENSIONS]);
    if (cfg->dim_n_maps == 0) cfg->dim_n_maps = 1;
  }
  QP_CHECK(cfg->lmax >= cfg->ell_min, QP_ERR_INPUT,
           "config %s line %d: lmax (%d) must be >= ell_min (%d)", ctx->file, ctx->line[K_LMAX],
           cfg->lmax, cfg->ell_min);
  if (ctx->line[K_LMAX_SIGNAL] == 0) cfg->lmax_signal = cfg->lmax;
  QP_CHECK(cfg->lmax_signal >= cfg->lmax, QP_ERR_INPUT,
           "config %s line %d: lmax_signal (%d) must be >= lmax (%d)", ctx->file,
           ctx->line[K_LMAX_SIGNAL], cfg->lmax_signal, cfg->lmax);
  /* (lmax + 1)^2, the (l, m) of a field, must be an int (spin_harmonics.h): lmax <= 46339. */
  const int lmax_key = cfg->lmax > QP_LMAX_MAX ? K_LMAX : K_LMAX_SIGNAL;
  QP_CHECK(cfg->lmax_signal <= QP_LMAX_MAX, QP_ERR_INPUT,
           "config %s line %d: %s = %d is beyond %d, the largest multipole qmlpipe indexes "
           "((lmax + 1)^2 modes a field must fit an int)",
           ctx->file, ctx->line[lmax_key], qp_top_keys[lmax_key],
           lmax_key == K_LMAX ? cfg->lmax : cfg->lmax_signal, QP_LMAX_MAX);
  /* Bins are disjoint sets of multipoles: no more of them than multipoles (and n_bins x
   * spectra, the parameters, then fits an int). */
  QP_CHECK(!cfg->has_dimensions || cfg->dim_n_bins <= (int64_t)cfg->lmax - cfg->ell_min + 1,
           QP_ERR_INPUT,
           "config %s line %d: dimensions.n_bins = %lld is more than the %d multipoles from "
           "ell_min %d to lmax %d",
           ctx->file, ctx->line[K_DIMENSIONS], (long long)cfg->dim_n_bins,
           cfg->lmax - cfg->ell_min + 1, cfg->ell_min, cfg->lmax);
  QP_CHECK(ctx->line[K_BIN_WIDTH] == 0 || ctx->line[K_BINS] == 0, QP_ERR_INPUT,
           "config %s line %d: give either bin_width (line %d) or bins, not both", ctx->file,
           ctx->line[K_BINS], ctx->line[K_BIN_WIDTH]);

  /* A table the run would not apply is refused rather than ignored: a window left off by
   * mistake would bias every C_ell by 1 / w_l^2 without a word. */
  QP_CHECK(cfg->pixel_window || ctx->line[K_PIXEL_WINDOW_FILE] == 0, QP_ERR_INPUT,
           "config %s line %d: pixel_window_file names a table, but pixel_window is false: set "
           "pixel_window: true to apply it, or remove pixel_window_file",
           ctx->file, ctx->line[K_PIXEL_WINDOW_FILE]);

  const int has_p = cfg->fields != QP_FIELDS_T;
  QP_CHECK(has_p || ctx->line[K_MASK_POL] == 0, QP_ERR_INPUT,
           "config %s line %d: mask_pol is the mask of Q and U, but fields is T", ctx->file,
           ctx->line[K_MASK_POL]);
  QP_CALL(qp_cfg_check_noise(ctx, "noise", K_NOISE, cfg->fields, cfg->noise_kind,
                             ctx->variance_t_line, ctx->variance_p_line, cfg->noise_variance,
                             &cfg->noise_variance_pol));
  QP_CALL(qp_cfg_check_cross(ctx, cfg));

  /* Without a `spectra:` key, every auto-spectrum the fields allow (plus TE for TQU):
   * T -> TT, QU -> EE BB, TQU -> TT EE BB TE. The header's default TT is the T case. */
  if (ctx->line[K_SPECTRA] == 0) {
    static const qp_spectrum defaults[3][4] = {
        {QP_TT}, {QP_EE, QP_BB}, {QP_TT, QP_EE, QP_BB, QP_TE}};
    static const int n_defaults[3] = {1, 2, 4};
    cfg->n_spectra = n_defaults[cfg->fields];
    for (int i = 0; i < cfg->n_spectra; ++i)
      cfg->spectra[i] = defaults[cfg->fields][i];
  }
  static const char *const allowed_text[] = {"TT", "EE BB EB", "TT EE BB TE TB EB"};
  for (int i = 0; i < cfg->n_spectra; ++i) {
    qp_spectrum s = cfg->spectra[i];
    int ok = cfg->fields == QP_FIELDS_TQU || (cfg->fields == QP_FIELDS_T && s == QP_TT) ||
             (cfg->fields == QP_FIELDS_QU && (s == QP_EE || s == QP_BB || s == QP_EB));
    QP_CHECK(ok, QP_ERR_INPUT,
             "config %s line %d: spectrum %s needs maps with %s; fields %s allows only %s",
             ctx->file, ctx->line[K_SPECTRA], qp_spectrum_name(s),
             (s == QP_TT)                 ? "T"
             : (s == QP_TE || s == QP_TB) ? "T and Q/U"
                                          : "Q/U",
             qp_cfg_field_names[cfg->fields], allowed_text[cfg->fields]);
  }
  return QP_OK;
}
