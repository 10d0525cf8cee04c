#!/usr/bin/env bash
# dist_case.sh: one case of the distributed-vs-single-process check (tests/mpi/CMakeLists.txt).
#   dist_case.sh ref QMLPIPE WORKDIR NAME PATH METHOD FIELDS SPECTRA LMAX LMAX_SIGNAL BIN [WRITE_NOISE]
#       simulates the inputs of case NAME and runs it on one process (the reference); with
#       WRITE_NOISE (the write_noise program) the noise is a dense covariance it writes; with
#       the word `cross` instead, a second map set (maps2: seed 9, noise variance 30) is
#       crossed with the first (cross-spectra, docs/science.md); with
#       the word pixel_window there instead, the maps carry the pixel window and the runs
#       apply it (rank 0 reads HEALPix's table and shares it)
#   dist_case.sh run QMLPIPE WORKDIR NAME RANKS ROWS COLS BLOCK COMPARE [HOST_LIMIT_MIB]
#       runs case NAME with mpiexec -n RANKS on a ROWS x COLS grid, then compares its results
#       with the reference (COMPARE, 1e-10 relative) and checks its per-rank budget report.
#       With HOST_LIMIT_MIB: the single-process plan must need more than the limit, the run
#       gets memory.host_limit, and every rank's measured RSS must stay below it.
set -euo pipefail
mode=$1 qmlpipe=$2 work=$3 name=$4
shift 4
dir=$work/$name
cls=$(dirname "$0")/../../data/cls_planck2015_lcdm.txt
# num_less A B: true only when A and B are plain non-negative decimals and A < B. An empty,
# nan or inf value fails: awk alone compares "" as a string (less than any number) and mawk
# finds a NaN less than 80.
num_less() {
  local re='^[0-9]+(\.[0-9]*)?$'
  [[ $1 =~ $re && $2 =~ $re ]] || return 1
  awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'
}
if [[ $mode == ref ]]; then
  read -r path method fields spectra lmax lmax_signal bin dense <<<"$*"
  pixel_window=()
  if [[ ${dense:-} == pixel_window ]]; then
    pixel_window=(--pixel-window)
    dense=
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  "$qmlpipe" simulate --cls "$cls" --nside 8 --fields "$fields" --n-maps 2 --noise-variance 20 \
    --noise-variance-pol 4 --seed 7 --out "$dir/map" --mask "$dir/mask.fits" \
    --galactic-cut 20 "${pixel_window[@]}" >/dev/null
  noise="{variance: 20}"
  [[ $fields != T ]] && noise="{variance_t: 20, variance_p: 4}"
  [[ $fields == QU ]] && noise="{variance_p: 4}"
  cross=""
  if [[ ${dense:-} == cross ]]; then
    dense=""
    "$qmlpipe" simulate --cls "$cls" --nside 8 --fields "$fields" --n-maps 2 --noise-variance 30 \
      --noise-variance-pol 6 --seed 9 --out "$dir/map2" >/dev/null
    cross="maps2: [map2_0000.fits, map2_0001.fits]"
    noise2="{variance: 30}"
    [[ $fields != T ]] && noise2="{variance_t: 30, variance_p: 6}"
    [[ $fields == QU ]] && noise2="{variance_p: 6}"
    cross="$cross"$'\n'"noise2: $noise2"
  fi
  if [[ -n ${dense:-} ]]; then
    # A dense N (write_noise, beside this script's build) of the data vector's length.
    printf 'maps: [map_0000.fits]\nmask: mask.fits\nfields: %s\ncls: %s\nnoise: %s\nlmax: %s\n' \
      "$fields" "$cls" "$noise" "$lmax" >"$dir/size.yaml"
    n_pix=$("$qmlpipe" plan "$dir/size.yaml" | sed -n 's/^  n_pix \([0-9]*\).*/\1/p')
    "$dense" "$dir/noise.h5" "$n_pix" 8
    noise="{covariance: noise.h5}"
  fi
  {
    echo "maps: [map_0000.fits, map_0001.fits]"
    echo "mask: mask.fits"
    echo "fields: $fields"
    echo "cls: $(cd "$(dirname "$cls")" && pwd)/$(basename "$cls")"
    echo "noise: $noise"
    echo "spectra: [${spectra//,/, }]"
    echo "lmax: $lmax"
    echo "lmax_signal: $lmax_signal"
    echo "bin_width: $bin"
    echo "path: $path"
    [[ $method != - ]] && echo "harmonic_method: $method"
    [[ -n $cross ]] && echo "$cross"
    [[ ${#pixel_window[@]} -gt 0 ]] && echo "pixel_window: true"

  } >"$dir/base.yaml"
  { cat "$dir/base.yaml"; echo "output: reference.h5"; } >"$dir/reference.yaml"
  "$qmlpipe" run "$dir/reference.yaml" --quiet >"$dir/reference.log"
  exit 0
fi
# refused RANKS TAG EXPECT PATTERN WHY: runs $dir/TAG.yaml on RANKS ranks and checks that
# every rank stops with the same clear error (exit EXPECT, or any failure when EXPECT is
# "any"; no hang in a collective), its message matching PATTERN, and no results file.
refused() {
  local ranks=$1 tag=$2 expect=$3 pattern=$4 why=$5 status=0
  rm -f "$dir/$tag.h5"
  timeout 120 mpiexec -n "$ranks" --oversubscribe --allow-run-as-root --bind-to none \
    "$qmlpipe" run "$dir/$tag.yaml" --quiet >"$dir/$tag.log" 2>&1 || status=$?
  cat "$dir/$tag.log"
  [[ $status != 124 ]] || { echo "dist_case: the run hung" >&2; exit 1; }
  [[ $status != 0 ]] || { echo "dist_case: $why was not an error" >&2; exit 1; }
  [[ $expect == any || $status == "$expect" ]] ||
    { echo "dist_case: exit $status, not $expect" >&2; exit 1; }
  grep -q "$pattern" "$dir/$tag.log" ||
    { echo "dist_case: the error does not match '$pattern'" >&2; exit 1; }
  [[ ! -e $dir/$tag.h5 ]] || { echo "dist_case: a results file was written" >&2; exit 1; }
  echo "exit status $status, '$pattern' said, no results file"
}
if [[ $mode == bad ]]; then
  # A missing map on 2 ranks: rank 0 fails to read it.
  { sed 's/map_0001.fits/missing_map.fits/' "$dir/base.yaml"; echo "output: bad.h5"; } \
    >"$dir/bad.yaml"
  refused "$1" bad any missing_map.fits "a missing map"
  exit 0
fi
if [[ $mode == device ]]; then
  # backend cuda on several ranks is cuda-dist (a GPU per rank): a build without CUDA refuses
  # it (unsupported, 7) on every rank before any stage, saying so; with CUDA and no GPU it is
  # "no CUDA device", 7 too. hostdev runs on several ranks (hostdev_stages_n2, and cuda-dist's
  # own table in hostdev_stages_tiled_n2), checkpoints included (test_checkpoint_cli).
  { cat "$dir/base.yaml"; echo "backend: cuda"; echo "output: cuda.h5"; } >"$dir/cuda.yaml"
  refused "$1" cuda 7 "cuda" "backend cuda on 2 ranks without a GPU"
  grep -Eq "not built with CUDA|no CUDA device|CUDA" "$dir/cuda.log" ||
    { echo "dist_case: the refusal does not say why (CUDA)" >&2; exit 1; }
  exit 0
fi
read -r ranks rows cols block compare limit <<<"$*"
tag=n${ranks}_${rows}x${cols}
{
  cat "$dir/base.yaml"
  echo "backend: dist"
  echo "grid: {rows: $rows, cols: $cols, block: $block}"
  echo "output: $tag.h5"
  [[ -n ${limit:-} ]] && echo "memory: {host_limit: ${limit}MiB}"
} >"$dir/$tag.yaml"
if [[ -n ${limit:-} ]]; then
  single=$("$qmlpipe" plan "$dir/reference.yaml" | sed -n 's/.*lifetime peak \([0-9.]*\) MiB.*/\1/p')
  echo "single-process predicted peak $single MiB; host_limit $limit MiB"
  num_less "$limit" "$single" ||
    { echo "dist_case: the single-process peak must exceed the limit for this check" >&2; exit 1; }
fi
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n "$ranks" --oversubscribe --allow-run-as-root \
  --bind-to none "$qmlpipe" run "$dir/$tag.yaml" --quiet | tee "$dir/$tag.log"
"$compare" "$dir/reference.h5" "$dir/$tag.h5"
# Per rank: tracked bytes equal to the prediction in every stage (budget/ranks in the report).
"$qmlpipe" report "$dir/$tag.h5" --ranks | tee "$dir/$tag.report"
if grep -q "tracked != predicted" "$dir/$tag.report"; then
  echo "dist_case: a rank's tracked bytes differ from its prediction" >&2
  exit 1
fi
if [[ -n ${limit:-} ]]; then
  largest=$(sed -n 's/^largest RSS of any rank: \([0-9.]*\) MiB.*/\1/p' "$dir/$tag.report")
  num_less "$largest" "$limit" ||
    { echo "dist_case: a rank used '$largest' MiB, not below host_limit $limit MiB" >&2; exit 1; }
  echo "every rank below host_limit: largest $largest MiB < $limit MiB"
fi
