#!/bin/bash
# One multi-node real-Slurm test on the fixture of slurm_fixture.sh (docs/slurm.md, "Several
# nodes"): jobs across the fixture's two compute nodes.
#   test_nodes.sh CASE FIXTURE_DIR QMLPIPE SOURCE_DIR WORK_DIR [REFERENCE.h5]
# Every case: the example with window_functions: false (a small case), and the script that
# `qmlpipe plan ex/config.yaml --ranks 4 --ranks-per-node 2 --sbatch job.sh` writes (2 nodes,
# 2 ranks each, srun --mpi=pmix --kill-on-bad-exit=1).
# CASE:
#   job       job.sh submitted as written: COMPLETED in every sacct step; ranks 0-1 on one node
#             and 2-3 on the other (the fixture's TaskEpilog records each rank's host); /fisher
#             and /spectra/cl equal a direct one-rank run's to 1e-12 (compare_results.py);
#             `qmlpipe validate RESULTS --sacct --cgroup-peak <TaskEpilog peaks> --tolerance 0.05`
#             passes, taking the gather type the run recorded (no --sacct-gather). The results
#             are kept as WORK_DIR/reference.h5: the uninterrupted run the other cases compare
#             with.
#   nodefail  job.sh with `run --checkpoint ck --resume`, submitted with --requeue; once a
#             stage's checkpoint exists for every rank, the node that does not run the batch
#             script is lost (slurm_fixture.sh kill-node: its slurmd, slurmstepd and ranks
#             SIGKILLed). Slurm must requeue the job (Restarts >= 1); the node is restarted
#             (slurm_fixture.sh restart-node, which clears Slurm's leftovers), the job let start
#             at once (scontrol update StartTime=now); it must resume ("continuing after"), end
#             COMPLETED and give REFERENCE.h5's values exactly, leaving no checkpoint.
#   rankkill  the script of `plan ... --sbatch ckjob.sh --checkpoint ck` (#SBATCH --requeue,
#             `run --checkpoint ck --resume`, and it requeues its own job when srun ends with a
#             status not qmlpipe's own), submitted as written; once every rank has checkpointed,
#             only the second node's ranks are killed (slurm_fixture.sh kill-tasks; slurmstepd
#             and slurmd live on): srun --kill-on-bad-exit=1 ends the step at once (status
#             137), the script requeues the job (Restarts=1) and, with nothing done by the test
#             (no scontrol), the job starts again after the fixture's 10 s requeue hold
#             (cred_expire), resumes, COMPLETES and gives REFERENCE.h5's values exactly.
#   uneven    1 + 3 and 3 + 1 ranks on the two nodes (a smaller case: the mask cut at 40
#             degrees, 1088 pixels): the script of `plan --ranks 4 --ranks-per-node 3
#             --sbatch` made uneven (--overcommit, srun --distribution=arbitrary with a
#             SLURM_HOSTFILE: Slurm refuses --ntasks-per-node=3 on 2-CPU nodes). 1 + 3 at the
#             plan's --mem: COMPLETED, results equal a direct run's (1e-12), /budget/ranks/host
#             equal to where the TaskEpilog saw each rank, `report --ranks`'s placement line,
#             and `validate --sacct --tolerance 0.1` passes with one row per real node (1 rank,
#             3 ranks).
#             3 + 1 with --mem at 90% of what the 3-rank node needs (3 x (rank peak + run's
#             margin of 64 MiB); three times what the 1-rank node needs):
#             never OUT_OF_MEMORY; qmlpipe chunks to the 3-rank node's limit, naming it
#             (COMPLETED, the same results, validate passes) or refuses (exit 4) naming it: the
#             script's own `plan --job-limit` line on the batch host (the 3-rank node), or
#             every rank.
#   gather    the fixture switched to JobAcctGatherType=jobacct_gather/cgroup (slurm_fixture.sh
#             set-gather; back to linux at the end, also on failure), the smaller case's
#             2 + 2 job: `validate --sacct` (sacct with TRESUsageInMin,TRESUsageInMinNode) must
#             say NOT JUDGED and exit 7, naming the second node (its tasks counted as mem=0) and
#             JobAcctGatherType=jobacct_gather/linux.
# Exit 77 (skip) when the fixture is not up or has fewer than two nodes (no network namespaces:
# slurm_fixture.sh says why in FIXTURE_DIR/nodes-why).
set -uo pipefail
case_=${1:?case}
fixture=${2:?fixture dir}
qmlpipe=${3:?qmlpipe}
src=${4:?source dir}
work=${5:?work dir}
ref=${6:-}

