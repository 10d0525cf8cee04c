#!/usr/bin/env bash
# fault_case.sh: the small case the fault tests run (sourced by fault_sweep.sh and
# rank_failure.sh): nside 4, two maps, a 20 degree Galactic cut, lmax 8 in 3 bins, on one
# route. fault_case DIR ROUTE QMLPIPE CLS writes DIR/config.yaml with `output: results.h5`.
#   ROUTE: pixel_direct, smw or projected (the harmonic routes, harmonic_method smw/projected)
fault_case() {
  local dir=$1 route=$2 qmlpipe=$3 cls=$4
  rm -rf "$dir" && mkdir -p "$dir"
  "$qmlpipe" simulate --cls "$cls" --nside 4 --n-maps 2 --noise-variance 20 --seed 3 \
    --out "$dir/map" --mask "$dir/mask.fits" --galactic-cut 20 >/dev/null || return 1
  {
    echo "maps: [map_0000.fits, map_0001.fits]"
    echo "mask: mask.fits"
    echo "cls: $(cd "$(dirname "$cls")" && pwd)/$(basename "$cls")"
    echo "noise: {variance: 20}"
    echo "lmax: 8"
    echo "bin_width: 3"
    if [[ $route == pixel_direct ]]; then
      echo "path: pixel_direct"
    else
      echo "path: harmonic"
      echo "harmonic_method: $route"
    fi
    echo "output: results.h5"
  } >"$dir/config.yaml"
}

# The files of a case before any run: what must be left after a failed one.
fault_case_inputs="config.yaml map_0000.fits map_0001.fits mask.fits"
