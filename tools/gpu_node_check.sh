#!/usr/bin/env bash
# gpu_node_check.sh: everything the cuda backend must show on a GPU node, in one command.
#
#   tools/gpu_node_check.sh --build DIR --out DIR [options]
#
# Runs, in this order, each step under its own time limit, everything it prints kept in OUT:
#   01 environment       the host, the build's type, the script's options
#   02 nvidia-smi        the GPU, its driver, its clocks, nothing else on it
#   03 gpu tests         ctest -L gpu with QP_REQUIRE_GPU=1 (a GPU that cannot start fails)
#   04 unit tests        ctest -L unit of the same build
#   05 compare_*         T, QU and TQU on every route (pixel_direct, smw, projected): the cpu
#                        backend against the device backend, compare_results's relative
#                        differences of F, y, the noise bias, C_hat and its errors, and of
#                        /diagnostics' rcond; then `report` and `validate` of the device run
#   06 bench             qmlpipe-gpu-bench at --bench-sizes (TFLOP/s per operation)
#   07 large_*           T and QU at --large-nside (projected route), timed on the device
#                        backend, against --cpu-seconds (measured elsewhere) or a cpu run
#                        made here (--large-cpu)
# and ends with OUT/summary.txt: every step's status and time, and every figure.
#
# Without a GPU (no nvidia-smi, no device, or a build without CUDA) the steps that need one say
# "skipped" and the rest run, the comparisons and the large runs with the test backend
# `hostdev` standing in for `cuda` (--dry-run forces this): CTest runs it so
# (gpu_node_check_dry_run), so that the script is known to work before a GPU node is at hand.
#
# Options:
#   --build DIR          the CMake build to check (qmlpipe, tests; with QP_ENABLE_CUDA for a
#                        GPU node)
#   --out DIR            where every log and summary.txt go (created; must be empty or new)
#   --dry-run            no GPU steps; hostdev instead of cuda
#   --bench-sizes "N.."  orders of the benchmark (default "4096 8192 16384")
#   --large-nside N      nside of the large runs (default 32; 0: no large runs)
#   --large-fields "F.." fields of the large runs (default "T QU")
#   --cpu-seconds LIST   the cpu wall seconds of the large runs, measured elsewhere, as
#                        FIELDS=SECONDS[@WHERE],... (e.g. T=412@"2-core EPYC 7B13")
#   --large-cpu          run the large runs on the cpu backend here too, for their time
#   --time-scale F       multiply every step's time limit by F (default 1)
# Exit status: 0 when no step failed (skipped ones do not count), 1 when one did, 2 on usage.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die_usage() { echo "gpu_node_check: $*" >&2; echo "(tools/gpu_node_check.sh --help)" >&2; exit 2; }

build="" out="" dry_run=0 bench_sizes="4096 8192 16384" large_nside=32 large_fields="T QU"
cpu_seconds="" large_cpu=0 time_scale=1
while [ $# -gt 0 ]; do
  case $1 in
    --help|-h) usage; exit 0 ;;
    --build) build=${2:-}; shift 2 || die_usage "--build needs a directory" ;;
    --out) out=${2:-}; shift 2 || die_usage "--out needs a directory" ;;
    --dry-run) dry_run=1; shift ;;
    --bench-sizes) bench_sizes=${2:-}; shift 2 || die_usage "--bench-sizes needs orders" ;;
    --large-nside) large_nside=${2:-}; shift 2 || die_usage "--large-nside needs a value" ;;
    --large-fields) large_fields=${2:-}; shift 2 || die_usage "--large-fields needs fields" ;;
    --cpu-seconds) cpu_seconds=${2:-}; shift 2 || die_usage "--cpu-seconds needs a list" ;;
    --large-cpu) large_cpu=1; shift ;;
    --time-scale) time_scale=${2:-}; shift 2 || die_usage "--time-scale needs a factor" ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