if [[ ! -e $fixture/ready ]]; then
  echo "test_nodes: the Slurm fixture is not up in $fixture (see the slurm_fixture_start test); skipped"
  exit 77
fi
if (($(wc -l <"$fixture/nodes") < 2)); then
  echo "test_nodes: the fixture has one node ($(cat "$fixture/nodes-why" 2>/dev/null)); skipped"
  exit 77
fi
export SLURM_CONF=$fixture/slurm.conf
export QMLPIPE=$qmlpipe
# The fixture's two nodes claim 2 CPUs each on this machine's cores: 4 ranks polling in MPI
# starve each other (fisher_run 38 s instead of 12 s). Yielding changes no value.
export OMPI_MCA_mpi_yield_when_idle=1
fixture_sh=$src/tests/slurm/slurm_fixture.sh
python=/usr/bin/python3
fail() { echo "test_nodes[$case_]: FAIL: $*"; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
# sacct of JOB into FILE once the record is complete (it lags the job's end by a moment).
get_sacct() {
  for _ in $(seq 1 50); do
    sacct -j "$1" --parsable2 --noconvert -o "JobID,JobName,State,ExitCode,MaxRSS,MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem,TRESUsageInMin,TRESUsageInMinNode" >"$2" 2>&1
    grep -q "^$1\.0|" "$2" && ! grep -q "RUNNING\|PENDING" "$2" && return 0
    sleep 0.2
  done
  return 1
}
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }

# Poll (0.2 s) until the job's state is one of STATES, at most LIMIT seconds; prints the state.
wait_state() {
  local job=$1 states=$2 limit=$3 st deadline
  deadline=$(($(date +%s) + limit))
  while :; do
    st=$(job_field "$job" JobState)
    [[ " $states " == *" $st "* ]] && { echo "$st"; return 0; }
    (($(date +%s) >= deadline)) && { echo "$st"; return 1; }
    sleep 0.2
  done
}

rm -rf -- "$work"
mkdir -p "$work" && cd "$work" || exit 1
"$qmlpipe" simulate --example ex --cls "$src/data/cls_planck2015_lcdm.txt" >/dev/null || fail "simulate"
echo "window_functions: false" >>ex/config.yaml
if [[ $case_ == uneven || $case_ == gather ]]; then
  # The smaller case: the example's maps under a mask cut at 40 degrees (1088 pixels, fisher_run
  # ~2 s on one rank), so that three jobs of 4 ranks stay short.
  "$qmlpipe" simulate --cls ex/cls.txt --nside 16 --mask ex/mask40.fits --galactic-cut 40 \
    --out sim40 >/dev/null || fail "simulate --mask --galactic-cut 40"
  mv -f ex/mask40.fits ex/mask.fits && rm -f sim40_*.fits
fi
"$qmlpipe" plan ex/config.yaml --ranks 4 --ranks-per-node 2 --sbatch job.sh >plan.log 2>&1 ||
  fail "qmlpipe plan --sbatch (plan.log)"
echo "----- generated job.sh (#SBATCH and srun lines)"
grep '^#SBATCH\|srun' job.sh
{ grep -qx '#SBATCH --nodes=2' job.sh && grep -qx '#SBATCH --ntasks-per-node=2' job.sh; } ||
  fail "job.sh does not ask for 2 nodes of 2 tasks"
grep '^srun ' job.sh | grep -q -- '--kill-on-bad-exit=1' || fail "job.sh's srun lacks --kill-on-bad-exit=1"

