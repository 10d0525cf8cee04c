/* terms.h: every name of the pipeline's budget terms, for the code that needs them all
 * (checkpoints, tests). Each stage names the terms it allocates in the header beside its
 * declaration of them to the memory model (stages/<stage>_terms.h), and its code includes
 * that one; the backend's terms that no stage names are in backend_terms.h, the cuda
 * backend's own buffers in linalg/backends/cuda_backend.h. */
#ifndef QP_TERMS_H
#define QP_TERMS_H

#include "backend_terms.h"
#include "basis_terms.h"
#include "covariance_terms.h"
#include "fisher_terms.h"
#include "spectra_terms.h"

#endif