[ -n "$build" ] || die_usage "--build DIR is required"
[ -n "$out" ] || die_usage "--out DIR is required"
[ -f "$build/CMakeCache.txt" ] || die_usage "--build '$build' is not a CMake build (no CMakeCache.txt)"
[[ $large_nside =~ ^[0-9]+$ ]] || die_usage "--large-nside '$large_nside' is not a number"
[[ $time_scale =~ ^[0-9]+(\.[0-9]+)?$ ]] || die_usage "--time-scale '$time_scale' is not a number"
for n in $bench_sizes; do [[ $n =~ ^[1-9][0-9]*$ ]] || die_usage "--bench-sizes: '$n' is not an order"; done
for f in $large_fields; do [[ $f =~ ^(T|QU|TQU)$ ]] || die_usage "--large-fields: '$f' is not T, QU or TQU"; done
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  die_usage "--out '$out' exists and is not empty (a check never mixes its logs with another's)"
fi
mkdir -p "$out" || die_usage "cannot create --out '$out'"
build=$(cd "$build" && pwd) out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cls=$root/data/cls_planck2015_lcdm.txt
qmlpipe=$build/pipeline/qmlpipe
compare=$build/tests/compare_results
bench=$build/tools/qmlpipe-gpu-bench
steps=$out/steps.tsv
: >"$steps"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }
has_cuda=0
[ "$(cache QP_ENABLE_CUDA)" = ON ] && has_cuda=1
gpu=0 why_no_gpu=""
if [ $dry_run = 1 ]; then why_no_gpu="--dry-run"
elif [ $has_cuda = 0 ]; then why_no_gpu="the build has no CUDA (QP_ENABLE_CUDA is off)"
elif ! command -v nvidia-smi >/dev/null; then why_no_gpu="no nvidia-smi on PATH"
elif ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then why_no_gpu="nvidia-smi lists no GPU"
else gpu=1
fi
device_backend=cuda
# hostdev is the test library's (tests/support/): without a GPU every run goes through
# qmlpipe-test, qmlpipe's command line with it installed; on a GPU, qmlpipe itself.
if [ $gpu = 0 ]; then
  device_backend=hostdev
  qmlpipe=$build/tests/support/qmlpipe-test
fi

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with its output in OUT/NAME.log, killed after
# LIMIT x --time-scale seconds; records NAME, status and seconds in steps.tsv. Never stops the
# script: every later step still runs.
step() {
  local name=$1 limit=$2 status=0 t0 t1 verdict
  shift 2
  # at least 1 s: timeout(1) reads 0 as no limit at all
  limit=$(awk -v l="$limit" -v s="$time_scale" 'BEGIN { t = int(l * s + 0.5); print t < 1 ? 1 : t }')
  echo "== $name (limit ${limit} s)"
  t0=$(date +%s.%N)
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$out/$name.log" 2>&1 || status=$?
  t1=$(date +%s.%N)
  case $status in
    0) verdict=ok ;;
    124|137) verdict="TIMED OUT after ${limit} s" ;;
    *) verdict="FAILED (exit $status)" ;;
  esac
  printf '%s\t%s\t%.1f\n' "$name" "$verdict" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" >>"$steps"
  echo "   $verdict; $(tail -n 3 "$out/$name.log" | tr '\n' ' ' | cut -c1-160)"
  return 0
}
skip() { printf '%s\tskipped: %s\t0\n' "$1" "$2" >>"$steps"; echo "== $1: skipped ($2)"; }

environment() {
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
  echo "source: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"
  echo "build: $build"
  echo "build type: $(cache CMAKE_BUILD_TYPE); QP_ENABLE_CUDA $(cache QP_ENABLE_CUDA); QP_CUDA_SYNC_CHECK $(cache QP_CUDA_SYNC_CHECK); CUDA architectures $(cache CMAKE_CUDA_ARCHITECTURES); MPI $(cache QP_ENABLE_MPI)"
  echo "device backend of the comparisons: $device_backend${why_no_gpu:+ (no GPU: $why_no_gpu)}"
  echo "options: bench sizes '$bench_sizes', large nside $large_nside fields '$large_fields', cpu seconds '$cpu_seconds', large cpu $large_cpu, time scale $time_scale"
  echo "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-} OMP_NUM_THREADS=${OMP_NUM_THREADS:-} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
  command -v ctest >/dev/null && ctest --version | head -1 || echo "ctest: not on PATH"
  [ -x "$qmlpipe" ] || { echo "no qmlpipe at $qmlpipe"; return 1; }
  [ -x "$compare" ] || { echo "no compare_results at $compare (build with BUILD_TESTING)"; return 1; }
}

# simulate_case DIR FIELDS NSIDE N_MAPS: maps, a 20-degree galactic cut and white noise.
simulate_case() {
  local dir=$1 fields=$2 nside=$3 n_maps=$4
  mkdir -p "$dir"
  "$qmlpipe" simulate --cls "$cls" --nside "$nside" --fields "$fields" --n-maps "$n_maps" \
    --noise-variance 20 --noise-variance-pol 4 --seed 7 --out "$dir/map" \
    --mask "$dir/mask.fits" --galactic-cut 20
}