if [[ $case_ == job ]]; then
  rm -f reference.h5
  t0=$(now)
  OMP_NUM_THREADS=1 "$qmlpipe" run ex/config.yaml --output direct.h5 >direct.log 2>&1 || fail "direct run (direct.log)"
  echo "direct one-rank run: $(secs "$t0" "$(now)") s"
  t0=$(now)
  job=$(sbatch --parsable -o "$work/job-%j.out" job.sh) || fail "sbatch job.sh"
  job=${job%%;*}
  state=$(wait_state "$job" "COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL" 300)
  echo "job $job: $state after $(secs "$t0" "$(now)") s"
  echo "----- job output (stage times)"
  grep -A6 '^stage  *seconds' "job-$job.out"
  echo "-----"
  [[ $state == COMPLETED ]] || { cat "job-$job.out"; fail "JobState=$state"; }
  [[ $(job_field "$job" ExitCode) == 0:0 ]] || fail "ExitCode=$(job_field "$job" ExitCode)"
  if [[ -e $fixture/db ]]; then
    get_sacct "$job" sacct.txt
    echo "sacct:"
    cat sacct.txt
    awk -F'|' 'NR > 1 && $3 != "COMPLETED"' sacct.txt | grep -q . && fail "sacct: a step did not complete"
  fi
  results=ex/results-$job.h5
  [[ -r $results ]] || fail "no results file $results"
  "$python" "$src/tests/slurm/compare_results.py" direct.h5 "$results" 1e-12 ||
    fail "results differ from the direct run"
  # Where each rank of the srun step ran: "job step rank node bytes" (TaskEpilog).
  [[ -r $fixture/tasks/$job ]] || fail "no TaskEpilog record $fixture/tasks/$job"
  awk '$2 == "0"' "$fixture/tasks/$job" | sort -k3,3n >ranks.txt
  echo "ranks (job step rank node job-cgroup-peak-bytes):"
  cat ranks.txt
  [[ $(awk '{print $3}' ranks.txt | tr '\n' ' ') == "0 1 2 3 " ]] || fail "not one record per rank 0-3"
  n01=$(awk '$3 <= 1 {print $4}' ranks.txt | sort -u)
  n23=$(awk '$3 >= 2 {print $4}' ranks.txt | sort -u)
  [[ $(wc -l <<<"$n01") == 1 && $(wc -l <<<"$n23") == 1 && $n01 != "$n23" ]] ||
    fail "ranks 0-1 and 2-3 not on two different nodes ($(tr '\n' ' ' <ranks.txt))"
  if [[ -s sacct.txt ]]; then
    awk '$2 != "?"' "$fixture/peaks/$job" >peaks.txt  # the srun step's tasks, both nodes
    # No --sacct-gather: the gather type the run recorded (/budget slurm_jobacct_gather).
    "$qmlpipe" validate "$results" --sacct sacct.txt --cgroup-peak peaks.txt --tolerance 0.05 \
      >validate.log 2>&1
    vrc=$?
    sed -n '/^job /,$p' validate.log
    [[ $vrc == 0 ]] || { cat validate.log; fail "qmlpipe validate --sacct --tolerance 0.05: exit $vrc"; }
    grep -qF "gather type: jobacct_gather/$(cat "$fixture/gather") (recorded by the run" validate.log ||
      fail "validate did not take the gather type the run recorded"
  fi
  cp "$results" reference.h5
  echo "test_nodes[$case_]: ok"
  exit 0
fi

# Where the TaskEpilog saw each rank of step 0 of JOB: "rank node", ranks in order.
task_nodes() { awk '$2 == "0" {print $3, $4}' "$fixture/tasks/$1" | sort -n; }
# Every line of FILE (sacct) whose state is not COMPLETED, and none OUT_OF_MEMORY.
no_oom() { ! grep -q "OUT_OF_ME" "$1"; }

