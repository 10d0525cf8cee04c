#!/usr/bin/env bash
# placement.sh: where the ranks ran, as the run records it and as plan, report and validate
# use it (issue 41), on 4 ranks of this host (mpiexec --oversubscribe):
#   placement.sh QMLPIPE MPIEXEC WORKDIR CLS PYTHON
# (a) /budget/ranks/host holds each rank's host, node_ranks the ranks on its node (4), and a
#     run inside a "Slurm job" (SLURM_JOB_ID, SLURM_CONF naming a slurm.conf) records the
#     JobAcctGatherType of that file; report --ranks prints the placement and each rank's host.
# (b) validate --sacct groups the ranks into nodes by the recorded host: the hosts rewritten
#     (h5py) to 1 + 3 and 3 + 1 placements give nodes of 1 and 3 ranks, each node's prediction
#     against its own cgroup peak ("job step node bytes" lines) passing at 2%; a file without
#     the host record says it used blocks of ranks_per_node.
# (c) the jobacct_gather/cgroup undercount: MaxRSS on the first node below what a rank on the
#     other node measured itself is said (exit 7, naming the node and what to set), not judged;
#     the gather type the run recorded (linux) is used without --sacct-gather, which overrides
#     it.
# (d) plan --job-limit under SLURM_MEM_PER_NODE holds as many products as run on 4 ranks does
#     under it; plan --sbatch sizes the node with --cpus-per-task threads, not the shell's.
set -euo pipefail
qmlpipe=$1 mpiexec=$2 work=$3 cls=$4 python=$5
dir=$work/placement
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
fail() { echo "placement: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mpi=("$mpiexec" -n 4 --oversubscribe --allow-run-as-root --bind-to none)
"$qmlpipe" simulate --example ex --cls "$cls" --nside 8 >/dev/null

# (a) the record
printf 'ClusterName=placement\n# JobAcctGatherType=jobacct_gather/cgroup\nJobAcctGatherType = jobacct_gather/linux # this one\n' >slurm.conf
SLURM_JOB_ID=4141 SLURM_CONF=$dir/slurm.conf "${mpi[@]}" -x SLURM_JOB_ID -x SLURM_CONF \
  "$qmlpipe" run ex/config.yaml --grid 2x2 --block 8 --output "$dir/r.h5" --quiet >run.log 2>&1 ||
  { cat run.log; fail "the 4-rank run failed"; }
"$python" - "$dir/r.h5" <<'PY' || fail "/budget/ranks does not record the placement (above)"
import socket, sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f["budget/ranks"]
hosts = [h.decode() for h in g["host"][:]]
host = socket.gethostname()
assert hosts == [host] * 4, (hosts, host)
assert list(g["node_ranks"][:]) == [4] * 4, g["node_ranks"][:]
assert g.attrs["ranks_per_node"] == 4
b = f["budget"].attrs
gather = b["slurm_jobacct_gather"]
gather = gather.decode() if isinstance(gather, bytes) else gather
assert gather == "jobacct_gather/linux", gather
print("recorded: hosts %s, node_ranks 4, gather %s" % (hosts, gather))
PY
"$qmlpipe" report r.h5 --ranks >report.txt || fail "report --ranks failed"
grep -q "placement: 1 node(s) by host name ($(hostname): 4 ranks 0 1 2 3)" report.txt ||
  { cat report.txt; fail "report --ranks does not print the placement"; }
grep -q ", host $(hostname)\$" report.txt || fail "report --ranks does not name each rank's host"
grep -q "nan" report.txt && fail "report --ranks prints a NaN"

# (b) nodes by host: 1 + 3 and 3 + 1
printf 'JobID|JobName|State|ExitCode|MaxRSS|MaxRSSTask|MaxRSSNode|NTasks|NNodes|ReqMem\n' >sacct.txt
printf '4141|qmlpipe|COMPLETED|0:0||||1|2|\n4141.0|qmlpipe|COMPLETED|0:0|%s|0|qa|4|2|\n' 1K >>sacct.txt
place() { # FILE HOSTS...: the hosts rewritten, or (no hosts) the record removed
  "$python" - "$@" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    g = f["budget/ranks"]
    if len(sys.argv) > 2:
        g["host"][...] = np.array([h.encode() for h in sys.argv[2:]], dtype=g["host"].dtype)
    else:
        del g["host"], g["node_ranks"]
        g.attrs["ranks_per_node"] = 1  # rank 0's node size, as files before the record held
PY
}
node_pred() { sed -n "s/^  node  *$1 ($2 ranks\{0,1\})[^|]*| *\([0-9.]*\) .*/\1/p" "$3"; }
for layout in "qa qb qb qb" "qa qa qa qb"; do
  cp r.h5 p.h5
  place p.h5 $layout
  "$qmlpipe" validate p.h5 --sacct sacct.txt --tolerance 1e6 >nodes.txt 2>&1 || true
  na=$(grep -o qa <<<"$layout" | wc -l) nb=$(grep -o qb <<<"$layout" | wc -l)
  a=$(node_pred qa "$na" nodes.txt) b=$(node_pred qb "$nb" nodes.txt)
  [[ -n $a && -n $b ]] || { cat nodes.txt; fail "$layout: no node qa of $na and qb of $nb rank(s)"; }
  # Each node's cgroup peak 1% above its own prediction: right for this placement, so it passes.
  awk -v a="$a" -v b="$b" 'BEGIN { printf "4141 0 qa %.0f\n4141 0 qb %.0f\n", a * 1.01 * 1048576, b * 1.01 * 1048576 }' >peaks.txt
  "$qmlpipe" validate p.h5 --sacct sacct.txt --sacct-gather linux --cgroup-peak peaks.txt \
    --tolerance 0.02 >judged.txt 2>&1 && fail "$layout: a MaxRSS of 1K passed"
  [[ $(grep -c '^  node .*| ok$' judged.txt) == 2 ]] ||
    { cat judged.txt; fail "$layout: the nodes are not both within 2% of their own peaks"; }
  echo "placement $layout: node qa ($na) $a MiB, qb ($nb) $b MiB, each against its own peak: ok"
done
cp r.h5 old.h5
place old.h5
"$qmlpipe" validate old.h5 --sacct sacct.txt --tolerance 1e6 >old.txt 2>&1 || true
grep -q "note: this results file does not record each rank's host" old.txt ||
  { cat old.txt; fail "a file without the host record: no note"; }

# A host record that is not one string per rank, and a cgroup line of five fields: refused
# (exit 6) naming them.
cp r.h5 bad.h5
"$python" -c 'import sys, h5py; g = h5py.File(sys.argv[1], "r+")["budget/ranks"]; del g["host"]; g["host"] = [1, 2, 3]' bad.h5
for cmd in "report bad.h5 --ranks" "validate bad.h5 --sacct sacct.txt"; do
  set +e
  "$qmlpipe" $cmd >bad.txt 2>&1
  rc=$?
  set -e
  [[ $rc == 6 ]] && grep -q "/budget/ranks/host: expected 4 fixed-width strings" bad.txt ||
    { cat bad.txt; fail "$cmd on a malformed host record: exit $rc"; }
done
echo "4141 0 qa extra 1000" >peaks5.txt
set +e
"$qmlpipe" validate r.h5 --sacct sacct.txt --cgroup-peak peaks5.txt >bad.txt 2>&1
rc=$?
set -e
[[ $rc == 6 ]] && grep -q "peaks5.txt:1: expected 'job step bytes' or 'job step node bytes'" bad.txt ||
  { cat bad.txt; fail "a five-field --cgroup-peak line: exit $rc"; }

# (c) the undercount: MaxRSS on qa (rank 0's node) far below what a rank on qb measured
cp r.h5 u.h5
place u.h5 qa qb qb qb
set +e
"$qmlpipe" validate u.h5 --sacct sacct.txt --sacct-gather cgroup --tolerance 0.02 >under.txt 2>&1
rc=$?
set -e
[[ $rc == 7 ]] || { cat under.txt; fail "the cgroup undercount: exit $rc, expected 7"; }
grep -q "NOT JUDGED: sacct undercounts" under.txt && grep -q "on node qb measured itself" under.txt &&
  grep -q "JobAcctGatherType=jobacct_gather/linux" under.txt ||
  { cat under.txt; fail "the undercount is not said, naming qb and what to set"; }
# The undercount as seen on a real 2-node step (tests/slurm/test_nodes.sh gather): qb's tasks
# read as mem=0 (TRESUsageInMin on qb) while MaxRSS, the first node's, looks plausible.
place u.h5 qa qa qb qb
printf 'JobID|State|MaxRSS|MaxRSSNode|TRESUsageInMin|TRESUsageInMinNode\n4141|COMPLETED||||\n' >zero.txt
printf '4141.0|COMPLETED|%s|qa|cpu=00:00:01,mem=0,pages=0|cpu=qb,mem=qb,pages=qb\n' 10G >>zero.txt
set +e
"$qmlpipe" validate u.h5 --sacct zero.txt --sacct-gather cgroup --tolerance 1e6 >zero.log 2>&1
rc=$?
set -e
[[ $rc == 7 ]] && grep -q "NOT JUDGED: sacct undercounts" zero.log &&
  grep -q "smallest task of step 4141.0 used mem=0 on qb" zero.log &&
  grep -q "JobAcctGatherType=jobacct_gather/linux" zero.log ||
  { cat zero.log; fail "a task with mem=0 on qb under cgroup: exit $rc, expected 7 naming qb"; }
# The same under linux (a task of 0 bytes is not that plugin's undercount): judged, exit 0.
"$qmlpipe" validate u.h5 --sacct zero.txt --sacct-gather linux --tolerance 1e6 >zero-linux.log 2>&1 ||
  { cat zero-linux.log; fail "mem=0 under jobacct_gather/linux was not judged"; }
# The run recorded linux: without --sacct-gather the rank is judged (and fails: 1K), exit 4.
set +e
"$qmlpipe" validate u.h5 --sacct sacct.txt --tolerance 0.02 >linux.txt 2>&1
rc=$?
set -e
[[ $rc == 4 ]] && grep -q "gather type: jobacct_gather/linux (recorded by the run" linux.txt ||
  { cat linux.txt; fail "the recorded gather type not used (exit $rc)"; }
echo "undercount said (exit 7); the recorded gather type used"

# Inside a job whose slurm.conf cannot be read: nothing recorded, and validate says so.
(cd ex && SLURM_JOB_ID=4142 SLURM_CONF=$dir/missing.conf "$qmlpipe" run config.yaml \
  --output "$dir/one.h5" --quiet >/dev/null) || fail "the 1-process run failed"
"$qmlpipe" validate one.h5 --sacct sacct.txt --tolerance 1e6 >one.txt 2>&1 || true
grep -q "gather type: not recorded by the run" one.txt ||
  { cat one.txt; fail "no slurm.conf: the gather type not said to be unrecorded"; }

# (d) plan to the job's limit as run does; --mem with the script's threads
held() { sed -n 's/.*[^0-9]\([0-9][0-9]*\) of \([0-9][0-9]*\) products.*/\1 of \2/p' | head -1; }
planned=$(SLURM_MEM_PER_NODE=420 "$qmlpipe" plan ex/config.yaml --ranks 4 --grid 2x2 --block 8 \
  --ranks-per-node 4 --job-limit 2>&1 | held)
ran=$(SLURM_MEM_PER_NODE=420 "${mpi[@]}" -x SLURM_MEM_PER_NODE "$qmlpipe" run ex/config.yaml \
  --grid 2x2 --block 8 --output "$dir/lim.h5" 2>&1 | held)
[[ -n $planned && $planned == "$ran" && $planned != "11 of 11" ]] ||
  fail "plan --job-limit holds '$planned' products, run '$ran' (SLURM_MEM_PER_NODE=420)"
echo "SLURM_MEM_PER_NODE=420 on 4 ranks: plan --job-limit and run both hold $ran products"
node() { "$python" -c 'import json, sys; print(json.load(sys.stdin)["node_peak_bytes"])'; }
one=$(OMP_NUM_THREADS=1 "$qmlpipe" plan ex/config.yaml --json | node)
three=$(OMP_NUM_THREADS=3 "$qmlpipe" plan ex/config.yaml --json | node)
job=$(OMP_NUM_THREADS=3 "$qmlpipe" plan ex/config.yaml --json --sbatch job.sh | node)
[[ $job == "$one" && $three != "$one" ]] ||
  fail "plan --sbatch under 3 threads sizes $job bytes; 1 thread $one, 3 threads $three"
grep -q -- "--job-limit" job.sh || fail "the job script's plan line lacks --job-limit"
echo "plan --sbatch: node peak $job bytes with the script's 1 thread (the shell's 3: $three)"
echo "placement: ok"
