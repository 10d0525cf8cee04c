#!/usr/bin/env bash
# dist_bench.sh: per-stage seconds of one problem on 1, 2 and 4 ranks of the distributed
# backend, beside the single-process cpu backend (docs/benchmarks.md, "Distributed").
#
# usage: tools/dist_bench.sh [QMLPIPE [OUTDIR [NSIDE CUT LMAX BIN PATH METHOD FIELDS]]]
#   default problem: T, nside 32, |b| > 40 deg (n_pix 4480), lmax 40, bins of 20,
#   pixel_direct. Threads: the cpu run uses every core; the rank runs split the cores
#   (OMP_NUM_THREADS = cores / ranks, at least 1: 4 ranks oversubscribe a 2-core machine).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qmlpipe=${1:-$repo/build/pipeline/qmlpipe}
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/qmlpipe-dist-bench.XXXXXX")}
read -r nside cut lmax bin path method fields <<<"${3:-32 40 40 20 pixel_direct - T}"
mkdir -p "$out"
cores=$(nproc)
"$qmlpipe" simulate --cls "$repo/data/cls_planck2015_lcdm.txt" --nside "$nside" --fields "$fields" \
  --n-maps 1 --noise-variance 10 --noise-variance-pol 1 --seed 5 --out "$out/map" \
  --mask "$out/mask.fits" --galactic-cut "$cut" >/dev/null
spectra="[TT]" noise="{variance: 10}"
[[ $fields == QU ]] && spectra="[EE, BB]" noise="{variance_p: 1}"
base() {
  echo "maps: [$out/map_0000.fits]"
  echo "mask: $out/mask.fits"
  echo "fields: $fields"
  echo "cls: $repo/data/cls_planck2015_lcdm.txt"
  echo "noise: $noise"
  echo "spectra: $spectra"
  echo "lmax: $lmax"
  echo "bin_width: $bin"
  echo "path: $path"
  [[ $method != - ]] && echo "harmonic_method: $method"
  echo "memory: {sample_interval_ms: 0}"
}
run() { # label ranks threads backend
  local label=$1 ranks=$2 threads=$3 backend=$4
  { base; echo "backend: $backend"; echo "output: $out/$label.h5"; } >"$out/$label.yaml"
  local cmd=("$qmlpipe" run "$out/$label.yaml" --quiet)
  if [[ $backend == dist ]]; then
    cmd=(mpiexec -n "$ranks" --oversubscribe --allow-run-as-root --bind-to none "${cmd[@]}")
  fi
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "${cmd[@]}" >"$out/$label.log"
  awk -v l="$label" '/^(covariance_setup|basis_setup|fisher_run|spectra_run) / {
      s[$1] = $2; g[$1] = $3; t += $2 }
    END { printf "%-14s %10.2f %10.2f %10.2f %10.2f %10.2f\n", l, s["covariance_setup"],
          s["basis_setup"], s["fisher_run"], s["spectra_run"], t }' "$out/$label.log"
}

printf '%-14s %10s %10s %10s %10s %10s\n' run covariance basis fisher spectra total
run cpu 1 "$cores" cpu
for ranks in 1 2 4; do
  threads=$((cores / ranks)); ((threads >= 1)) || threads=1
  run "dist_n$ranks" "$ranks" "$threads" dist
done
head -n 1 "$out/cpu.log"
echo "output: $out"
