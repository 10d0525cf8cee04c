/* test_h5_disk_full.c: an HDF5 file written onto a full disk (io/h5_matrix.h, through
 * base/h5_image.h and atomic_file.h): QP_ERR_IO naming the file and "No space left on
 * device" (or "File too large"), no temporary left, the old file under that name untouched,
 * and then a normal exit: HDF5 1.10's exit handler crashed (SIGSEGV) after an H5Fclose that
 * had failed to flush, so this program must also end with status 0, through exit() and the
 * handlers, not be killed. The full disk is a real tmpfs of 16 KiB (mounting needs root); as
 * a second, unprivileged case, RLIMIT_FSIZE of 16 KiB with SIGXFSZ ignored. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5_matrix.h"
#include "test_util.h"

enum { N = 100 }; /* an N x N matrix: 80 KB, more than the 16 KiB there is */

/* Writes the matrix to dir/m.h5 where "old" stands, expecting the failure. */
static void write_onto_full(const char *dir, const char *reason) {
  char path[256], old[64] = "";
  snprintf(path, sizeof path, "%s/m.h5", dir);
  qp_test_write_text(path, "old\n");
  static double data[N * N];
  for (int i = 0; i < N * N; ++i) data[i] = 1.0 / (1 + i);
  EXPECT_ERROR(qp_h5_matrix_write(path, "/covariance", N, N, data), QP_ERR_IO, path, reason);
  FILE *f = fopen(path, "r");
  TEST_ASSERT(f && fgets(old, sizeof old, f) && strcmp(old, "old\n") == 0,
              "%s: the old file changed", path);
  if (f) fclose(f);
  TEST_ASSERT(qp_test_find_temps(dir, NULL, 0) == 0, "%s: a temporary was left", dir);
  unlink(path);
}

int main(void) {
  H5open();
  /* 1. a real full file system */
  mkdir("h5_full.d", 0755);
  if (mount("tmpfs", "h5_full.d", "tmpfs", 0, "size=16k") == 0) {
    write_onto_full("h5_full.d", "No space left on device");
    umount("h5_full.d");
  } else {
    printf("tmpfs: cannot mount (%s): that case is skipped\n", strerror(errno));
  }
  rmdir("h5_full.d");
  /* 2. a file-size limit (what a batch system's RLIMIT_FSIZE does), SIGXFSZ ignored */
  struct rlimit saved, small;
  getrlimit(RLIMIT_FSIZE, &saved);
  small = saved;
  small.rlim_cur = 16 * 1024;
  signal(SIGXFSZ, SIG_IGN);
  mkdir("h5_fsize.d", 0755);
  if (setrlimit(RLIMIT_FSIZE, &small) == 0) {
    write_onto_full("h5_fsize.d", "File too large");
    setrlimit(RLIMIT_FSIZE, &saved);
  }
  rmdir("h5_fsize.d");
  if (qp_test_failures) fprintf(stderr, "test_h5_disk_full: %d failure(s)\n", qp_test_failures);
  /* exit(), not _exit(): HDF5's exit handler runs, and must not crash. */
  exit(qp_test_failures != 0);
}
