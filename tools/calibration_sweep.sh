#!/usr/bin/env bash
# calibration_sweep.sh: runs qmlpipe over a grid of problem sizes, on every route (pixel_direct,
# harmonic smw, harmonic projected) and for fields T and QU, then checks the memory model
# against what each run measured with `qmlpipe validate`.
#
# usage: tools/calibration_sweep.sh [QMLPIPE [OUTDIR]]
#   QMLPIPE  the qmlpipe binary (default: build/pipeline/qmlpipe of this repository)
#   OUTDIR   where inputs, configs, results and logs go (default: a new directory under
#            ${TMPDIR:-/tmp}); created if missing
#
# Builds nothing and writes nothing into the repository. OUTDIR ends up with:
#   inputs/ns<nside>_c<cut>_<fields>/ simulated map and mask (qmlpipe simulate)
#   configs/<case>.yaml              one config per case
#   results/<case>.h5                the results files (with /budget)
#   logs/<case>.log                  stdout and stderr of `qmlpipe run --quiet`
#   qmlpipe                          the copy of the binary that ran every case
#   cases.tsv                        the grid with each run's wall time
#   validate.txt                     `qmlpipe validate --tolerance 0.02` on all results
# The exit status is validate's: 0 when every judged stage is within 2% and no term drifts.
#
# Cost: the pixel-direct fisher_run costs about (n_params + 1) 2 n_pix^3 flops, so its large
# cases use one or two bins; the harmonic routes scale with n_pix n_modes^2 and go further.
# The whole grid took 3 minutes on an idle 2-core VM, 6 while other tests ran beside it
# (docs/memory-validation.md).
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qmlpipe=${1:-$repo/build/pipeline/qmlpipe}
outdir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/qmlpipe-calibration.XXXXXX")}
cls=$repo/data/cls_planck2015_lcdm.txt

if [[ ! -x $qmlpipe ]]; then
  echo "calibration_sweep: no qmlpipe binary at '$qmlpipe' (build it first)" >&2
  exit 2
fi
if [[ ! -r $cls ]]; then
  echo "calibration_sweep: cannot read '$cls'" >&2
  exit 2
fi
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
mkdir -p "$outdir/inputs" "$outdir/configs" "$outdir/results" "$outdir/logs"
# A private copy of the binary: a rebuild of the tree during the sweep cannot mix versions.
[[ $qmlpipe -ef $outdir/qmlpipe ]] || cp "$qmlpipe" "$outdir/qmlpipe"
qmlpipe=$outdir/qmlpipe

# The grid: name, path, harmonic_method (- on the pixel-direct path), fields, nside,
# Galactic cut in degrees, lmax, bin_width. Spectra: TT for T, EE and BB for QU.
# n_pix is the observed pixels (T) or twice them (QU): about 12 nside^2 (1 - sin cut).
cases=(
  "pd_T_ns16_c20      pixel_direct -         T  16 20 23 2"
  "pd_T_ns32_c40      pixel_direct -         T  32 40 40 20"
  "pd_T_ns32_c20      pixel_direct -         T  32 20 40 40"
  "pd_QU_ns8_c20      pixel_direct -         QU  8 20 23 4"
  "pd_QU_ns16_c20     pixel_direct -         QU 16 20 30 15"
  "pd_QU_ns16_c0      pixel_direct -         QU 16  0 30 30"
  "smw_T_ns16_c20     harmonic     smw       T  16 20 23 2"
  "smw_T_ns32_c20     harmonic     smw       T  32 20 40 4"
  "smw_T_ns64_c30     harmonic     smw       T  64 30 60 6"
  "smw_QU_ns16_c20    harmonic     smw       QU 16 20 30 3"
  "smw_QU_ns32_c20    harmonic     smw       QU 32 20 40 4"
  "proj_T_ns16_c20    harmonic     projected T  16 20 23 2"
  "proj_T_ns32_c20    harmonic     projected T  32 20 40 4"
  "proj_QU_ns16_c20   harmonic     projected QU 16 20 30 3"
  "proj_QU_ns32_c40   harmonic     projected QU 32 40 40 4"
)

echo "calibration sweep: ${#cases[@]} cases, $("$qmlpipe" --version) (copied to $qmlpipe)"
echo "output: $outdir"
printf 'case\tpath\tmethod\tfields\tnside\tcut_deg\tlmax\tbin_width\tseconds\tsummary\n' \
  >"$outdir/cases.tsv"
sweep_start=$SECONDS

# Simulated inputs, one set per (nside, cut, fields): a map with white noise and a mask.
make_inputs() {
  local nside=$1 cut=$2 fields=$3 dir=$outdir/inputs/ns${1}_c${2}_$3
  if [[ ! -f $dir/mask.fits ]]; then
    mkdir -p "$dir"
    "$qmlpipe" simulate --cls "$cls" --nside "$nside" --fields "$fields" --n-maps 1 \
      --noise-variance 10 --noise-variance-pol 1 --seed "$nside" --out "$dir/map" \
      --mask "$dir/mask.fits" --galactic-cut "$cut" >"$dir/simulate.log" 2>&1
  fi
  echo "$dir"
}

i=0
for line in "${cases[@]}"; do
  read -r name path method fields nside cut lmax bin_width <<<"$line"
  i=$((i + 1))
  inputs=$(make_inputs "$nside" "$cut" "$fields")
  config=$outdir/configs/$name.yaml
  if [[ $fields == T ]]; then
    spectra="[TT]" noise="{variance: 10}"
  else
    spectra="[EE, BB]" noise="{variance_p: 1}"
  fi
  {
    echo "# calibration_sweep.sh case $name"
    echo "maps: [$inputs/map_0000.fits]"
    echo "mask: $inputs/mask.fits"
    echo "fields: $fields"
    echo "cls: $cls"
    echo "noise: $noise"
    echo "spectra: $spectra"
    echo "ell_min: 2"
    echo "lmax: $lmax"
    echo "bin_width: $bin_width"
    echo "path: $path"
    [[ $method != - ]] && echo "harmonic_method: $method"
    echo "backend: cpu"
    echo "output: $outdir/results/$name.h5"
  } >"$config"
  printf '[%2d/%d] %-18s %-12s %-9s %-2s nside %2d cut %2d lmax %2d bin %2d ... ' "$i" \
    "${#cases[@]}" "$name" "$path" "$method" "$fields" "$nside" "$cut" "$lmax" "$bin_width"
  start=$SECONDS
  if ! "$qmlpipe" run "$config" --quiet >"$outdir/logs/$name.log" 2>&1; then
    echo "FAILED"
    echo "calibration_sweep: case $name failed; its log ($outdir/logs/$name.log):" >&2
    cat "$outdir/logs/$name.log" >&2
    exit 1
  fi
  seconds=$((SECONDS - start))
  # The first line of the run's summary, without its path (the route is the case's own).
  summary=$(head -n 1 "$outdir/logs/$name.log" |
    sed -e 's/^qmlpipe run: //' -e 's/, path [a-z_]*$//')
  echo "${seconds} s  ($summary)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$path" "$method" "$fields" \
    "$nside" "$cut" "$lmax" "$bin_width" "$seconds" "$summary" >>"$outdir/cases.tsv"
done
echo "all runs done in $((SECONDS - sweep_start)) s"

echo
status=0
"$qmlpipe" validate --tolerance 0.02 "$outdir"/results/*.h5 >"$outdir/validate.txt" 2>&1 ||
  status=$?
cat "$outdir/validate.txt"
echo
echo "validate exit status $status; sweep took $((SECONDS - sweep_start)) s; output in $outdir"
exit "$status"
