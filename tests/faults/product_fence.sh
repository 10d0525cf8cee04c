#!/usr/bin/env bash
# product_fence.sh QMLPIPE QMLPIPE_TEST CLS WORK: the test-only code is fenced off the product
# (issue 39; tests/support/test_support.h). The real qmlpipe
#  1. refuses `backend: hostdev` when it checks the config (plan, budget, run): exit 6 (bad
#     input), the message naming the backend, why (test-only) and where it runs (qmlpipe-test),
#     nothing written; qmlpipe-test plans it;
#  2. ignores the test hooks: QP_FAULT that does not parse or names an allocation to fail,
#     QP_TEST_STOP_AFTER_STAGE and QP_TEST_PAUSE set, a run ends as without them (exit 0, no
#     qp_fault lines, no pause); qmlpipe-test with the same QP_FAULT fails as asked (exit 3).
set -uo pipefail
qmlpipe=$1 qmlpipe_test=$2 cls=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
fail() { echo "FAIL $*" >&2; failures=$((failures + 1)); }

"$qmlpipe" simulate --example ex --cls "$cls" >/dev/null 2>&1 || { echo "simulate failed" >&2; exit 1; }
sed -e 's/^backend: .*/backend: cpu/' -e 's/^output: .*/output: cpu.h5/' ex/config.yaml >ex/cpu.yaml
sed -e 's/^backend: .*/backend: hostdev/' -e 's/^output: .*/output: hostdev.h5/' ex/config.yaml \
  >ex/hostdev.yaml
grep -q '^backend: hostdev' ex/hostdev.yaml || { echo "no backend line in the example" >&2; exit 1; }

# 1. backend: hostdev
for cmd in plan budget run; do
  status=0
  err=$("$qmlpipe" $cmd ex/hostdev.yaml 2>&1 >/dev/null) || status=$?
  [[ $status == 6 ]] || fail "qmlpipe $cmd ex/hostdev.yaml: exit $status, not 6"
  [[ $err == *"backend 'hostdev' is test-only"*"qmlpipe-test"* && $err == *"line "* ]] ||
    fail "qmlpipe $cmd ex/hostdev.yaml: the message does not say what and where: $err"
done
[[ ! -e ex/hostdev.h5 ]] || fail "a refused run wrote hostdev.h5"
"$qmlpipe_test" plan ex/hostdev.yaml >/dev/null 2>&1 || fail "qmlpipe-test does not plan hostdev"

# 2. the test hooks
status=0
QP_FAULT=bogus "$qmlpipe" --version >/dev/null 2>&1 || status=$?
[[ $status == 0 ]] || fail "qmlpipe --version under QP_FAULT=bogus: exit $status, not 0"
status=0
QP_FAULT=alloc:1 QP_TEST_STOP_AFTER_STAGE=covariance_setup QP_TEST_PAUSE=covariance_setup \
  QP_TEST_BLAS_INT_MAX=1 QP_TEST_CHECKPOINT_PANEL_BYTES=1 timeout 50 \
  "$qmlpipe" run ex/cpu.yaml --quiet 2>hooks.err >/dev/null || status=$?
[[ $status == 0 ]] || fail "qmlpipe run with every test hook set: exit $status, not 0 ($(cat hooks.err))"
[[ -s ex/cpu.h5 ]] || fail "qmlpipe run with the test hooks set wrote no results"
grep -q 'qp_fault\|QP_TEST\|test hook' hooks.err && fail "qmlpipe read a test hook: $(cat hooks.err)"
status=0
QP_FAULT=alloc:1 "$qmlpipe_test" run ex/cpu.yaml --quiet --output fault.h5 >/dev/null 2>fault.err ||
  status=$?
[[ $status == 3 ]] || fail "qmlpipe-test under QP_FAULT=alloc:1: exit $status, not 3"
grep -q 'qp_fault: rank 0: injected alloc:1' fault.err || fail "qmlpipe-test did not inject"
echo "product_fence: $failures failure(s)"
[[ $failures == 0 ]]