if [[ $case_ == uneven ]]; then
  mapfile -t nodes <"$fixture/nodes"
  n1=${nodes[0]} n2=${nodes[1]}
  OMP_NUM_THREADS=1 "$qmlpipe" run ex/config.yaml --output direct.h5 >direct.log 2>&1 || fail "direct run (direct.log)"
  "$qmlpipe" plan ex/config.yaml --ranks 4 --ranks-per-node 3 --sbatch job3.sh --json >plan3.json 2>plan3.log ||
    fail "plan --ranks 4 --ranks-per-node 3 --sbatch (plan3.log)"
  read -r node3 rank_peak mem3 < <("$python" -c 'import json, sys; p = json.load(open(sys.argv[1])); print(p["node_peak_bytes"], p["rank_peak_bytes"], p["sbatch"]["mem_mib"])' plan3.json)
  # `run` divides a node's limit among the ranks there and keeps a margin of 64 MiB for each
  # (budget/job_limit.h): a 3-rank node needs 3 x (rank peak + 64 MiB), a 1-rank node a third
  # of it. --mem at 90% of the first is below the plan on the 3-rank node only (at 80% this
  # case's ranks, 38 MiB of overhead each, no longer fit however chunked: a refusal).
  need3=$((3 * (rank_peak + 67108864)))
  low=$((need3 * 9 / 10 / 1048576))
  ((low * 1048576 > need3 / 3 + 67108864)) || fail "--mem=${low}M leaves too little for the 1-rank node"
  echo "plan: node of 3 ranks ${node3} B, rank ${rank_peak} B; --mem=${mem3}M (the plan's), ${low}M (90% of the 3-rank node's ${need3} B with run's margins)"
  # Uneven: Slurm refuses --ntasks-per-node=3 on 2-CPU nodes; --overcommit and srun's
  # arbitrary distribution over SLURM_HOSTFILE (one line per rank) place the ranks.
  uneven() {  # uneven NAME HOST...
    local name=$1
    shift
    printf '%s\n' "$@" >"$work/$name.hosts"
    sed -e 's/^#SBATCH --ntasks-per-node=3$/#SBATCH --overcommit/' \
      -e "s|^srun \(.*\)--ntasks-per-node=3 |export SLURM_HOSTFILE='$work/$name.hosts'\nsrun \1--overcommit --distribution=arbitrary |" \
      job3.sh >"$name.sh"
    grep -q '^#SBATCH --overcommit$' "$name.sh" && grep -q '^srun .*--distribution=arbitrary' "$name.sh" ||
      fail "could not make $name.sh from job3.sh"
  }
  uneven u13 "$n1" "$n2" "$n2" "$n2"
  uneven u31 "$n1" "$n1" "$n1" "$n2"
  t0=$(now)
  a=$(sbatch --parsable -o "$work/job-%j.out" u13.sh) || fail "sbatch u13.sh"
  b=$(sbatch --parsable --mem="${low}M" -o "$work/job-%j.out" u31.sh) || fail "sbatch u31.sh"
  a=${a%%;*} b=${b%%;*}
  sa=$(wait_state "$a" "COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL" 300)
  sb=$(wait_state "$b" "COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL" 300)
  echo "jobs $a (1 + 3, --mem=${mem3}M): $sa; $b (3 + 1, --mem=${low}M): $sb; both after $(secs "$t0" "$(now)") s"
  grep -h -A6 '^stage  *seconds' "job-$a.out" "job-$b.out"
  [[ -e $fixture/db ]] || fail "the uneven case needs the fixture's database (sacct)"
  get_sacct "$a" sacct-a.txt
  get_sacct "$b" sacct-b.txt
  cat sacct-a.txt sacct-b.txt
  no_oom sacct-a.txt && no_oom sacct-b.txt || fail "a step was OUT_OF_MEMORY"
  # Checks of a completed uneven job: JOB NAME "rank node" lines expected
  check_placed() {
    local job=$1 name=$2 want=$3 results=ex/results-$1.h5 hosts rc
    awk -F'|' 'NR > 1 && $3 != "COMPLETED"' "sacct-$name.txt" | grep -q . && fail "job $job: a step did not complete"
    [[ -r $results ]] || fail "job $job: no results $results"
    "$python" "$src/tests/slurm/compare_results.py" direct.h5 "$results" 1e-12 || fail "job $job: results differ from the direct run"
    [[ $(task_nodes "$job" | tr '\n' ' ') == "$want" ]] || fail "job $job: ranks on '$(task_nodes "$job" | tr '\n' ' ')', not '$want'"
    hosts=$("$python" -c 'import sys, h5py; h = h5py.File(sys.argv[1], "r")["budget/ranks/host"][()]; print(" ".join("%d %s" % (i, x.decode().rstrip("\0")) for i, x in enumerate(h)), end=" ")' "$results")
    [[ $hosts == "$want" ]] || fail "job $job: /budget/ranks/host '$hosts', the TaskEpilog saw '$want'"
    "$qmlpipe" report "$results" --ranks >"report-$name.txt" 2>&1 || fail "job $job: report --ranks"
    grep '^placement' "report-$name.txt"
    # --tolerance 0.1: this small case's ranks are mostly the process's overhead (38 of 48-72
    # MiB), which the model puts ~3 MiB above what sacct sees (-4.5% unchunked, -5.7% chunked;
    # the 5% checks are slurm_nodes_job's and gen1/gen2's). What is checked here is the nodes.
    "$qmlpipe" validate "$results" --sacct "sacct-$name.txt" --tolerance 0.1 >"validate-$name.log" 2>&1
    rc=$?
    sed -n '/^job /,$p' "validate-$name.log"
    [[ $rc == 0 ]] || { cat "validate-$name.log"; fail "job $job: validate --sacct exit $rc"; }
  }
  [[ $sa == COMPLETED ]] || { cat "job-$a.out"; fail "1 + 3 at the plan's --mem: JobState=$sa"; }
  check_placed "$a" a "0 $n1 1 $n2 2 $n2 3 $n2 "
  grep -qxF "placement: 2 node(s) by host name ($n1: 1 rank 0; $n2: 3 ranks 1 2 3)" report-a.txt ||
    fail "report --ranks: no placement line for 1 + 3"
  grep -q "node  *$n1 (1 rank) " validate-a.log && grep -q "node  *$n2 (3 ranks) " validate-a.log ||
    fail "validate: not one row per real node (1 rank, 3 ranks)"
  # 3 + 1 below the plan on the 3-rank node: the limit found there, naming it.
  if [[ $sb == COMPLETED ]]; then
    grep -q "memory limit .*(node $n1: .*shared by 3 ranks on this node" "job-$b.out" ||
      { cat "job-$b.out"; fail "3 + 1: the memory limit does not name $n1 and its 3 ranks"; }
    grep -q "chunks for the job's memory limit" "job-$b.out" || fail "3 + 1 at ${low}M: completed without chunking"
    check_placed "$b" b "0 $n1 1 $n1 2 $n1 3 $n2 "
    grep -qxF "placement: 2 node(s) by host name ($n1: 3 ranks 0 1 2; $n2: 1 rank 3)" report-b.txt ||
      fail "report --ranks: no placement line for 3 + 1"
    echo "3 + 1 at ${low}M: chunked ($(grep -o '[0-9]* of [0-9]* products held in fisher_run' "job-$b.out" | head -n1)), COMPLETED"
  else
    # Refused (exit 4) at once, naming the node: by the script's `plan --job-limit` on the
    # batch host (here the 3-rank node), before srun; or by every rank.
    [[ $(job_field "$b" ExitCode) == 4:0 ]] && ! grep -q "Killed\|Out Of Memory" "job-$b.out" &&
      grep -q "exceeds the job's memory limit .*\(node $n1: \|slurm_$n1/\).*shared by 3 ranks on this node" "job-$b.out" ||
      { cat "job-$b.out"; fail "3 + 1 at ${low}M: JobState=$sb, not a refusal (exit 4) naming $n1 and its 3 ranks"; }
    echo "3 + 1 at ${low}M: refused (exit 4) in $(job_field "$b" RunTime), naming $n1: $(grep -c "exceeds the job's memory limit" "job-$b.out") message(s)"
  fi
  echo "test_nodes[$case_]: ok"
  exit 0
