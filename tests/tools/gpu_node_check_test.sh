#!/usr/bin/env bash
# gpu_node_check_test.sh SCRIPT BUILD WORK: tools/gpu_node_check.sh without a GPU.
#  1. the dry run: exit 0; the GPU steps say skipped, every other step ran and is ok; the nine
#     cpu-against-hostdev comparisons printed their figures into summary.txt, and the two
#     large runs their wall seconds and the ratio to the cpu run;
#  2. a step that fails (a build without compare_results) is FAILED in the summary, the later
#     steps still run, exit 1;
#  3. a step that outlives its limit is killed and TIMED OUT (a qmlpipe that sleeps, limits
#     scaled to 1 s), exit 1;
#  4. usage errors: exit 2, naming what is wrong, nothing written.
set -euo pipefail
script=$1 build=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "gpu_node_check_test: $*" >&2; exit 1; }

# 1. The dry run.
status=0
"$script" --build "$build" --out "$work/dry" --dry-run --large-nside 8 --large-cpu \
  --cpu-seconds 'T=2.5@elsewhere' >"$work/dry.log" 2>&1 || status=$?
cat "$work/dry.log"
[ $status = 0 ] || fail "the dry run exited $status"
summary=$work/dry/summary.txt
[ -s "$summary" ] || fail "no summary.txt"
for s in 02-nvidia-smi 03-gpu-tests 06-bench; do
  grep -q "^$s *skipped: --dry-run" "$summary" || fail "step $s is not 'skipped: --dry-run'"
done
for s in 01-environment 04-unit-tests 07-large-T 07-large-QU; do
  grep -q "^$s *ok" "$summary" || fail "step $s is not ok"
done
[ "$(grep -c '^05-compare-.* ok ' "$summary")" = 9 ] || fail "not nine comparisons ok"
# five datasets and the rcond figures of each comparison: every fisher within the tolerance;
# bitwise on hostdev for pixel-direct and SMW (six), where cpu and the device run one
# algorithm; the projection's cpu run makes no W (issue 42: F from Y's windows, Z in Y's place),
# the device's does, so those agree to rounding (three comparisons, two large projected runs)
[ "$(grep -c "^fisher .*max rel. difference .*  ok" "$summary")" = 11 ] ||
  fail "not eleven fisher comparisons ok (nine comparisons, two large runs)"
[ "$(grep -c "^fisher .*max rel. difference 0.000e+00  ok" "$summary")" -ge 6 ] ||
  fail "not six fisher differences of 0 (pixel-direct and SMW on T, QU, TQU)"
[ "$(grep -c "^spectra/cl .*max rel. difference .*  ok" "$summary")" = 11 ] ||
  fail "not eleven spectra/cl comparisons ok"
[ "$(grep -c "^spectra/cl .*max rel. difference 0.000e+00  ok" "$summary")" -ge 6 ] ||
  fail "not six spectra/cl differences of 0 (pixel-direct and SMW)"
grep -q 'device tracked peak .*EXACT' "$summary" || fail "no device memory figures"
[ "$(grep -c '^wall seconds hostdev: ' "$summary")" = 2 ] || fail "no device wall seconds"
grep -q '^cpu here / hostdev: [0-9.]*x' "$summary" || fail "no ratio to the cpu run"
grep -q '^cpu elsewhere (2.5 s) / hostdev: [0-9.]*x' "$summary" || fail "no ratio to --cpu-seconds"

# 2. A failing step: the same build without compare_results.
fake=$work/fake-build
mkdir -p "$fake/pipeline" "$fake/tests/support"
cp "$build/CMakeCache.txt" "$fake/"
ln -s "$build/pipeline/qmlpipe" "$fake/pipeline/qmlpipe"
ln -s "$build/tests/support/qmlpipe-test" "$fake/tests/support/qmlpipe-test"
status=0
PATH=/usr/bin:/bin "$script" --build "$fake" --out "$work/fail" --large-nside 0 \
  >"$work/fail.log" 2>&1 || status=$?
cat "$work/fail.log"
[ $status = 1 ] || fail "a failing step: exit $status, not 1"
grep -q '^01-environment *FAILED (exit 1)' "$work/fail/summary.txt" || fail "environment not FAILED"
grep -q 'no compare_results at' "$work/fail/01-environment.log" || fail "the missing program not named"
grep -q '^05-compare-TQU-projected *FAILED' "$work/fail/summary.txt" ||
  fail "the later steps did not run"

# 3. A step past its limit: a qmlpipe that sleeps, every limit scaled down to 1 s.
slow=$work/slow-build
mkdir -p "$slow/pipeline" "$slow/tests/support"
cp "$build/CMakeCache.txt" "$slow/"
printf '#!/bin/sh\nsleep 60\n' >"$slow/pipeline/qmlpipe"
cp "$slow/pipeline/qmlpipe" "$slow/tests/support/qmlpipe-test" # no GPU: the runs' program
printf '#!/bin/sh\nexit 0\n' >"$slow/tests/compare_results"
chmod +x "$slow/pipeline/qmlpipe" "$slow/tests/support/qmlpipe-test" "$slow/tests/compare_results"
status=0
PATH=/usr/bin:/bin timeout 600 "$script" --build "$slow" --out "$work/slow" --large-nside 0 \
  --time-scale 0.001 >"$work/slow.log" 2>&1 || status=$?
cat "$work/slow.log"
[ $status = 1 ] || fail "a step past its limit: exit $status, not 1"
[ "$(grep -c '^05-compare-.*TIMED OUT after 1 s' "$work/slow/summary.txt")" = 9 ] ||
  fail "the comparisons are not TIMED OUT after 1 s"
# Its stand-in programs go: nothing named qmlpipe-test but the real one stays in the build tree.
rm -rf "$slow"

# 4. Usage errors.
usage_error() {
  local pattern=$1 status=0
  shift
  "$script" "$@" >"$work/usage.log" 2>&1 || status=$?
  [ $status = 2 ] || fail "'$*': exit $status, not 2"
  grep -q -- "$pattern" "$work/usage.log" || { cat "$work/usage.log"; fail "'$*' does not say '$pattern'"; }
}
usage_error '--build DIR is required' --out "$work/u1"
usage_error "is not a CMake build" --build "$work" --out "$work/u2"
usage_error 'exists and is not empty' --build "$build" --out "$work/dry"
usage_error "'x' is not an order" --build "$build" --out "$work/u3" --bench-sizes "256 x"
usage_error "'TT' is not T, QU or TQU" --build "$build" --out "$work/u4" --large-fields TT
usage_error "unknown argument '--gpu'" --build "$build" --out "$work/u5" --gpu
[ ! -e "$work/u1" ] && [ ! -e "$work/u3" ] && [ ! -e "$work/u4" ] || fail "a refused run wrote its --out"
"$script" --help | grep -q 'tools/gpu_node_check.sh --build DIR --out DIR' || fail "--help"
echo "gpu_node_check_test: passed"
