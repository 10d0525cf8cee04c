/* bytes_text.h: a byte count as people read it in a message, with at least three significant
 * figures: "1.250 GiB" and "0.500 GiB" (from 0.1 GiB), "5.00 MiB" and "0.49 MiB" (from
 * 0.1 MiB), "812 bytes" below. Limits and peaks were printed as "%.3f GiB" alone, and a
 * memory.device_limit of 500000 bytes read "0.000 GiB". */
#ifndef QP_BYTES_TEXT_H
#define QP_BYTES_TEXT_H

typedef struct qp_bytes_text {
  char text[32];
} qp_bytes_text;

/** `bytes` as text (qp_bytes_readable(x).text lives until the end of the full expression,
 *  e.g. a printf call). */
qp_bytes_text qp_bytes_readable(double bytes);

#endif
