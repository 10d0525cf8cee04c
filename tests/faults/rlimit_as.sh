#!/usr/bin/env bash
# rlimit_as.sh: qmlpipe under an address-space limit (`ulimit -v`) ends in seconds with a clear
# message, never hangs (issue 12, defect 6).
#   rlimit_as.sh QMLPIPE CLS WORK
# OpenBLAS gives each thread a 128 MiB buffer and asks again for ever for one it cannot map:
# the run used to hang in the warm-up's first dgemm (or, with the warm-up's matrices mapped
# first, there). With 2 OpenBLAS threads, on the small case of fault_case.sh (pixel_direct) and
# the nside 16 example of `qmlpipe simulate --example`:
#   (a) 60000 KiB, far too small to start: the dynamic loader (exit 127) or OpenBLAS's thread
#       start refuses at once, before qmlpipe's code runs: ends in seconds, with a message;
#   (b) 200000 KiB: the planner's limit (RLIMIT_AS less the address space mapped and 200 MiB a
#       thread) refuses: exit 4 naming RLIMIT_AS;
#   (c) 200000 and 300000 KiB with the planner told to ignore the job's limits
#       (QMLPIPE_IGNORE_JOB_LIMIT=1): too little left for OpenBLAS's buffers: exit 4 naming
#       OpenBLAS (these hung); under another BLAS (BLIS), any end (0, 3 or 4);
#   (d) the example at 450000 KiB with QMLPIPE_IGNORE_JOB_LIMIT=1: OpenBLAS's buffers fit, the
#       warm-up runs, a stage's allocation does not (fisher_run's products, or C when more
#       of the address space is mapped): exit 3 naming the term and the stage
#       (this hung too: the warm-up's matrices took the room of the calling thread's buffer);
#   (e) 1200000 KiB with the planner on: the plan fits beside the buffers and the run succeeds.
# Each run has 60 s; a hang fails the test. No results file is left by a failed run.
set -uo pipefail
qmlpipe=$1 cls=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=fault_case.sh
source "$here/fault_case.sh"
dir=$work/rlimit_as
fault_case "$dir" pixel_direct "$qmlpipe" "$cls" || exit 1
rm -rf "$work/rlimit_as_example"
"$qmlpipe" simulate --example "$work/rlimit_as_example" --cls "$cls" >/dev/null || exit 1
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
unset QMLPIPE_IGNORE_JOB_LIMIT
failures=0
# one TAG DIR KIB EXPECTED PATTERN [ENV=VALUE]: EXPECTED is a |-separated list of statuses
one() {
  local tag=$1 case_dir=$2 kib=$3 expected=$4 pattern=$5 env=${6:-QP_UNUSED=1}
  local log=$work/rlimit_as_$tag.log status=0 start end seconds
  rm -f "$case_dir/results.h5"
  start=$(date +%s.%N)
  (cd "$case_dir" && env "$env" timeout 60 bash -c "ulimit -v $kib && exec '$qmlpipe' run config.yaml --quiet" \
    >/dev/null 2>"$log") || status=$?
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  local problems=()
  [[ $status != 124 ]] || problems+=("hung: no end within 60 s")
  [[ "|$expected|" == *"|$status|"* ]] || problems+=("exit $status, expected $expected")
  [[ -z $pattern ]] || grep -Eq "$pattern" "$log" || problems+=("stderr does not match '$pattern'")
  if [[ $status != 0 && -e $case_dir/results.h5 ]]; then problems+=("a results file was left"); fi
  if ((${#problems[@]})); then
    printf 'FAIL (%s) ulimit -v %s: %s\n' "$tag" "$kib" "${problems[*]}" >&2
    sed 's/^/    /' "$log" >&2
    failures=$((failures + 1))
  else
    printf 'ok   (%s) ulimit -v %s: exit %s in %s s: %s\n' "$tag" "$kib" "$status" "$seconds" \
      "$(if [[ -n $pattern ]]; then grep -Em1 "$pattern" "$log" | cut -c1-160; fi)"
  fi
}
one a "$dir" 60000 "127|130|3|4" "error while loading shared libraries|OpenBLAS|RLIMIT_AS"
one b "$dir" 200000 4 "memory budget exceeded.*RLIMIT_AS"
# (c) is about OpenBLAS's buffers: under another BLAS (a -DQP_BLAS=blis build, qmlpipe --version
# says which) there are none to refuse, and the run need only end (succeed, or refuse).
blas=$("$qmlpipe" --version | grep -m1 '^BLAS:')
if [[ $blas == "BLAS: OpenBLAS"* ]]; then
  c_expected=4 c_pattern="RLIMIT_AS .*OpenBLAS needs"
else
  c_expected="0|3|4" c_pattern=""
  printf '(c1, c2) not OpenBLAS (%s): no OpenBLAS buffers to refuse; the runs need only end\n' \
    "$(cut -c1-60 <<<"$blas")"
fi
one c1 "$dir" 200000 "$c_expected" "$c_pattern" QMLPIPE_IGNORE_JOB_LIMIT=1
one c2 "$dir" 300000 "$c_expected" "$c_pattern" QMLPIPE_IGNORE_JOB_LIMIT=1
one d "$work/rlimit_as_example" 450000 3 \
  "out of memory allocating term '[a-z_A-Z]*' .* in stage '[a-z_]*'" QMLPIPE_IGNORE_JOB_LIMIT=1
one e "$dir" 1200000 0 ""
[[ $failures == 0 ]]