# write_config FILE FIELDS ROUTE LMAX BIN N_MAPS BACKEND
write_config() {
  local file=$1 fields=$2 route=$3 lmax=$4 bin=$5 n_maps=$6 backend=$7 noise spectra maps=""
  case $fields in
    T) noise="{variance: 20}" spectra="[TT]" ;;
    QU) noise="{variance_p: 4}" spectra="[EE, BB]" ;;
    TQU) noise="{variance_t: 20, variance_p: 4}" spectra="[TT, EE, BB, TE]" ;;
  esac
  for ((i = 0; i < n_maps; ++i)); do maps+="${maps:+, }$(printf 'map_%04d.fits' "$i")"; done
  {
    echo "maps: [$maps]"
    echo "mask: mask.fits"
    echo "fields: $fields"
    echo "cls: $cls"
    echo "noise: $noise"
    echo "spectra: $spectra"
    echo "lmax: $lmax"
    echo "bin_width: $bin"
    case $route in
      pixel_direct) echo "path: pixel_direct" ;;
      *) echo "path: harmonic"; echo "harmonic_method: $route" ;;
    esac
    echo "backend: $backend"
  } >"$file"
}

# compare_case FIELDS ROUTE: the cpu backend and the device backend on one small case.
compare_case() {
  local fields=$1 route=$2 lmax bin dir=$out/cases/$1
  case $fields in T) lmax=16 bin=3 ;; QU) lmax=14 bin=4 ;; TQU) lmax=12 bin=4 ;; esac
  [ -f "$dir/map_0000.fits" ] || simulate_case "$dir" "$fields" 8 2 >/dev/null || return 1
  write_config "$dir/$route-cpu.yaml" "$fields" "$route" $lmax $bin 2 cpu
  write_config "$dir/$route-dev.yaml" "$fields" "$route" $lmax $bin 2 "$device_backend"
  "$qmlpipe" run "$dir/$route-cpu.yaml" --quiet --output "$dir/$route-cpu.h5" || return 1
  "$qmlpipe" run "$dir/$route-dev.yaml" --quiet --output "$dir/$route-dev.h5" || return 1
  local status=0
  echo "--- compare_results (cpu reference, $device_backend other, tolerance 1e-12)"
  "$compare" "$dir/$route-cpu.h5" "$dir/$route-dev.h5" 1e-12 || status=1
  echo "--- report of the $device_backend run"
  "$qmlpipe" report "$dir/$route-dev.h5" || status=1
  echo "--- validate of the $device_backend run"
  # Stages below 32 MiB are shown, not judged: a few hundred KiB of library noise is 2% there.
  "$qmlpipe" validate --min-bytes 32MiB "$dir/$route-dev.h5" || status=1
  return $status
}

# large_run FIELDS: the projected route at --large-nside on the device backend (and on the cpu
# backend with --large-cpu), with the wall seconds of each run.
large_run() {
  local fields=$1 dir=$out/large/$1 backend t0 t1 status=0 lmax=$((3 * large_nside - 1))
  simulate_case "$dir" "$fields" "$large_nside" 1 >/dev/null || return 1
  local backends=$device_backend
  [ $large_cpu = 1 ] && backends+=" cpu"
  for backend in $backends; do
    write_config "$dir/$backend.yaml" "$fields" projected $lmax 4 1 "$backend"
    "$qmlpipe" plan "$dir/$backend.yaml"
    t0=$(date +%s.%N)
    "$qmlpipe" run "$dir/$backend.yaml" --output "$dir/$backend.h5" || status=1
    t1=$(date +%s.%N)
    echo "wall seconds $backend: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')"
    "$qmlpipe" report "$dir/$backend.h5" || status=1
  done
  if [ $large_cpu = 1 ] && [ -f "$dir/cpu.h5" ]; then
    "$compare" "$dir/cpu.h5" "$dir/$device_backend.h5" 1e-10 || status=1
  fi
  return $status
}

# The steps run under timeout(1), in a child bash: it sees these functions and settings.
export -f cache environment simulate_case write_config compare_case large_run
export build out root cls qmlpipe compare bench device_backend why_no_gpu bench_sizes \
  large_nside large_fields cpu_seconds large_cpu time_scale
echo "gpu_node_check: $out (device backend $device_backend${why_no_gpu:+; no GPU: $why_no_gpu})"
step 01-environment 30 environment
if [ $gpu = 1 ]; then
  step 02-nvidia-smi 30 sh -c 'nvidia-smi && nvidia-smi -q -d CLOCK,POWER,MEMORY,COMPUTE'
  if command -v ctest >/dev/null; then
    step 03-gpu-tests 240 env QP_REQUIRE_GPU=1 ctest --test-dir "$build" -L gpu --output-on-failure
  else # the gpu tests' programs themselves (the CMake wrappers of the label need cmake)
    step 03-gpu-tests 240 env QP_REQUIRE_GPU=1 sh -c '"$1"/tests/gpu/test_cuda_linalg &&
      "$1"/tools/qmlpipe-gpu-bench --repeat 1 256 300' gpu-tests "$build"
  fi
