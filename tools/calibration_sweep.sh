#!/usr/bin/env bash
# calibration_sweep.sh: runs qmlpipe over a grid of problem sizes, on every route (pixel_direct,
# harmonic smw, harmonic projected) and for fields T and QU, then checks the memory model
# against what each run measured with `qmlpipe validate`.
#
# usage: tools/calibration_sweep.sh [--large] [--budget-only] [QMLPIPE [OUTDIR]]
#   --large        also run the large cases: per route, the largest problem that fits a
#                  20 GiB node (predicted peaks 12.8-14.5 GiB; about 23 minutes more on
#                  2 cores). The same as QP_SWEEP_LARGE=1. docs/memory-validation.md's
#                  table comes from a sweep with them.
#   --budget-only  write the configs and print each case's predicted peak (`qmlpipe budget`),
#                  run nothing (inputs are still simulated: the budget reads the masks)
#   QMLPIPE        the qmlpipe binary (default: build/pipeline/qmlpipe of this repository)
#   OUTDIR         where inputs, configs, results and logs go (default: a new directory
#                  under ${TMPDIR:-/tmp}); created if missing
#
# Builds nothing and writes nothing into the repository. OUTDIR ends up with:
#   inputs/ns<nside>_c<cut>_<fields>/ simulated map and mask (qmlpipe simulate)
#   configs/<case>.yaml              one config per case
#   results/<case>.h5                the results files (with /budget)
#   logs/<case>.log                  stdout and stderr of `qmlpipe run --quiet`
#   logs/<case>.budget               `qmlpipe budget` of the case, printed before it runs
#   qmlpipe                          the copy of the binary that ran every case
#   cases.tsv                        the grid with n_pix, n_params, n_modes, the predicted
#                                    peak and each run's wall time
#   validate.txt                     `qmlpipe validate --tolerance 0.02` on all results
# The exit status is validate's: 0 when every judged stage is within 2% and no term drifts;
# 3 when a case would not fit the memory available (below).
#
# Memory. Cases run one at a time. Before each, the predicted peak with the overhead (from
# `qmlpipe budget`) plus QP_SWEEP_RESERVE_GIB (default 3: whatever else runs on the machine)
# must fit MemAvailable; the script waits up to 10 minutes for it, then stops (exit 3).
#
# Cost: the pixel-direct fisher_run costs about (n_params + 1) 2 n_pix^3 flops, so its large
# cases use one or two bins; the harmonic routes scale with n_pix n_modes^2 (projection also
# n_pix^3 / 3 for the Cholesky of C) and go further. The 15 default cases take 3-4 minutes on
# an idle 2-core VM; the 3 large ones about 23 more, and 5 to simulate their inputs
# (docs/memory-validation.md).
set -euo pipefail

large=${QP_SWEEP_LARGE:-0}
budget_only=0
while [[ $# -gt 0 && ${1:-} == -* ]]; do
  case $1 in
  -h | --help)
    sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  --large) large=1 ;;
  --budget-only) budget_only=1 ;;
  *)
    echo "calibration_sweep: unknown option '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qmlpipe=${1:-$repo/build/pipeline/qmlpipe}
outdir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/qmlpipe-calibration.XXXXXX")}
cls=$repo/data/cls_planck2015_lcdm.txt
reserve_gib=${QP_SWEEP_RESERVE_GIB:-3}

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
# The largest problem per route that fits a 20 GiB node with room to spare, sized with
# `qmlpipe budget` (peaks with the overhead): pixel-direct, C and two n_pix^2 products
# (n_pix 23808, one bin: 12.8 GiB, ~5e13 flops); SMW, V (n_pix 478208 x n_modes 3965:
# 14.3 GiB); projection, C with V and C^-1 V (n_pix 40448: 14.5 GiB).
large_cases=(
  "pd_T_ns64_c31      pixel_direct -         T  64 31 40 40"
  "smw_T_ns256_c23    harmonic     smw       T 256 23 62 6"
  "proj_QU_ns64_c36   harmonic     projected QU 64 36 40 4"
)
[[ $large == 1 ]] && cases+=("${large_cases[@]}")

echo "calibration sweep: ${#cases[@]} cases$([[ $large == 1 ]] && echo ' (with the large ones)')," \
  "$("$qmlpipe" --version) (copied to $qmlpipe)"
echo "output: $outdir"
printf 'case\tpath\tmethod\tfields\tnside\tcut_deg\tlmax\tbin_width\tn_pix\tn_params\tn_modes\tpredicted_peak_gib\tseconds\tsummary\n' \
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

# Waits until `bytes` plus the reserve fit MemAvailable (at most 10 minutes); 1 if never.
wait_for_memory() {
  local bytes=$1 need avail waited=0
  need=$((bytes + reserve_gib * 1024 * 1024 * 1024))
  while :; do
    avail=$(($(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo) * 1024))
    ((avail >= need)) && return 0
    ((waited >= 600)) && return 1
    ((waited == 0)) && awk -v n="$need" -v a="$avail" \
      'BEGIN { printf "(waiting for %.1f GiB available, %.1f now) ", n / 2^30, a / 2^30 }'
    sleep 10
    waited=$((waited + 10))
  done
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
  # The prediction first: the dimensions for the table, the peak for the memory check.
  "$qmlpipe" budget "$config" >"$outdir/logs/$name.budget" 2>&1
  dims=$(sed -n 's/^ *n_positions=[0-9]* n_pix=\([0-9]*\) .* n_params=\([0-9]*\) .*/\1 \2/p' \
    "$outdir/logs/$name.budget")
  read -r n_pix n_params <<<"$dims"
  n_modes=$(sed -n 's/^ *n_modes=\([0-9]*\).*/\1/p' "$outdir/logs/$name.budget")
  n_modes=${n_modes:--}
  peak_bytes=$(sed -n 's/^ *with overhead .* \([0-9]*\) B$/\1/p' "$outdir/logs/$name.budget")
  peak_gib=$(awk -v b="$peak_bytes" 'BEGIN { printf "%.2f", b / 2^30 }')
  printf '[%2d/%d] %-18s %-12s %-9s %-2s nside %3d cut %2d lmax %2d bin %2d: n_pix %6d, %.2f GiB ... ' \
    "$i" "${#cases[@]}" "$name" "$path" "$method" "$fields" "$nside" "$cut" "$lmax" \
    "$bin_width" "$n_pix" "$peak_gib"
  if [[ $budget_only == 1 ]]; then
    echo "not run (--budget-only)"
    continue
  fi
  if ! wait_for_memory "$peak_bytes"; then
    echo "NOT RUN"
    echo "calibration_sweep: case $name needs $peak_gib GiB + ${reserve_gib} GiB in reserve," \
      "more than MemAvailable for 10 minutes; stopping" >&2
    exit 3
  fi
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
    sed -e 's/^qmlpipe run: //' -e 's/, path [a-z_() ]*$//')
  echo "${seconds} s  ($summary)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$path" "$method" \
    "$fields" "$nside" "$cut" "$lmax" "$bin_width" "$n_pix" "$n_params" "$n_modes" "$peak_gib" \
    "$seconds" "$summary" >>"$outdir/cases.tsv"
done
[[ $budget_only == 1 ]] && exit 0
echo "all runs done in $((SECONDS - sweep_start)) s"

echo
status=0
"$qmlpipe" validate --tolerance 0.02 "$outdir"/results/*.h5 >"$outdir/validate.txt" 2>&1 ||
  status=$?
cat "$outdir/validate.txt"
echo
echo "validate exit status $status; sweep took $((SECONDS - sweep_start)) s; output in $outdir"
exit "$status"
