#!/usr/bin/env bash
# compare_nan.sh: compare_results (the check of every distributed run, dist_case.sh) fails on a
# NaN or an infinity, wherever it is (tests/test_util.h's NaN-aware comparison):
#   compare_nan.sh COMPARE POKE CASE_DIR
# COMPARE: compare_results; POKE: poke_results (changes one value of a results file);
# CASE_DIR/reference.h5: a single-process results file (the fixture of a dist case).
#   - the reference against itself, and against a copy with one entry changed by 1e-13
#     relative: exit 0;
#   - a copy with NaN, +inf or -inf at the first, middle or last entry of /fisher, as the other
#     file, as the reference, and as both (the same NaN on both sides): exit 1;
#   - a NaN in spectra/cl: exit 1;
#   - an entry changed by 1%: exit 1 at the default 1e-10, exit 0 with a tolerance of 0.1;
#   - a tolerance that is not a finite number >= 0: exit 2.
# The copies go to CASE_DIR/nan_check, removed when every check passes.
set -euo pipefail
compare=$1 poke=$2 dir=$3
ref=$dir/reference.h5
work=$dir/nan_check
[[ -f $ref ]] || { echo "compare_nan: no $ref (the fixture did not run)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
failures=0

# expect STATUS DESCRIPTION ARGS...: runs compare_results ARGS, expects exit STATUS.
expect() {
  local want=$1 what=$2 status=0
  shift 2
  "$compare" "$@" >"$work/last.log" 2>&1 || status=$?
  if [[ $status == "$want" ]]; then
    echo "ok    exit $status: $what"
  else
    echo "FAIL  exit $status, expected $want: $what"
    sed 's/^/      /' "$work/last.log"
    failures=$((failures + 1))
  fi
}

# poked NAME DATASET POSITION VALUE: $work/NAME.h5, the reference with one value changed.
poked() {
  cp "$ref" "$work/$1.h5"
  "$poke" "$work/$1.h5" "$2" "$3" "$4"
}

expect 0 "the reference against itself" "$ref" "$ref"
poked tiny fisher middle x1.0000000000001
expect 0 "/fisher middle entry changed by 1e-13 relative" "$ref" "$work/tiny.h5"
for value in nan inf -inf; do
  for at in first middle last; do
    poked "$value-$at" fisher "$at" "$value"
    expect 1 "$value at the $at entry of /fisher in the other file" "$ref" "$work/$value-$at.h5"
    expect 1 "$value at the $at entry of /fisher in the reference" "$work/$value-$at.h5" "$ref"
    expect 1 "$value at the $at entry of /fisher in both files" "$work/$value-$at.h5" \
      "$work/$value-$at.h5"
  done
done
poked cl-nan spectra/cl middle nan
expect 1 "nan in spectra/cl" "$ref" "$work/cl-nan.h5"
poked percent fisher middle x1.01
expect 1 "/fisher middle entry changed by 1%, tolerance 1e-10" "$ref" "$work/percent.h5"
expect 0 "/fisher middle entry changed by 1%, tolerance 0.1" "$ref" "$work/percent.h5" 0.1
expect 2 "tolerance nan" "$ref" "$ref" nan
expect 2 "tolerance -1" "$ref" "$ref" -1

# What compare_results prints for a NaN, for the log.
"$compare" "$ref" "$work/nan-middle.h5" || true
if ((failures > 0)); then
  echo "compare_nan: $failures check(s) failed; files kept in $work" >&2
  exit 1
fi
rm -rf "$work"
echo "compare_nan: compare_results fails on every NaN and infinity and passes within tolerance"