fi

if [[ $case_ == gather ]]; then
  [[ -e $fixture/db ]] || fail "the gather case needs the fixture's database (sacct)"
  # Back to linux whatever happens: the other tests expect it.
  trap 'bash "$fixture_sh" set-gather "$fixture" linux >/dev/null 2>&1' EXIT
  t0=$(now)
  bash "$fixture_sh" set-gather "$fixture" cgroup || fail "set-gather cgroup"
  echo "JobAcctGatherType=jobacct_gather/cgroup after $(secs "$t0" "$(now)") s"
  job=$(sbatch --parsable -o "$work/job-%j.out" job.sh) || fail "sbatch job.sh"
  job=${job%%;*}
  state=$(wait_state "$job" "COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL" 300)
  echo "job $job: $state"
  [[ $state == COMPLETED ]] || { cat "job-$job.out"; fail "JobState=$state"; }
  get_sacct "$job" sacct.txt
  cat sacct.txt
  echo "where each rank ran, and each node's job cgroup peak (TaskEpilog: job step rank node bytes):"
  awk '$2 == "0"' "$fixture/tasks/$job" | sort -k3,3n
  first=$(task_nodes "$job" | awk '$1 == 0 {print $2}')
  other=$(task_nodes "$job" | awk -v f="$first" '$2 != f {print $2; exit}')
  results=ex/results-$job.h5
  "$qmlpipe" validate "$results" --sacct sacct.txt --tolerance 0.05 >validate.log 2>&1
  vrc=$?
  sed -n '/^job /,$p' validate.log
  [[ $vrc == 7 ]] || { cat validate.log; fail "validate --sacct under jobacct_gather/cgroup: exit $vrc, expected 7"; }
  grep -q "gather type: jobacct_gather/cgroup (recorded by the run" validate.log &&
    grep -q "NOT JUDGED: sacct undercounts" validate.log &&
    grep -q "used mem=0 on $other" validate.log &&
    grep -q "JobAcctGatherType=jobacct_gather/linux" validate.log ||
    fail "validate does not say the undercount naming $other and the setting"
  t0=$(now)
  bash "$fixture_sh" set-gather "$fixture" linux || fail "set-gather linux"
  trap - EXIT
  echo "back to jobacct_gather/linux in $(secs "$t0" "$(now)") s"
  echo "test_nodes[$case_]: ok"
  exit 0
