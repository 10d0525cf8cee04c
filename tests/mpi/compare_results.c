/* compare_results.c: compares the results of two qmlpipe runs (REFERENCE.h5 OTHER.h5 [TOL]):
 * the Fisher matrix, y, the noise bias and C_hat must agree to TOL relative (default 1e-10),
 * measured as max |a - b| / max |a| over each dataset. Exit 0 when they do, 1 otherwise. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double *read_all(const char *path, const char *name, hsize_t *count) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return NULL;
  double *out = NULL;
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  if (set >= 0) {
    hid_t space = H5Dget_space(set);
    *count = (hsize_t)H5Sget_simple_extent_npoints(space);
    out = malloc((*count > 0 ? *count : 1) * sizeof *out);
    if (out && H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
      free(out);
      out = NULL;
    }
    H5Sclose(space);
    H5Dclose(set);
  }
  H5Fclose(file);
  return out;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: compare_results REFERENCE.h5 OTHER.h5 [TOLERANCE]\n");
    return 2;
  }
  const double tolerance = argc > 3 ? atof(argv[3]) : 1e-10;
  static const char *const names[] = {"fisher", "spectra/yb", "spectra/noise_bias",
                                      "spectra/cl", "spectra/error"};
  int failed = 0;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    hsize_t na = 0, nb = 0;
    double *a = read_all(argv[1], names[k], &na), *b = read_all(argv[2], names[k], &nb);
    if (!a || !b || na != nb) {
      printf("%-20s cannot compare (missing, or sizes %llu and %llu)\n", names[k],
             (unsigned long long)na, (unsigned long long)nb);
      failed = 1;
    } else {
      double diff = 0, scale = 0;
      for (hsize_t i = 0; i < na; ++i) {
        diff = fmax(diff, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(a[i]));
      }
      double rel = scale > 0 ? diff / scale : diff;
      int ok = rel <= tolerance && isfinite(rel);
      printf("%-20s %6llu values  max rel. difference %.3e  %s\n", names[k],
             (unsigned long long)na, rel, ok ? "ok" : "TOO LARGE");
      failed |= !ok;
    }
    free(a);
    free(b);
  }
  return failed;
}
