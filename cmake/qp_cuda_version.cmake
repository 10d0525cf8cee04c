# qp_cuda_version.cmake: the oldest CUDA toolkit the cuda backend compiles with.
#
# The backend calls the 64-bit interfaces of both libraries so that no matrix size meets a
# 32-bit integer: cuSOLVER's generic API (cusolverDnXpotrf, Xpotrs, Xgetrf, Xgetrs: CUDA 11.1;
# cusolverDnXtrtri: 11.4) and cuBLAS's _64 functions (cublasDgemm_64, Dtrsm_64, Dgeam_64 ...:
# CUDA 12.0). The later of the two is the floor. tests/unit/test_cuda_version.cmake checks
# both sides of it in script mode.
set(QP_CUDA_MIN_VERSION 12.0)

# Stops configuration with a message that says what is missing when `version` is older.
function(qp_check_cuda_version version)
  if(version VERSION_LESS QP_CUDA_MIN_VERSION)
    message(FATAL_ERROR "QP_ENABLE_CUDA: CUDA toolkit ${version} is too old: qmlpipe's cuda "
      "backend needs CUDA ${QP_CUDA_MIN_VERSION} or later for cuBLAS's 64-bit interface "
      "(cublasDgemm_64 and the other _64 functions, new in 12.0) next to cuSOLVER's 64-bit "
      "generic API (cusolverDnXpotrf and cusolverDnXgetrf since 11.1, cusolverDnXtrtri since "
      "11.4). Point CMake at a newer toolkit with -DCUDAToolkit_ROOT=..., or configure with "
      "-DQP_ENABLE_CUDA=OFF.")
  endif()
endfunction()