fi

[[ $case_ == nodefail || $case_ == rankkill ]] || fail "unknown case"
[[ -n $ref && -r $ref ]] || fail "no reference results '$ref' (the slurm_nodes_job test writes them)"
t0=$(now)
if [[ $case_ == nodefail ]]; then
  # The generated script, its run line checkpointing: a requeued start resumes after the last
  # checkpoint (--resume with none starts from the first stage). Slurm requeues the job.
  sed "s|--output \"\$results\"|--output \"\$results\" --checkpoint '$work/ck' --resume|" job.sh >ck.sh
  grep -q -- "--checkpoint '$work/ck' --resume" ck.sh || fail "could not add --checkpoint to job.sh's run line"
  job=$(sbatch --parsable --requeue --open-mode=append -o "$work/job-%j.out" ck.sh) || fail "sbatch ck.sh"
else
  # The script as `plan --checkpoint` writes it: it requeues its own job.
  "$qmlpipe" plan ex/config.yaml --ranks 4 --ranks-per-node 2 --sbatch ckjob.sh --checkpoint ck \
    >plan-ck.log 2>&1 || fail "plan --sbatch --checkpoint (plan-ck.log)"
  grep -qx '#SBATCH --requeue' ckjob.sh && grep -q 'scontrol requeue' ckjob.sh &&
    grep -q -- '--checkpoint "$checkpoint" --resume' ckjob.sh || fail "ckjob.sh does not checkpoint and requeue"
  job=$(sbatch --parsable -o "$work/job-%j.out" ckjob.sh) || fail "sbatch ckjob.sh"
