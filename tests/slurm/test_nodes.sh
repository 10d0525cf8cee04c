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
#             `qmlpipe validate RESULTS --sacct --sacct-gather <the fixture's> --cgroup-peak
#             <TaskEpilog peaks> --tolerance 0.05` passes. The results are kept as
#             WORK_DIR/reference.h5: the uninterrupted run the other cases compare with.
#   nodefail  job.sh with `run --checkpoint ck --resume`, submitted with --requeue; once a
#             stage's checkpoint exists for every rank, the node that does not run the batch
#             script is lost (slurm_fixture.sh kill-node: its slurmd, slurmstepd and ranks
#             SIGKILLed). Slurm must requeue the job (Restarts >= 1); the node is restarted
#             (slurm_fixture.sh restart-node, which clears Slurm's leftovers), the job let start
#             at once (scontrol update StartTime=now); it must resume ("continuing after"), end
#             COMPLETED and give REFERENCE.h5's values exactly, leaving no checkpoint.
#   rankkill  the same, but only that node's ranks are killed (slurm_fixture.sh kill-tasks;
#             slurmstepd and slurmd live on): the whole job must end within 60 s (FAILED: srun
#             --kill-on-bad-exit=1 ends the step once one rank dies; without it the other
#             node's ranks wait in MPI until the time limit). A job whose script fails is not
#             requeued by Slurm (no node failed), so it is requeued as a user would (`scontrol
#             requeue`); it must resume, COMPLETE and give REFERENCE.h5's values exactly.
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
    # The accounting record lags the job's end by a moment.
    for _ in $(seq 1 50); do
      sacct -j "$job" --parsable2 --noconvert \
        -o JobID,JobName,State,ExitCode,MaxRSS,MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem >sacct.txt 2>&1
      grep -q "^$job.0|" sacct.txt && ! grep -q "RUNNING\|PENDING" sacct.txt && break
      sleep 0.2
    done
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
    "$qmlpipe" validate "$results" --sacct sacct.txt --sacct-gather "$(cat "$fixture/gather")" \
      --cgroup-peak peaks.txt --tolerance 0.05 >validate.log 2>&1
    vrc=$?
    sed -n '/^job /,$p' validate.log
    [[ $vrc == 0 ]] || { cat validate.log; fail "qmlpipe validate --sacct --tolerance 0.05: exit $vrc"; }
  fi
  cp "$results" reference.h5
  echo "test_nodes[$case_]: ok"
  exit 0
fi

[[ $case_ == nodefail || $case_ == rankkill ]] || fail "unknown case"
[[ -n $ref && -r $ref ]] || fail "no reference results '$ref' (the slurm_nodes_job test writes them)"
# The generated script, its run line checkpointing: a requeued start resumes after the last
# checkpoint (--resume with none starts from the first stage).
sed "s|--output \"\$results\"|--output \"\$results\" --checkpoint '$work/ck' --resume|" job.sh >ck.sh
grep -q -- "--checkpoint '$work/ck' --resume" ck.sh || fail "could not add --checkpoint to job.sh's run line"
t0=$(now)
job=$(sbatch --parsable --requeue --open-mode=append -o "$work/job-%j.out" ck.sh) || fail "sbatch ck.sh"
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
if [[ $case_ == rankkill ]]; then
  [[ $state == FAILED ]] || fail "JobState=$state after the ranks were killed, expected FAILED"
  # Requeued at once, the job started again while its first run's slurmstepd (of the same
  # step, JOB.0) still finished on the other node, and its step failed to launch ("Cannot
  # bind() UNIX socket .../stepd.slurm.pmix.JOB.0: Address already in use"): first wait until
  # every slurmstepd of the job has ended (their sockets NODE_JOB.STEP in the spool are gone).
  for _ in $(seq 1 300); do
    compgen -G "$fixture/spool/*/*_$job.*" >/dev/null || break
    sleep 0.2
  done
  scontrol requeue "$job" || fail "scontrol requeue $job"
fi
# Requeued: PENDING (held back by Slurm until BeginTime) with Restarts >= 1.
state=$(wait_state "$job" "PENDING COMPLETED FAILED CANCELLED" 60)
[[ $state == PENDING && $(job_field "$job" Restarts) -ge 1 ]] ||
  { cat "job-$job.out"; fail "not requeued: JobState=$state Restarts=$(job_field "$job" Restarts)"; }
if [[ $case_ == nodefail ]]; then
  bash "$fixture_sh" restart-node "$fixture" "$victim" || fail "restart-node $victim"
  # Seen once: the job allocated within a second of the node's return found it IDLE with its
  # CPUs allocated, and its step was refused for ever ("Requested nodes are busy"); slurmctld
  # pings a node every SlurmdTimeout/3 s (3 s here): let one ping pass first.
  sleep 4
fi
t_back=$(now)
# Past Slurm's hold of a requeued job (BeginTime, ~2 min).
[[ $(job_field "$job" JobState) == PENDING ]] && scontrol update JobId="$job" StartTime=now
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
results=ex/results-$job.h5
[[ -r $results ]] || fail "no results file $results"
"$python" "$src/tests/slurm/compare_results.py" "$ref" "$results" 0 ||
  fail "results differ from the uninterrupted run's"
compgen -G "ck/stage-*" >/dev/null && fail "checkpoints left in ck/"
echo "test_nodes[$case_]: ok"
