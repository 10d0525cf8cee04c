#!/usr/bin/env bash
# fault_spec.sh QMLPIPE: a QP_FAULT value that does not parse, or names an unknown site, is
# refused with exit 6 and a message naming it (a typo must not let a test pass without a
# fault); a good value is accepted.
set -uo pipefail
qmlpipe=$1
failures=0
for bad in bogus alloc alloc:0 alloc:x alloc:3x alloc:3@ alloc:3@-1 lapack:potrf lapack:dpotrf:0 \
  hdf5:nowhere hdf5:results_write:2:3 gpu:1 count@1; do
  status=0
  err=$(QP_FAULT=$bad "$qmlpipe" --version 2>&1 >/dev/null) || status=$?
  if [[ $status != 6 || $err != *"QP_FAULT='$bad'"* ]]; then
    echo "FAIL QP_FAULT='$bad': exit $status, stderr: $err" >&2
    failures=$((failures + 1))
  fi
done
for good in count alloc:3 alloc:3@1 lapack:dpotrf lapack:pdgetrf:2@1 hdf5:results_write:4; do
  status=0
  QP_FAULT=$good "$qmlpipe" --version >/dev/null 2>&1 || status=$?
  [[ $status == 0 ]] || { echo "FAIL QP_FAULT='$good' refused (exit $status)" >&2; failures=$((failures + 1)); }
done
echo "fault_spec: $failures failure(s)"
[[ $failures == 0 ]]