fi
job=${job%%;*}
# A stage checkpointed by every rank (one listing per poll: the files are renamed in).
stage=
for _ in $(seq 1 600); do
  for f in ck/stage-*.rank3.h5; do
    [[ -e $f ]] || continue
    s=${f%.rank3.h5}
    [[ -e $s.rank0.h5 && -e $s.rank1.h5 && -e $s.rank2.h5 ]] && { stage=${s#ck/}; break; }
  done
  [[ -n $stage ]] && break
  sleep 0.1
done
[[ -n $stage ]] || { cat "job-$job.out"; fail "no checkpoint of every rank in 60 s"; }
batch=$(job_field "$job" BatchHost)
victim=$(scontrol show hostnames "$(job_field "$job" NodeList)" | grep -vxF "$batch" | head -n1)
[[ -n $victim ]] || fail "no second node in the job's NodeList"
t_kill=$(now)
echo "checkpoint $stage of every rank after $(secs "$t0" "$t_kill") s; losing $victim (batch host $batch)"
if [[ $case_ == nodefail ]]; then
  bash "$fixture_sh" kill-node "$fixture" "$victim" || fail "kill-node $victim"
else
  bash "$fixture_sh" kill-tasks "$fixture" "$victim" || fail "kill-tasks $victim"
fi
# A lost node is DOWN after SlurmdTimeout and Slurm's ping cycle (~30 s here), then the job is
# requeued; killed ranks end the step at once.
limit=180
[[ $case_ == rankkill ]] && limit=60
state=$(wait_state "$job" "PENDING REQUEUED REQUEUE_HOLD COMPLETED FAILED CANCELLED NODE_FAIL" $limit)
t_out=$(now)
echo "job $job left RUNNING $(secs "$t_kill" "$t_out") s after the kill: $state, Restarts=$(job_field "$job" Restarts), Reason=$(job_field "$job" Reason)"
[[ $state == RUNNING ]] && { cat "job-$job.out"; fail "still RUNNING ${limit} s after $victim's ranks were killed"; }
# rankkill: the script requeued its job (PENDING, or REQUEUED for a moment) with Restarts=1.
[[ $case_ == rankkill && $state == FAILED ]] && { cat "job-$job.out"; fail "FAILED: the script did not requeue its job"; }
# Requeued: PENDING (held back by Slurm until BeginTime) with Restarts >= 1; the rankkill job
# may already run again (the hold is 10 s).
state=$(wait_state "$job" "PENDING RUNNING COMPLETED FAILED CANCELLED" 60)
[[ ($state == PENDING || ($case_ == rankkill && $state == RUNNING)) && $(job_field "$job" Restarts) -ge 1 ]] ||
  { cat "job-$job.out"; fail "not requeued: JobState=$state Restarts=$(job_field "$job" Restarts)"; }
if [[ $case_ == nodefail ]]; then
  bash "$fixture_sh" restart-node "$fixture" "$victim" || fail "restart-node $victim"
  # Seen once: the job allocated within a second of the node's return found it IDLE with its
  # CPUs allocated, and its step was refused for ever ("Requested nodes are busy"); slurmctld
  # pings a node every SlurmdTimeout/3 s (3 s here): let one ping pass first.
  sleep 4
fi
t_back=$(now)
# Past Slurm's hold of a requeued job (BeginTime, cred_expire: 10 s in the fixture); the rankkill
# job starts by itself.
[[ $case_ == nodefail && $(job_field "$job" JobState) == PENDING ]] && scontrol update JobId="$job" StartTime=now
state=$(wait_state "$job" "COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL" 300)
t_end=$(now)
echo "job $job: $state, Restarts=$(job_field "$job" Restarts); let start $(secs "$t_kill" "$t_back") s after the kill, rerun $(secs "$t_back" "$t_end") s"
echo "----- job output (both starts)"
grep -v '^\[qmlpipe\] fisher_run: [0-9]' "job-$job.out"
echo "-----"
if [[ -e $fixture/db ]]; then
  sacct -j "$job" --duplicates --parsable2 -o JobID,State,ExitCode,Start,End,NodeList 2>&1
fi
[[ $state == COMPLETED ]] || fail "JobState=$state"
grep -q "continuing after" "job-$job.out" || fail "the requeued job did not resume from the checkpoint"
if [[ $case_ == rankkill ]]; then
  grep -q "srun ended with status 137 .*requeueing it (restart 1 of at most 2)" "job-$job.out" ||
    fail "the script did not say it requeued its job after status 137"
  [[ $(job_field "$job" Restarts) == 1 ]] || fail "Restarts=$(job_field "$job" Restarts), expected 1"
fi
results=ex/results-$job.h5
[[ -r $results ]] || fail "no results file $results"
"$python" "$src/tests/slurm/compare_results.py" "$ref" "$results" 0 ||
  fail "results differ from the uninterrupted run's"
compgen -G "ck/stage-*" >/dev/null && fail "checkpoints left in ck/"
echo "test_nodes[$case_]: ok"
