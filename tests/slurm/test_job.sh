#!/bin/bash
# One real-Slurm test on the fixture of slurm_fixture.sh (docs/slurm.md).
#   test_job.sh CASE FIXTURE_DIR QMLPIPE SOURCE_DIR WORK_DIR
# CASE:
#   cpu    jobs/qmlpipe-cpu.sbatch on the built-in example, one task, --mem = the budget's
#          "with overhead" + 25% + 64 MiB; the job must be COMPLETED and its results equal a
#          direct `qmlpipe run` (/fisher, /spectra/cl: all finite, rel. diff <= 1e-12; a Fisher
#          entry's at least against sqrt(F_ii F_jj): compare_results.py)
#   mpi    jobs/qmlpipe-mpi.sbatch, -n 2 (srun --mpi=pmix), the same checks, and
#          QMLPIPE_RUN_ARGS='--grid 2x1 --block 32' honoured (the results' /budget/ranks)
#   mem70  jobs/qmlpipe-cpu.sbatch with --mem at 70% of the budget's peak and no
#          memory.host_limit in the config: qmlpipe must chunk (COMPLETED) or refuse (exit 4),
#          never be killed by the cgroup (OUT_OF_MEMORY).
#   gen1   the script that `qmlpipe plan ex/config.yaml --sbatch job.sh` writes, submitted as
#          it is (its --mem, -n, -c); COMPLETED in every sacct step, results equal a direct
#          run's, and `qmlpipe validate RESULTS --sacct <its sacct> --cgroup-peak <its
#          TaskEpilog peaks> --tolerance 0.05` passes, judging by the gather type the run
#          recorded (the fixture's; no --sacct-gather)
#   gen2   the same with `plan ... --ranks 2 --ranks-per-node 2 --sbatch job.sh` (srun
#          --mpi=pmix, 2 ranks), validate at --tolerance 0.05 too (sacct's MaxRSS counts
#          anonymous memory only, the node's cgroup the ranks' shared pages once: both
#          accounted for by `validate --sacct`, docs/slurm.md "What sacct measures")
#   requeue a job submitted with --requeue that runs `qmlpipe run --checkpoint ck --resume`
#          (one thread) is requeued with `scontrol requeue` once its first checkpoint is
#          written (Slurm kills it: SIGTERM, then SIGKILL); the requeued job resumes after the
#          last checkpoint ("continuing after" in its log), ends COMPLETED with Restarts >= 1,
#          its results are the same values as a direct one-thread run's, and no checkpoint is
#          left
# Exit 77 (skip) when the fixture is not up.
set -uo pipefail
case_=${1:?case}
fixture=${2:?fixture dir}
qmlpipe=${3:?qmlpipe}
src=${4:?source dir}
work=${5:?work dir}

if [[ ! -e $fixture/ready ]]; then
  echo "test_job: the Slurm fixture is not up in $fixture (see the slurm_fixture_start test); skipped"
  exit 77
fi
export SLURM_CONF=$fixture/slurm.conf
export QMLPIPE=$qmlpipe
python=/usr/bin/python3
fail() { echo "test_job[$case_]: FAIL: $*"; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }

rm -rf -- "$work"
mkdir -p "$work" && cd "$work" || exit 1
"$qmlpipe" simulate --example ex --cls "$src/data/cls_planck2015_lcdm.txt" >/dev/null || fail "simulate"
if [[ $case_ == mem70 ]]; then
  # No host_limit: the only limit is the job's cgroup.
  sed -i '/^memory:/d' ex/config.yaml
  grep -q host_limit ex/config.yaml && fail "could not remove host_limit"
fi
peak=$("$qmlpipe" budget ex/config.yaml 2>/dev/null | awk '/with overhead/ {print $(NF-1)}')
[[ $peak =~ ^[0-9]+$ ]] || fail "no 'with overhead' figure from qmlpipe budget"
mib=$((1024 * 1024))
case $case_ in
  mem70) mem=$((peak * 7 / 10 / mib)) ;;
  mpi) mem=$(((peak * 2 * 5 / 4 + mib - 1) / mib + 128)) ;;  # two ranks on the node
  *) mem=$(((peak * 5 / 4 + mib - 1) / mib + 64)) ;;
esac
echo "budget with overhead: $peak B ($((peak / mib)) MiB); sbatch --mem=${mem}M"

if [[ $case_ != mem70 ]]; then
  t0=$(now)
  if [[ $case_ == mpi || $case_ == gen1 || $case_ == gen2 || $case_ == requeue ]]; then  # one thread
    OMP_NUM_THREADS=1 "$qmlpipe" run ex/config.yaml --output direct.h5 >direct.log 2>&1 || fail "direct run (direct.log)"
  else
    "$qmlpipe" run ex/config.yaml --output direct.h5 >direct.log 2>&1 || fail "direct run (direct.log)"
  fi
  echo "direct run: $(secs "$t0" "$(now)") s"
