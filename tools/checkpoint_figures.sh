#!/usr/bin/env bash
# checkpoint_figures.sh QMLPIPE COMPARE_RESULTS WORKDIR CONFIG [NAME]
# The figures of docs/reliability.md "Checkpoint and restart" for one config: an uninterrupted
# run with --checkpoint (each checkpoint's size and write time, each stage's time), then for
# each stage a run stopped after it by the test hook QP_TEST_STOP_AFTER_STAGE and resumed:
# the resumed run's wall time, the time it spent restoring, and whether its results are the
# same bytes as the uninterrupted run's (COMPARE_RESULTS REF OTHER 0: every value equal).
# QMLPIPE is qmlpipe-test (BUILD/tests/support/qmlpipe-test): the test hooks are the test
# library's, and qmlpipe itself ignores QP_TEST_STOP_AFTER_STAGE.
set -euo pipefail
qmlpipe=$1 compare=$2 work=$3 config=$4 name=${5:-case}
mkdir -p "$work"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

rm -rf "$work/ck-$name"
t0=$(now)
"$qmlpipe" run "$config" --output "$work/$name-ref.h5" --checkpoint "$work/ck-$name" \
  >"$work/$name-ref.out" 2>"$work/$name-ref.err"
t1=$(now)
echo "== $name: uninterrupted run with --checkpoint: $(secs "$t0" "$t1") s"
grep -E '^\[qmlpipe\] (checkpoint after|[a-z_]+ done in)' "$work/$name-ref.err" | sed 's/^/   /'
for stage in covariance_setup basis_setup fisher_run; do
  rm -rf "$work/ck-$name"
  out="$work/$name-$stage.h5"
  t0=$(now)
  status=0
  QP_TEST_STOP_AFTER_STAGE=$stage "$qmlpipe" run "$config" --output "$out" \
    --checkpoint "$work/ck-$name" >/dev/null 2>"$work/$name-stop-$stage.err" || status=$?
  [ $status = 143 ] || { echo "checkpoint_figures: the run was not stopped after $stage (exit" \
    "$status): QMLPIPE must be qmlpipe-test, which has the test hooks" >&2; exit 1; }
  t1=$(now)
  "$qmlpipe" run "$config" --output "$out" --checkpoint "$work/ck-$name" --resume \
    >"$work/$name-resume-$stage.out" 2>"$work/$name-resume-$stage.err"
  t2=$(now)
  restore=$(sed -n "s/^\[qmlpipe\] $stage done in \([0-9.]*\) s.*/\1/p" \
    "$work/$name-resume-$stage.err")
  same=$("$compare" "$work/$name-ref.h5" "$out" 0 >/dev/null 2>&1 && echo "same bytes" ||
    echo "DIFFERENT")
  echo "   stop after $stage: stopped run $(secs "$t0" "$t1") s; resumed run $(secs "$t1" "$t2") s" \
    "(restoring $stage's checkpoint ${restore} s); results: $same"
done
