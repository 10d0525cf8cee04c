/* test_input_file: base/input_file.h, the opener every user-named input passes through.
 * A regular file opens (blocking, close-on-exec, through a symlink too); a FIFO without a
 * writer, /dev/null, /dev/zero, a directory, a socket and a symlink to a FIFO are refused at
 * once naming role, path and kind (QP_ERR_IO); a missing or unreadable file is QP_ERR_IO with
 * the system's reason; a blank at an end of the path or of its file name and a size over the
 * bound are QP_ERR_INPUT. No failure leaves a descriptor open. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "input_file.h"
#include "test_util.h"

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (readdir(d))
    ++n;
  closedir(d);
  return n;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  TEST_ASSERT(f != NULL, "cannot write %s", path);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* One refused path: the code, the words of the message, *fd -1, no descriptor left open. */
#define REFUSED(path, max, code, ...)                                                              \
  do {                                                                                             \
    const int fds_ = open_fds();                                                                   \
    int fd_ = 7;                                                                                   \
    EXPECT_ERROR(qp_input_open("test file", (path), (max), &fd_), (code), "test file",             \
                 __VA_ARGS__);                                                                     \
    TEST_ASSERT(fd_ == -1, "%s: *fd is %d after a failure", (path), fd_);                          \
    TEST_ASSERT(open_fds() == fds_, "%s: a descriptor was left open", (path));                     \
  } while (0)

int main(void) {
  /* A regular file: opened, blocking, close-on-exec; its bytes read through the stream. */
  write_text("test_input_ok.txt", "0 1 2 3 4\n");
  int fd = -1;
  TEST_OK(qp_input_open("test file", "test_input_ok.txt", QP_INPUT_TEXT_MAX_BYTES, &fd));
  TEST_ASSERT(fd >= 0, "no descriptor for a regular file");
  if (fd >= 0) {
    TEST_ASSERT((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0, "the descriptor is left non-blocking");
    TEST_ASSERT((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "the descriptor is not close-on-exec");
    close(fd);
  }
  FILE *f = NULL;
  TEST_OK(qp_input_fopen("test file", "test_input_ok.txt", 10, &f));
  char line[32] = "";
  TEST_ASSERT(f && fgets(line, sizeof line, f) && strcmp(line, "0 1 2 3 4\n") == 0,
              "read '%s' through qp_input_fopen", line);
  if (f) fclose(f);
  TEST_OK(qp_input_check("test file", "test_input_ok.txt", QP_INPUT_ANY_SIZE));
  TEST_ASSERT(symlink("test_input_ok.txt", "test_input_link") == 0 || errno == EEXIST,
              "cannot make a symlink");
  TEST_OK(qp_input_check("test file", "test_input_link", QP_INPUT_ANY_SIZE));
  /* Blanks inside a name are a name like any other. */
  write_text("test input inner.txt", "x\n");
  TEST_OK(qp_input_check("test file", "test input inner.txt", QP_INPUT_ANY_SIZE));

  /* The size bound: 10 bytes pass a bound of 10 and fail one of 9. */
  REFUSED("test_input_ok.txt", 9, QP_ERR_INPUT, "test_input_ok.txt", "10 bytes", "9 bytes");

  /* Not files. */
  REFUSED("test_input_missing.txt", QP_INPUT_ANY_SIZE, QP_ERR_IO, "cannot open",
          "test_input_missing.txt", "No such file");
  REFUSED("", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "the path is empty");
  mkdir("test_input_dir", 0755);
  REFUSED("test_input_dir", QP_INPUT_ANY_SIZE, QP_ERR_IO, "'test_input_dir' is a directory",
          "not a regular file");
  unlink("test_input_fifo");
  TEST_ASSERT(mkfifo("test_input_fifo", 0644) == 0, "cannot make a FIFO");
  REFUSED("test_input_fifo", QP_INPUT_ANY_SIZE, QP_ERR_IO, "is a named pipe (FIFO)");
  unlink("test_input_fifo_link");
  TEST_ASSERT(symlink("test_input_fifo", "test_input_fifo_link") == 0, "cannot make a symlink");
  REFUSED("test_input_fifo_link", QP_INPUT_ANY_SIZE, QP_ERR_IO, "is a named pipe (FIFO)");
  REFUSED("/dev/null", QP_INPUT_ANY_SIZE, QP_ERR_IO, "'/dev/null' is a character device");
  REFUSED("/dev/zero", QP_INPUT_TEXT_MAX_BYTES, QP_ERR_IO, "'/dev/zero' is a character device");
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "test_input_socket");
  unlink(addr.sun_path);
  TEST_ASSERT(s >= 0 && bind(s, (struct sockaddr *)&addr, sizeof addr) == 0,
              "cannot make a socket");
  REFUSED("test_input_socket", QP_INPUT_ANY_SIZE, QP_ERR_IO, "is a socket");
  if (s >= 0) close(s);

  /* Blanks at an end: of the path, or of its file name after a directory. */
  REFUSED(" test_input_ok.txt", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "' test_input_ok.txt'",
          "begins with a blank");
  REFUSED("test_input_ok.txt ", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "ends with a blank");
  REFUSED("test_input_ok.txt\t", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "ends with a blank");
  REFUSED("./ test_input_ok.txt", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "begins with a blank");
  REFUSED("\ntest_input_ok.txt", QP_INPUT_ANY_SIZE, QP_ERR_INPUT, "begins with a blank");

  /* The kinds in words. */
  TEST_ASSERT(strcmp(qp_input_kind(S_IFREG), "a regular file") == 0, "S_IFREG");
  TEST_ASSERT(strcmp(qp_input_kind(S_IFBLK), "a block device") == 0, "S_IFBLK");

  unlink("test_input_socket");
  unlink("test_input_fifo_link");
  unlink("test_input_fifo");
  unlink("test_input_link");
  unlink("test input inner.txt");
  unlink("test_input_ok.txt");
  rmdir("test_input_dir");
  return TEST_RETURN();
}
