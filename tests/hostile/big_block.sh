#!/usr/bin/env bash
# big_block.sh: `--block` larger than the problem sizes nothing beyond it. The distributed
# warm-up's panels were two blocks a process wide whatever the problem: 2 ranks with
# `--block 4096` on an nside 4 case built ~12 GiB and 10 TFLOP of warm-up (no end in 90 s),
# beyond memory.host_limit and the plan (issue 38). Now they are at most a fifth of n_pix
# wide. On 2 ranks (1x2 and 2x1) with blocks 1024 and 4096 (the largest --block takes), host_limit 1 GiB: exit 0 within
# 60 s, spectra equal to one process's to 1e-10 relative.
#   big_block.sh QMLPIPE COMPARE_RESULTS CLS WORK
set -uo pipefail
qmlpipe=$1 compare=$2 cls=$3 work=$4/big_block
rm -rf "$work" && mkdir -p "$work/in" || exit 1
"$qmlpipe" simulate --cls "$cls" --nside 4 --fields T --n-maps 1 --noise-variance 10 \
  --out "$work/in/map" --mask "$work/in/mask.fits" --galactic-cut 0 >/dev/null || exit 1
cp "$cls" "$work/in/cls.txt"
cat >"$work/in/config.yaml" <<YAML
maps: [map_0000.fits]
mask: mask.fits
fields: T
cls: cls.txt
noise: {variance: 10}
ell_min: 2
lmax: 11
bin_width: 2
path: pixel_direct
output: one.h5
memory: {host_limit: 1GiB}
YAML
"$qmlpipe" run "$work/in/config.yaml" --quiet || exit 1
cases=0 failed=0
for grid in 1x2 2x1; do
  for block in 1024 4096; do
    cases=$((cases + 1))
    out=$work/$grid-$block.h5
    timeout 60 mpiexec -n 2 --oversubscribe --allow-run-as-root "$qmlpipe" run \
      "$work/in/config.yaml" --grid "$grid" --block "$block" --quiet --output "$out" \
      >"$work/$grid-$block.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || ! "$compare" "$work/in/one.h5" "$out" 1e-10 >>"$work/$grid-$block.log" 2>&1; then
      failed=$((failed + 1))
      echo "FAILED: --grid $grid --block $block: exit $rc (124: no end in 60 s)"
      tail -5 "$work/$grid-$block.log"
    fi
  done
done
echo "big_block: $cases cases, $failed failed"
[ "$failed" -eq 0 ]
