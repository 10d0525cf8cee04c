#!/usr/bin/env bash
# fault_sweep.sh: the fault-injection sweep (docs/reliability.md, "Fault injection").
#   fault_sweep.sh QMLPIPE CLS WORK ROUTE RANKS STRIDE [MPIEXEC [BACKEND]]
# Runs the small case of fault_case.sh on ROUTE (pixel_direct, smw, projected) once with
# QP_FAULT=count, then once per injection site of the count: every STRIDE-th tracked
# allocation (1: every one), every LAPACK/ScaLAPACK call of base/fault.h's routines and
# every HDF5 call at its sites. BACKEND (e.g. hostdev: on 2 ranks hostdev-dist, whose tiled
# operations hold blocks of their own and factor diagonal blocks with dpotrf) is written into
# the case's config. RANKS 1 runs qmlpipe alone; RANKS 2 runs it under MPIEXEC with
# the fault on rank 1 only (`@1`), the rank that reads and writes nothing. STRIDE > 1 sweeps
# every STRIDE-th allocation and call (and the last allocation) to keep the time down: a run
# on 2 ranks costs ~2.5 s (mpiexec's start, and the grace period of 1 s when it aborts). Each
# run must:
#   - end within 60 s (a hang fails the test);
#   - exit as the fault says: 3 for an allocation (out of memory), 5 for a factorisation
#     (numerical), 8 for HDF5 (I/O); a fault in the warm-up (term warm_up, or a LAPACK call
#     outside the stages), which is best effort by design, leaves the run to succeed (exit 0);
#   - name in its message the term (or the routine) and the stage;
#   - leave no results file and no temporary file (the directory holds its inputs only);
#   - free every tracked byte: "live tracked bytes at exit: 0" on every rank that exits;
#     on 2 ranks a failed rank whose partner waits inside a collective ends the job with
#     MPI_Abort after the grace period (linalg/comm.h): then the processes are gone, and the
#     run must show the failing rank's message instead.
# Prints one summary line with the counts (sites, runs, agreed, aborted).
set -uo pipefail
qmlpipe=$1 cls=$2 work=$3 route=$4 ranks=$5 stride=$6 mpiexec=${7:-} backend=${8:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fault_case.sh
source "$here/fault_case.sh"
dir=$work/sweep_${route}_n$ranks${backend:+_$backend}
logs=${dir}_logs
rm -rf "$logs" && mkdir -p "$logs"
fault_case "$dir" "$route" "$qmlpipe" "$cls" || { echo "fault_sweep: no case" >&2; exit 1; }
[[ -z $backend ]] || echo "backend: $backend" >>"$dir/config.yaml"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 QP_AGREE_GRACE_SECONDS=1
target=0 at=""
launch=()
if [[ $ranks != 1 ]]; then
  target=1 at="@1"
  launch=("$mpiexec" -n "$ranks" --oversubscribe --allow-run-as-root --bind-to none)
fi

run() { # run SPEC LOG: the case under QP_FAULT=SPEC; sets $status
  status=0
  (cd "$dir" && QP_FAULT=$1 timeout 60 "${launch[@]}" "$qmlpipe" run config.yaml --quiet \
    >"$2.out" 2>"$2") || status=$?
}

run count "$logs/count"
[[ $status == 0 ]] || { cat "$logs/count"; echo "fault_sweep: the count run failed" >&2; exit 1; }
rm -f "$dir/results.h5"
# "qp_fault: rank R: alloc K term 'T' stage 'S'" and "... lapack NAME call K stage 'S'"
# (fields split at '|': a term's name may hold spaces, "host staging")
mapfile -t allocs < <(sed -n "s/^qp_fault: rank $target: alloc \([0-9]*\) term '\([^']*\)' stage '\([^']*\)'$/\1|\2|\3/p" "$logs/count")
mapfile -t calls < <(sed -n "s/^qp_fault: rank $target: \(lapack\|hdf5\) \([a-z_]*\) call \([0-9]*\) stage '\([^']*\)'$/\1 \2 \3 \4/p" "$logs/count")
n_allocs=${#allocs[@]}
[[ $n_allocs -gt 0 ]] || { cat "$logs/count"; echo "fault_sweep: no allocation counted" >&2; exit 1; }

failures=0 runs=0 agreed=0 aborted=0 succeeded=0
fail() { echo "FAIL $spec: $*" >&2; sed 's/^/    /' "$log" >&2; failures=$((failures + 1)); }

# check SPEC EXPECTED NAME STAGE: one run, judged as the header says.
check() {
  spec=$1$at
  local expected=$2 name=$3 stage=$4
  log=$logs/$(echo "$1" | tr ':' '_')
  run "$spec" "$log"
  runs=$((runs + 1))
  [[ $status != 124 ]] || { fail "hung (no end within 60 s)"; return; }
  [[ $status == "$expected" ]] || { fail "exit $status, expected $expected"; return; }
  if [[ $expected == 0 ]]; then
    succeeded=$((succeeded + 1))
    [[ -f $dir/results.h5 ]] || fail "a fault in the warm-up must leave the run to succeed"
    rm -f "$dir/results.h5"
  else
    grep -q -- "$name" "$log" || fail "the message does not name '$name'"
    [[ $stage == "(none)" ]] || grep -q -- "$stage" "$log" ||
      fail "the message does not name the stage $stage"
  fi
  local left
  left=$(cd "$dir" && ls -A | tr '\n' ' ')
  [[ $left == "$fault_case_inputs " ]] || fail "files left beside the inputs: $left"
  if grep -q "did not reach the agreement on errors" "$log"; then
    aborted=$((aborted + 1))
    grep -q "qmlpipe: rank [0-9]*: error (" "$log" || fail "aborted without the rank's message"
    grep -q "rank $target" "$log" || fail "the message does not name rank $target"
  else
    [[ $ranks == 1 || $expected == 0 ]] || agreed=$((agreed + 1))
    local r
    for ((r = 0; r < ranks; ++r)); do
      grep -q "^qp_fault: rank $r: live tracked bytes at exit: 0$" "$log" ||
        fail "rank $r: tracked bytes left alive at exit (or no report)"
    done
    grep -q "^qp_fault: rank $target: injected " "$log" || fail "the fault was not injected"
  fi
}

n_alloc_runs=0
for entry in "${allocs[@]}"; do
  IFS='|' read -r k term stage <<<"$entry"
  (((k - 1) % stride == 0 || k == n_allocs)) || continue
  n_alloc_runs=$((n_alloc_runs + 1))
  if [[ $term == warm_up ]]; then check "alloc:$k" 0 "$term" "$stage"
  else check "alloc:$k" 3 "term '$term'" "$stage"; fi
done
n_lapack=0 n_hdf5=0 n_call_runs=0 index=0
for entry in "${calls[@]}"; do
  read -r kind name k stage <<<"$entry"
  index=$((index + 1))
  (((index - 1) % stride == 0)) || continue
  n_call_runs=$((n_call_runs + 1))
  if [[ $kind == lapack ]]; then
    n_lapack=$((n_lapack + 1))
    if [[ $stage == "(none)" ]]; then check "lapack:$name:$k" 0 "$name" "$stage"
    else check "lapack:$name:$k" 5 "" "$stage"; fi
  else
    n_hdf5=$((n_hdf5 + 1))
    check "hdf5:$name:$k" 8 "results.h5" "$stage"
  fi
done
echo "fault_sweep $route${backend:+ (backend $backend)} on $ranks rank(s), faults on rank $target: $n_allocs tracked" \
  "allocations ($n_alloc_runs swept), ${#calls[@]} LAPACK and HDF5 calls ($n_lapack LAPACK and" \
  "$n_hdf5 HDF5 swept; stride $stride);" \
  "$runs runs: $succeeded succeeded (warm-up), $agreed ended by agreement, $aborted by" \
  "MPI_Abort; $failures failed"
[[ $failures == 0 ]]
