#!/usr/bin/env bash
# rank_failure.sh: one rank failing inside a stage ends the whole job (issue 12, defect 7).
#   rank_failure.sh QMLPIPE CLS WORK MPIEXEC
# On 2 ranks, the small case of fault_case.sh on the SMW route (the one route with tracked
# allocations in every stage), rank 1 alone fails: its first tracked allocation of each stage
# (QP_FAULT=alloc:K@1), taken before the stage's collectives that rank 0 then waits in, and a
# ScaLAPACK factorisation whose info only rank 1 sees (lapack:pdgetrf:2@1, in basis_setup).
# Before the fix the job hung until its time limit. Each run must end within 30 s (the
# default grace period of 3 s, linalg/comm.h) with the error's exit status from mpiexec (3 out
# of memory, 5 numerical), a message that names rank 1, the stage and the term (or matrix),
# and no results or temporary file.
set -uo pipefail
qmlpipe=$1 cls=$2 work=$3 mpiexec=$4
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fault_case.sh
source "$here/fault_case.sh"
dir=$work/rank_failure
fault_case "$dir" smw "$qmlpipe" "$cls" || { echo "rank_failure: no case" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset QP_AGREE_GRACE_SECONDS
launch=("$mpiexec" -n 2 --oversubscribe --allow-run-as-root --bind-to none)
(cd "$dir" && QP_FAULT=count "${launch[@]}" "$qmlpipe" run config.yaml --quiet >/dev/null \
  2>"$work/rank_failure_count.log") || { cat "$work/rank_failure_count.log"; exit 1; }
rm -f "$dir/results.h5"
failures=0
# one SPEC STATUS STAGE NAME
one() {
  local spec=$1 expected=$2 stage=$3 name=$4 log=$work/rank_failure_$(echo "$1" | tr ':@' '__').log
  local start end status=0
  start=$(date +%s.%N)
  (cd "$dir" && QP_FAULT=$spec timeout 60 "${launch[@]}" "$qmlpipe" run config.yaml --quiet \
    >/dev/null 2>"$log") || status=$?
  end=$(date +%s.%N)
  local seconds
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  local problems=()
  [[ $status == "$expected" ]] || problems+=("exit $status, expected $expected")
  awk -v s="$seconds" 'BEGIN { exit !(s < 30) }' || problems+=("took $seconds s")
  grep -q "rank 1" "$log" || problems+=("no 'rank 1' in the message")
  grep -q "$stage" "$log" || problems+=("the stage $stage is not named")
  grep -q "$name" "$log" || problems+=("'$name' is not named")
  local left
  left=$(cd "$dir" && ls -A | tr '\n' ' ')
  [[ $left == "$fault_case_inputs " ]] || problems+=("files left: $left")
  if ((${#problems[@]})); then
    printf 'FAIL %s in %s: %s\n' "$spec" "$stage" "${problems[*]}" >&2
    sed 's/^/    /' "$log" >&2
    failures=$((failures + 1))
  else
    echo "ok   $spec ($stage, $name): exit $status in $seconds s"
  fi
}
for stage in covariance_setup basis_setup fisher_run spectra_run; do
  line=$(grep -m1 "^qp_fault: rank 1: alloc [0-9]* term '[^']*' stage '$stage'$" \
    "$work/rank_failure_count.log")
  [[ -n $line ]] || { echo "FAIL: no allocation of rank 1 in $stage" >&2; failures=$((failures + 1)); continue; }
  k=$(sed "s/.* alloc \([0-9]*\) .*/\1/" <<<"$line")
  term=$(sed "s/.* term '\([^']*\)'.*/\1/" <<<"$line")
  one "alloc:$k@1" 3 "$stage" "term '$term'"
done
grep -q "^qp_fault: rank 1: lapack pdgetrf call 2 stage 'basis_setup'$" \
  "$work/rank_failure_count.log" || { echo "FAIL: pdgetrf call 2 is not in basis_setup" >&2; exit 1; }
one "lapack:pdgetrf:2@1" 5 basis_setup "'I_plus_K_Lambda'"
[[ $failures == 0 ]]