fi

if [[ $case_ == requeue ]]; then
  # The same script for the first start and the requeued one: --resume with no checkpoint in
  # ck starts from the first stage. The log is appended to, so both starts show in it.
  cat >requeue.sbatch <<EOF
#!/bin/bash
echo "job \$SLURM_JOB_ID start \${SLURM_RESTART_COUNT:-0}"
export OMP_NUM_THREADS=1
exec "$qmlpipe" run ex/config.yaml --output slurm.h5 --checkpoint ck --resume
EOF
  t0=$(now)
  job=$(sbatch --parsable --requeue --open-mode=append --mem="${mem}M" -c 1 --time=10 \
    -o "$work/job-%j.out" requeue.sbatch)
  job=${job%%;*}
  [[ -n $job ]] || fail "no job id from sbatch"
  # One listing, kept: a second look after the first found a file once came back empty (the
  # directory changes under the job: a stage's file is renamed in, the older one unlinked).
  first=
  for _ in $(seq 1 600); do
    first=$(compgen -G "ck/stage-*.rank0.h5" | tr '\n' ' ')
    [[ -n $first ]] && break
    sleep 0.2
  done
  [[ -n $first ]] || fail "no checkpoint written in 120 s (job-$job.out)"
  scontrol requeue "$job" || fail "scontrol requeue $job"
  echo "requeued job $job after $(secs "$t0" "$(now)") s, checkpoints then: $first"
  # Slurm holds a requeued job back (BeginTime, ~2 min here); once it is pending again, let it
  # start now.
  for _ in $(seq 1 300); do
    scontrol show job "$job" 2>/dev/null | grep -q "JobState=PENDING" &&
      scontrol update JobId="$job" StartTime=now 2>/dev/null && break
    sleep 0.2
  done
  state=
  for _ in $(seq 1 1500); do
    state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED || $state == TIMEOUT ]] && break
    sleep 0.2
  done
  restarts=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
  echo "job $job: JobState=$state Restarts=$restarts after $(secs "$t0" "$(now)") s"
  echo "----- job output (both starts)"
  cat "$work/job-$job.out" 2>/dev/null
  echo "-----"
  [[ $state == COMPLETED ]] || fail "JobState=$state"
  [[ ${restarts:-0} -ge 1 ]] || fail "the job was not restarted (Restarts=$restarts)"
  grep -q "continuing after" "$work/job-$job.out" || fail "the requeued job did not resume"
  [[ -r slurm.h5 ]] || fail "no results file slurm.h5"
  "$python" "$src/tests/slurm/compare_results.py" direct.h5 slurm.h5 0 ||
    fail "results differ from the direct run"
  compgen -G "ck/stage-*" >/dev/null && fail "checkpoints left in ck/"
  echo "test_job[$case_]: ok"
  exit 0
fi

script=$src/jobs/qmlpipe-cpu.sbatch
shape=(-c "$(nproc)")
if [[ $case_ == mpi ]]; then
  script=$src/jobs/qmlpipe-mpi.sbatch
  shape=(-N 1 -n 2 --ntasks-per-node=2 -c 1)
fi
tolerance=0.05
if [[ $case_ == gen1 || $case_ == gen2 ]]; then
  plan_args=()
  [[ $case_ == gen2 ]] && plan_args=(--ranks 2 --ranks-per-node 2)
  "$qmlpipe" plan ex/config.yaml "${plan_args[@]}" --sbatch job.sh >plan.log 2>&1 || fail "qmlpipe plan --sbatch (plan.log)"
  echo "----- generated job.sh (#SBATCH lines)"
  grep '^#SBATCH\|srun' job.sh
  ntasks=$(sed -n 's/^#SBATCH --ntasks=//p' job.sh); ntasks=${ntasks:-1}
  cpus=$(sed -n 's/^#SBATCH --cpus-per-task=//p' job.sh); cpus=${cpus:-1}
  shape=()  # as generated, unless it asks for more cores than this machine has
  ((ntasks * cpus > $(nproc))) && shape=(-c 1) && echo "job shape overridden: -c 1 (asks for $ntasks x $cpus cores)"
  t0=$(now)
  job=$(sbatch --parsable --wait "${shape[@]}" -o "$work/job-%j.out" job.sh)
  rc=$?
  job=${job%%;*}
  results=ex/results-$job.h5
