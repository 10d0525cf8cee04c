/* device_choice.c: one GPU per rank from the launcher's local rank (device_choice.h). */
#include "device_choice.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/* In the order the first set one wins: the launchers that export a node-local rank. */
static const char *const qp_local_rank_variables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                                      "MPI_LOCALRANKID"};

qp_err qp_device_choose(int device_count, qp_device_choice *choice) {
  *choice = (qp_device_choice){.device = 0, .local_rank = -1, .source = NULL};
  QP_CHECK(device_count >= 1, QP_ERR_UNSUPPORTED, "no CUDA device to choose from (count %d)",
           device_count);
  for (size_t k = 0; k < sizeof qp_local_rank_variables / sizeof qp_local_rank_variables[0]; ++k) {
    const char *name = qp_local_rank_variables[k], *text = getenv(name);
    if (!text) continue;
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    QP_CHECK(errno == 0 && end != text && *end == '\0' && value >= 0 && value <= INT_MAX,
             QP_ERR_INPUT,
             "the launcher's local rank %s='%s' is not a non-negative integer: cannot choose a "
             "GPU for this rank",
             name, text);
    choice->local_rank = (int)value;
    choice->source = name;
    choice->device = (int)(value % device_count);
    return QP_OK;
  }
  return QP_OK;
}
