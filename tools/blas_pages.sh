#!/usr/bin/env bash
# blas_pages.sh: builds tools/blas_pages.c and prints, for each routine the stages call, the
# resident pages it adds in a fresh process (cold) and after the thin warm-up of
# pipeline/run/warm_up.c (warm: 0 = covered), on 1 and 2 OpenBLAS threads. The figures of
# docs/memory-model.md "The warm-up". About a minute on 2 idle cores.
#
# usage: tools/blas_pages.sh [SIZES [WARM_ORDER]]   (default "512 2048 4096", 512)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sizes=${1:-512 2048 4096}
order=${2:-512}
bin=$(mktemp "${TMPDIR:-/tmp}/blas_pages.XXXXXX")
trap 'rm -f "$bin"' EXIT
cc -O2 -Wall -Wextra -o "$bin" "$repo/tools/blas_pages.c" -lopenblas -llapacke
echo "KiB added by one call (anon = OpenBLAS's buffers, file = library code); warm = after the"
echo "thin warm-up (each routine at order $order, panels 256 x (n + 512) per thread)"
printf '%-7s %6s %7s %10s %10s %10s %10s %8s\n' routine n threads cold_anon cold_file \
  warm_anon warm_file warm_s
for threads in 1 2; do
  for n in $sizes; do
    for r in gemm syrk potrf pocon trtri trmm_l trmm_r trsm_l trsm_r getrf getrs potri; do
      read -r _ _ _ _ _ _ ca cf _ < <(OPENBLAS_NUM_THREADS=$threads "$bin" "$r" "$n")
      read -r _ _ _ _ _ ws wa wf _ < <(OPENBLAS_NUM_THREADS=$threads "$bin" "$r" "$n" --warm "$order" "$n")
      printf '%-7s %6d %7d %10d %10d %10d %10d %8.3f\n' "$r" "$n" "$threads" "$ca" "$cf" "$wa" \
        "$wf" "$ws"
    done
  done
done