else
  # jobs/qmlpipe-mpi.sbatch passes QMLPIPE_RUN_ARGS to `run`: a grid other than the squarest
  # (1x2), checked in the results below.
  [[ $case_ == mpi ]] && export QMLPIPE_RUN_ARGS='--grid 2x1 --block 32'
  t0=$(now)
  job=$(sbatch --parsable --wait --mem="${mem}M" "${shape[@]}" --time=10 -o "$work/job-%j.out" \
    "$script" ex/config.yaml slurm-%j.h5)
  rc=$?
  job=${job%%;*}
  results=slurm-$job.h5
fi
echo "sbatch --wait: exit $rc, job $job, $(secs "$t0" "$(now)") s"
[[ -n $job ]] || fail "no job id from sbatch"
echo "----- job output"
cat "$work/job-$job.out" 2>/dev/null
echo "-----"
state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
exitcode=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' | head -n1)
echo "scontrol: JobState=$state ExitCode=$exitcode"

if [[ -e $fixture/db ]]; then
  # The accounting record lags the job's end by a moment; MaxRSS is 0/empty for jobs < 1 s.
  for _ in $(seq 1 50); do
    acct=$(sacct -n -P --noconvert -j "$job" -o JobID,State,ExitCode,MaxRSS 2>/dev/null)
    grep -q "^$job.batch|[A-Z]" <<<"$acct" && ! grep -q "RUNNING\|PENDING" <<<"$acct" && break
    sleep 0.2
  done
  echo "sacct (JobID|State|ExitCode|MaxRSS bytes):"
  echo "$acct"
  sacct -j "$job" --parsable2 --noconvert \
    -o JobID,JobName,State,ExitCode,MaxRSS,MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem >sacct.txt 2>&1
fi
if [[ -r $fixture/peaks/$job ]]; then
  echo "job cgroup peak (TaskEpilog, memory.max_usage_in_bytes; job step bytes):"
  cat "$fixture/peaks/$job"
fi

if [[ $case_ == mem70 ]]; then
  [[ $state == OUT_OF_MEMORY ]] && fail "the job was killed by its cgroup (OUT_OF_MEMORY); qmlpipe should have chunked or refused"
  [[ ${acct:-} == *OUT_OF_ME* ]] && fail "a step was killed by its cgroup (sacct OUT_OF_MEMORY)"
  if [[ $state == COMPLETED ]]; then
    echo "test_job[mem70]: completed inside --mem (chunked)"; exit 0
  fi
  [[ $exitcode == 4:0 ]] && { echo "test_job[mem70]: refused (exit 4)"; exit 0; }
  fail "JobState=$state ExitCode=$exitcode: neither completed nor refused with exit 4"
fi

[[ $rc == 0 ]] || fail "sbatch --wait exit $rc"
[[ $state == COMPLETED ]] || fail "JobState=$state"
[[ $exitcode == 0:0 ]] || fail "ExitCode=$exitcode"
if [[ -n ${acct:-} ]]; then
  grep -v '|COMPLETED|0:0|' <<<"$acct" | grep -q . && fail "sacct: a step did not complete"
fi
[[ -r $results ]] || fail "no results file $results"
"$python" "$src/tests/slurm/compare_results.py" direct.h5 "$results" 1e-12 || fail "results differ from the direct run"
if [[ $case_ == mpi ]]; then
  grid=$("$python" -c 'import sys, h5py; r = h5py.File(sys.argv[1], "r")["budget/ranks"].attrs; print("%dx%d/%d" % (r["grid_rows"], r["grid_cols"], r["block"]))' "$results")
  [[ $grid == 2x1/32 ]] || fail "QMLPIPE_RUN_ARGS='--grid 2x1 --block 32' not honoured: grid $grid"
  echo "grid from QMLPIPE_RUN_ARGS: $grid"
fi
if [[ $case_ == gen1 || $case_ == gen2 ]]; then
  [[ -s sacct.txt ]] || fail "no sacct output (the fixture runs without the database?)"
  cg=()
  [[ -r $fixture/peaks/$job ]] && { cp "$fixture/peaks/$job" peaks.txt; cg=(--cgroup-peak peaks.txt); }
  # No --sacct-gather: the run recorded the job's JobAcctGatherType (/budget
  # slurm_jobacct_gather), which validate must use and name.
  "$qmlpipe" validate "$results" --sacct sacct.txt "${cg[@]}" \
    --tolerance "$tolerance" >validate.log 2>&1
  vrc=$?
  sed -n '/^job /,$p' validate.log
  grep -qF "gather type: jobacct_gather/$(cat "$fixture/gather") (recorded by the run" validate.log ||
    { cat validate.log; fail "validate did not take the gather type the run recorded"; }
  [[ $vrc == 0 ]] || { cat validate.log; fail "qmlpipe validate --sacct --tolerance $tolerance: exit $vrc"; }
fi
echo "test_job[$case_]: ok"