else
  skip 02-nvidia-smi "$why_no_gpu"
  skip 03-gpu-tests "$why_no_gpu"
fi
if ! command -v ctest >/dev/null; then
  skip 04-unit-tests "no ctest on PATH"
else
  step 04-unit-tests 240 ctest --test-dir "$build" -L unit -E '^gpu_node_check' -j "$(nproc)" --output-on-failure
fi
for fields in T QU TQU; do
  for route in pixel_direct smw projected; do
    step "05-compare-$fields-$route" 120 compare_case "$fields" "$route"
  done
done
if [ $gpu = 1 ] && [ -x "$bench" ]; then
  step 06-bench 300 "$bench" --repeat 3 $bench_sizes
elif [ $gpu = 1 ]; then
  skip 06-bench "no $bench"
else
  skip 06-bench "$why_no_gpu"
fi
if [ "$large_nside" -gt 0 ]; then
  for fields in $large_fields; do step "07-large-$fields" 400 large_run "$fields"; done
fi

# ---- summary.txt: every step, then every figure the logs hold.
summary() {
  echo "# gpu_node_check summary ($(date -u +%FT%TZ))"
  sed -n '1,/^OPENBLAS/p' "$out/01-environment.log" 2>/dev/null
  [ -f "$out/02-nvidia-smi.log" ] &&
    { echo; echo "## GPU"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv 2>/dev/null; }
  echo; echo "## Steps (status, seconds)"
  column -t -s $'\t' "$steps" 2>/dev/null || cat "$steps"
  if [ -f "$out/03-gpu-tests.log" ]; then
    echo; echo "## GPU tests"
    grep -E 'Test +#|tests passed|relative difference|device meter|synchronise after' "$out/03-gpu-tests.log"
  fi
  echo; echo "## cpu against $device_backend: max relative difference (compare_results)"
  for f in "$out"/05-compare-*.log; do
    [ -f "$f" ] || continue
    echo "### $(basename "$f" .log | sed 's/^05-compare-//')"
    grep -E '^(fisher |spectra/|rcond_)' "$f"
  done
  echo; echo "## Device memory of the $device_backend runs (report: predicted against tracked and measured)"
  for f in "$out"/05-compare-*.log; do
    [ -f "$f" ] || continue
    echo "### $(basename "$f" .log | sed 's/^05-compare-//')"
    grep -E '^stage |device context|device tracked peak|device meter|terms differing|spectra: rounding' "$f"
    grep -E '^qmlpipe validate|FAIL' "$f"
  done
  if [ -f "$out/06-bench.log" ]; then
    echo; echo "## Benchmark (qmlpipe-gpu-bench)"
    cat "$out/06-bench.log"
  fi
  for f in "$out"/07-large-*.log; do
    [ -f "$f" ] || continue
    local fields=${f##*07-large-}
    fields=${fields%.log}
    echo; echo "## Large run $fields, nside $large_nside, projected"
    grep -E '^  n_pix|^wall seconds|^stage |device tracked peak|device context|^(fisher |spectra/cl)' "$f"
    local dev cpu_here cpu_given
    dev=$(sed -n "s/^wall seconds $device_backend: //p" "$f")
    cpu_here=$(sed -n 's/^wall seconds cpu: //p' "$f")
    cpu_given=$(tr ',' '\n' <<<"$cpu_seconds" | sed -n "s/^$fields=//p")
    if [ -n "$dev" ] && [ -n "$cpu_here" ]; then
      echo "cpu here / $device_backend: $(awk -v c="$cpu_here" -v d="$dev" 'BEGIN{printf "%.1f", c/d}')x"
    fi
    if [ -n "$dev" ] && [ -n "$cpu_given" ]; then
      echo "cpu ${cpu_given#*@} (${cpu_given%%@*} s) / $device_backend: $(awk -v c="${cpu_given%%@*}" -v d="$dev" 'BEGIN{printf "%.1f", c/d}')x"
    fi
  done
}
summary >"$out/summary.txt" 2>&1
failed=$(awk -F'\t' '$2 !~ /^(ok|skipped)/' "$steps" | wc -l)
echo "gpu_node_check: $(grep -c $'\tok\t' "$steps") ok, $(grep -c $'\tskipped' "$steps") skipped, $failed failed; $out/summary.txt"
[ "$failed" = 0 ]
