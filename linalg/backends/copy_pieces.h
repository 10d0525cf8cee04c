/* copy_pieces.h: a rows x cols block of doubles cut into pieces that fit a staging buffer.
 *
 * The cuda backend copies between pageable host memory and the device through two small
 * pinned buffers (cuda_pinned.c): the host packs piece k + 1 into one buffer while the device
 * copies piece k out of the other. How a block is cut is plain index arithmetic, kept here so
 * that it is tested on CPU (tests/unit/test_copy_pieces.c) although the copies are not.
 *
 * A piece is whole columns, as many as fit, while one column fits the buffer; when it does
 * not, each column is cut into runs of `capacity` rows. A packed piece has leading dimension
 * piece.rows. */
#ifndef QP_COPY_PIECES_H
#define QP_COPY_PIECES_H

#include <stdint.h>

typedef struct qp_copy_piece {
  int64_t row0, rows, col0, cols;
} qp_copy_piece;

/** How many pieces of at most `capacity` (>= 1) doubles cover rows x cols (0 when empty). */
int64_t qp_copy_piece_count(int64_t rows, int64_t cols, int64_t capacity);
/** Piece `index` (0 <= index < the count), in column-major order of the block. */
qp_copy_piece qp_copy_piece_at(int64_t rows, int64_t cols, int64_t capacity, int64_t index);
/** packed[.., p.rows] <- the piece of src[.., sld] (src is the block's first entry). */
void qp_copy_pack(const double *src, int64_t sld, qp_copy_piece p, double *packed);
/** The piece of dst[.., dld] <- packed[.., p.rows]. */
void qp_copy_unpack(const double *packed, qp_copy_piece p, double *dst, int64_t dld);

#endif
