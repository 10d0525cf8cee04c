/* simulate_outputs.h: the files `qmlpipe simulate` writes, checked before it draws anything
 * (base/output_path.h): the maps of --out, the --mask, and --example's directory. */
#ifndef QP_SIMULATE_OUTPUTS_H
#define QP_SIMULATE_OUTPUTS_H

#include "qp_error.h"

/** The first line of the config `--example` writes; an existing DIR/config.yaml that starts
 *  with it is an earlier example, whose files a new example may replace. */
#define QP_EXAMPLE_MARK "# qmlpipe example written by `qmlpipe simulate --example`"

/** Map k of `prefix`: "<prefix>_%04d.fits" into `out` (`size` bytes); 0 when it does not fit. */
int qp_simulate_map_path(const char *prefix, int k, char *out, size_t size);

/** Checks every map of --out (`prefix`, `n_maps`) and the --mask (`mask`, may be NULL): the
 *  shared output check with --cls (`cls`) as the input, and the mask not one of the maps.
 *  QP_ERR_IO (QP_ERR_INPUT for a path too long) naming the option and the path. */
qp_err qp_simulate_check_outputs(const char *prefix, int n_maps, const char *mask, const char *cls);

/** Checks the second set of --pairs (`prefix2`, `n_maps`, the --out2 maps) as
 *  qp_simulate_check_outputs checks the first: the shared output check with --cls as the input,
 *  and the --mask (may be NULL) not one of them. QP_ERR_IO (QP_ERR_INPUT for a path too long)
 *  naming --out2 and the path. */
qp_err qp_simulate_check_pairs(const char *prefix2, int n_maps, const char *mask, const char *cls);

/** Checks the files of `--example DIR` (made when missing: cls.txt, mask.fits, the n_maps maps
 *  and config.yaml) as above, and that an existing DIR holds no file of another run: where any
 *  of them exists, DIR/config.yaml must be an earlier example's (QP_EXAMPLE_MARK), else the
 *  user's config, maps or mask would be replaced. QP_ERR_IO naming DIR and the file. */
qp_err qp_simulate_check_example(const char *dir, int n_maps, const char *cls);

#endif
