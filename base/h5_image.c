/* h5_image.c: see h5_image.h. */
#include "h5_image.h"

#include <stdlib.h>

#include "atomic_file.h"
#include "h5_error.h"

/* The core driver's growth step. It zeroes each step as it grows the image: a results file is
 * ~70 KiB (T nside 16; the memory timeline adds 40 bytes a sample), and a 1 MiB step cost
 * 256 page faults, 3 ms of a 0.6 s run on this project's VM, where 64 KiB cost 16 (H5Fcreate
 * 5.3 -> 2.2 ms). Larger files grow by realloc, which moves mapped blocks without copying. */
enum { QP_H5_IMAGE_INCREMENT = 64 << 10 };

qp_err qp_h5_image_create(const char *target, hid_t *file) {
  qp_err err = QP_OK;
  hid_t fapl = H5I_INVALID_HID;
  *file = H5I_INVALID_HID;
  QP_H5_GOTO(fapl = H5Pcreate(H5P_FILE_ACCESS), done, "%s: file access list", target);
  QP_H5_GOTO(H5Pset_fapl_core(fapl, QP_H5_IMAGE_INCREMENT, 0), done, "%s: file access list",
             target);
  QP_H5_GOTO(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), done, "%s: file access list", target);
  QP_H5_GOTO(*file = H5Fcreate(target, H5F_ACC_TRUNC, H5P_DEFAULT, fapl), done,
             "cannot create '%s' (in memory)", target);
done:
  if (fapl >= 0) H5Pclose(fapl);
  return err;
}

qp_err qp_h5_image_save(hid_t file, const char *target) {
  qp_err err = QP_OK;
  void *image = NULL;
  ssize_t size = -1;
  if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || (size = H5Fget_file_image(file, NULL, 0)) <= 0) {
    err = qp_h5_fail(QP_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot take the file's image",
                     target);
    H5Fclose(file);
    return err;
  }
  /* Plain malloc: the file's bytes, after the stages, like the core driver's own copy. */
  image = malloc((size_t)size);
  if (image && H5Fget_file_image(file, image, (size_t)size) != size)
    err = qp_h5_fail(QP_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot take the file's image",
                     target);
  H5Fclose(file); /* memory only: cannot fail on the disk */
  if (!image)
    return qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                        "%s: no memory for the file's %zd bytes", target, size);
  qp_atomic_file tmp;
  if (err == QP_OK) err = qp_atomic_begin(target, &tmp);
  if (err == QP_OK) {
    err = qp_atomic_write_bytes(&tmp, image, (size_t)size);
    if (err == QP_OK) err = qp_atomic_commit(&tmp, 1);
    if (err != QP_OK) qp_atomic_abort(&tmp);
  }
  free(image);
  if (err != QP_OK) qp_error_trace(__FILE__, __LINE__, __func__);
  return err;
}
