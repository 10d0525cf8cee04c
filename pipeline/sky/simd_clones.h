/* simd_clones.h: QP_WIDEST_VECTORS, for the few loops of the sky functions that run over many
 * independent lanes (wigner.c, pixel_matrices.c): GCC builds the function for AVX-512, AVX2
 * and the baseline x86-64, and the dynamic loader picks the widest the processor runs. The
 * results are bitwise the same in every clone: these files are compiled with
 * -ffp-contract=off (pipeline/CMakeLists.txt), so no clone fuses a multiply and an add. Other
 * compilers and processors, and the sanitizer build (QP_SANITIZED: its run time starts after
 * the loader resolves the clones), get the plain function. */
#ifndef QP_SIMD_CLONES_H
#define QP_SIMD_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 11 && \
    !defined(QP_SANITIZED)
#define QP_WIDEST_VECTORS \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define QP_WIDEST_VECTORS
#endif

#endif
