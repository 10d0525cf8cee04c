/* test_bins_text: the bins file reader (io/bins_text.h) on its own: what it accepts, what it
 * refuses (QP_ERR_INPUT naming the file and the line), and files it cannot read (QP_ERR_IO),
 * a FIFO among them, which it must refuse without waiting for a writer. The command-line side
 * (exit statuses through `qmlpipe plan`) is tests/pipeline/test_bins_cli.c. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bins_text.h"
#include "test_util.h"

static void write_bytes(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(text, 1, n, f);
  fclose(f);
}

static void write_text(const char *path, const char *text) {
  write_bytes(path, text, strlen(text));
}

/* Reads `text` as a bins file for [2, 20]; expects failure with `needle` in the message. */
static void refuse(const char *text, const char *line, const char *needle) {
  write_text("test_bins_bad.txt", text);
  qp_bins b;
  EXPECT_ERROR(qp_bins_read("test_bins_bad.txt", 2, 20, &b), QP_ERR_INPUT, "test_bins_bad.txt",
               line, needle);
  TEST_ASSERT(b.n == 0 && b.lo == NULL && b.hi == NULL, "a refused file left bins behind");
}

int main(void) {
  qp_bins b;
  /* Accepted: comments whole-line and trailing, blank lines, CRLF, signs, gaps, one-multipole
   * bins, a comment line far longer than any fixed buffer. */
  char text[8192];
  int used = snprintf(text, sizeof text, "# header\n\n  2 3\r\n+5 5 # single\n\t7\t20\t\n#");
  while (used < 6000)
    used += snprintf(text + used, sizeof text - (size_t)used, " 11 12");
  snprintf(text + used, sizeof text - (size_t)used, "\n");
  write_text("test_bins_good.txt", text);
  TEST_OK(qp_bins_read("test_bins_good.txt", 2, 20, &b));
  TEST_ASSERT(b.n == 3 && b.lo[0] == 2 && b.hi[0] == 3 && b.lo[1] == 5 && b.hi[1] == 5 &&
                  b.lo[2] == 7 && b.hi[2] == 20,
              "read %d bins", b.n);
  qp_bins_free(&b);
  qp_bins_free(&b); /* twice is safe */

  refuse("2 5 junk\n", "line 1", "'junk' after the bin '2 5'");
  refuse("2 5\n\n6 9 10\n", "line 3", "'10' after the bin '6 9'");
  refuse("2 5 #ok\n6 7#\n8\n", "line 3", "ell_max is missing");
  refuse("2 5\n6 10.9\n", "line 2", "'10.9' is not an integer");
  refuse("2 1e1\n", "line 1", "'1e1' is not an integer");
  refuse("2 -\n", "line 1", "'-' is not an integer");
  refuse("2 +\n", "line 1", "'+' is not an integer");
  refuse("2,5\n", "line 1", "'2,5' is not an integer");
  refuse("2 2147483648\n", "line 1", "out of range");
  refuse("-99999999999999999999 5\n", "line 1", "out of range");
  refuse("9 4\n", "line 1", "ends before it starts");
  refuse("1 4\n", "line 1", "below the config's ell_min = 2");
  refuse("2 4\n5 21\n", "line 2", "above the config's lmax = 20");
  refuse("2 6\n# gap\n6 9\n", "line 3", "overlaps the bin '2 6' of line 1");
  refuse("8 9\n2 4\n", "line 2", "comes before the bin '8 9' of line 1");
  refuse("# nothing\n   \n", "", "has no bins");
  refuse("", "", "has no bins");
  /* A line of 3000 blanks between two bins' worth of numbers is still one line. */
  used = snprintf(text, sizeof text, "2 4%3000s6 8\n", "");
  refuse(text, "line 1", "'6' after the bin '2 4'");

  write_bytes("test_bins_nul.txt", "2 4\n6\0 8\n", 9);
  EXPECT_ERROR(qp_bins_read("test_bins_nul.txt", 2, 20, &b), QP_ERR_INPUT, "test_bins_nul.txt",
               "line 2", "NUL byte");

  /* Files that cannot be read. */
  EXPECT_ERROR(qp_bins_read("test_bins_missing.txt", 2, 20, &b), QP_ERR_IO, "test_bins_missing.txt",
               "No such file");
  TEST_ASSERT(mkdir("test_bins_dir", 0755) == 0, "cannot make a directory");
  EXPECT_ERROR(qp_bins_read("test_bins_dir", 2, 20, &b), QP_ERR_IO, "test_bins_dir",
               "is a directory");
  rmdir("test_bins_dir");
  TEST_ASSERT(mkfifo("test_bins_fifo", 0644) == 0, "cannot make a FIFO");
  EXPECT_ERROR(qp_bins_read("test_bins_fifo", 2, 20, &b), QP_ERR_IO, "test_bins_fifo",
               "not a regular file");
  unlink("test_bins_fifo");
  if (geteuid() != 0) { /* root reads a file of mode 000 anyway */
    write_text("test_bins_unreadable.txt", "2 4\n");
    chmod("test_bins_unreadable.txt", 0);
    EXPECT_ERROR(qp_bins_read("test_bins_unreadable.txt", 2, 20, &b), QP_ERR_IO,
                 "test_bins_unreadable.txt", "Permission denied");
    unlink("test_bins_unreadable.txt");
  } else {
    printf("running as root: the unreadable-file case is skipped\n");
  }

  unlink("test_bins_good.txt");
  unlink("test_bins_bad.txt");
  unlink("test_bins_nul.txt");
  return TEST_RETURN();
}
