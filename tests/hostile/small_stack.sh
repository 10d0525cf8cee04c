#!/usr/bin/env bash
# small_stack.sh: qmlpipe under a small stack limit (`ulimit -s`). `ulimit -s 512` ended in
# SIGSEGV (issue 38): the warm-up committed a fixed 512 KiB array of its stack, and OpenBLAS's
# threaded dgetrf (the SMW route) needs ~4 MiB of the caller's stack. Now qmlpipe raises its
# soft limit to 8 MiB where the hard limit allows (budget/job_limit.h) and the warm-up commits
# at most a quarter of the limit:
#   (a) soft 512, 256 and 128 KiB (hard unlimited), each route of the built-in example
#       (pixel_direct, harmonic: SMW here): exit 0 and a results file;
#   (b) soft and hard 512 KiB (`ulimit -s 512`, the issue's case): pixel_direct (Cholesky) runs;
#   (c) soft and hard 2048 KiB on SMW: refused before any BLAS call, exit 4 naming
#       `ulimit -s` and the other routes, no results file.
#   small_stack.sh QMLPIPE CLS WORK
set -uo pipefail
qmlpipe=$1 cls=$2 work=$3/small_stack
rm -rf "$work" && mkdir -p "$work" || exit 1
"$qmlpipe" simulate --example "$work/ex" --cls "$cls" >/dev/null || exit 1
cases=0 failed=0
for path in pixel_direct harmonic; do
  sed "s/^path: .*/path: $path/" "$work/ex/config.yaml" >"$work/ex/$path.yaml"
  for kib in 512 256 128; do
    cases=$((cases + 1))
    out=$work/$path-$kib.h5
    (ulimit -S -s "$kib" && timeout 120 "$qmlpipe" run "$work/ex/$path.yaml" --quiet --output "$out") \
      >"$work/$path-$kib.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$out" ]; then
      failed=$((failed + 1))
      echo "FAILED: $path under ulimit -s $kib: exit $rc, results file $([ -s "$out" ] && echo written || echo missing)"
      tail -5 "$work/$path-$kib.log"
    fi
  done
done
cases=$((cases + 1))
(ulimit -s 512 && timeout 120 "$qmlpipe" run "$work/ex/pixel_direct.yaml" --quiet \
  --output "$work/hard512.h5") >"$work/hard512.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ ! -s "$work/hard512.h5" ]; then
  failed=$((failed + 1))
  echo "FAILED: pixel_direct under ulimit -s 512 (soft and hard): exit $rc"
  tail -3 "$work/hard512.log"
fi
for path in harmonic; do
  cases=$((cases + 1))
  out=$work/$path-hard.h5
  (ulimit -S -s 2048 && ulimit -H -s 2048 &&
    timeout 120 "$qmlpipe" run "$work/ex/$path.yaml" --quiet --output "$out") \
    >"$work/$path-hard.log" 2>&1
  rc=$?
  if [ "$rc" -ne 4 ] || [ -e "$out" ] || ! grep -q 'stack limit is 2048 KiB (`ulimit -s`' "$work/$path-hard.log"; then
    failed=$((failed + 1))
    echo "FAILED: $path under a hard ulimit -s 2048: exit $rc (expected 4), results file $([ -e "$out" ] && echo left || echo absent)"
    tail -3 "$work/$path-hard.log"
  fi
done
echo "small_stack: $cases cases, $failed failed"
[ "$failed" -eq 0 ]
