/* poke_results.c: changes one value of a double dataset of a results file in place, for the
 * check that compare_results fails on a bad file (compare_nan.sh):
 *   poke_results FILE.h5 DATASET first|middle|last VALUE
 * VALUE is a number, nan, inf or -inf (strtod), or xFACTOR to multiply the value there.
 * Exit 0 when written, 1 on an HDF5 error, 2 on a bad command line. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: poke_results FILE.h5 DATASET first|middle|last VALUE|xFACTOR\n");
    return 2;
  }
  const int first = strcmp(argv[3], "first") == 0, last = strcmp(argv[3], "last") == 0;
  if (!first && !last && strcmp(argv[3], "middle") != 0) {
    fprintf(stderr, "poke_results: the position is first, middle or last, not '%s'\n", argv[3]);
    return 2;
  }
  const int scale = argv[4][0] == 'x';
  char *end = NULL;
  const double value = strtod(argv[4] + scale, &end);
  if (end == argv[4] + scale || *end != '\0') {
    fprintf(stderr, "poke_results: '%s' is not a number, nan, inf or xFACTOR\n", argv[4]);
    return 2;
  }
  int status = 1;
  double *data = NULL;
  hid_t file = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t set = file >= 0 ? H5Dopen2(file, argv[2], H5P_DEFAULT) : -1;
  hid_t space = set >= 0 ? H5Dget_space(set) : -1;
  const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : 0;
  if (n > 0 && (data = malloc((size_t)n * sizeof *data)) &&
      H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0) {
    const hssize_t at = first ? 0 : (last ? n - 1 : n / 2);
    const double old = data[at];
    data[at] = scale ? old * value : value;
    if (H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0) {
      printf("%s %s[%lld of %lld]: %.17g -> %.17g\n", argv[1], argv[2], (long long)at, (long long)n,
             old, data[at]);
      status = 0;
    }
  }
  if (status != 0) fprintf(stderr, "poke_results: cannot change %s in %s\n", argv[2], argv[1]);
  free(data);
  if (space >= 0) H5Sclose(space);
  if (set >= 0) H5Dclose(set);
  if (file >= 0) H5Fclose(file);
  return status;
}
