#!/bin/bash
# check_sbatch.sh QMLPIPE SOURCE_DIR HAVE_MPI: the Slurm job scripts jobs/*.sbatch.
#  1. bash -n, and shellcheck when it is installed;
#  2. each script run as Slurm would run it, without Slurm: from a working directory that is
#     not the submission directory, SLURM_* variables set, and an `srun` stand-in that records
#     its --mpi and starts the command (one process for --mpi=none, else SLURM_NTASKS ranks
#     under Open MPI's mpiexec when present). Checked: the paths given relative to the
#     submission directory, the '%j' output pattern, the single-process job's --mpi=none, the
#     ranks from SLURM_NTASKS with -n only, the report step; and with a build without MPI, the
#     MPI job refused (exit 9) rather than run as independent copies.
set -euo pipefail
qmlpipe=$1 src=$2 have_mpi=$3
fail=0
for f in "$src"/jobs/*.sbatch; do
  bash -n "$f" || { echo "FAIL: bash -n $f"; fail=1; }
  if command -v shellcheck >/dev/null 2>&1; then
    shellcheck "$f" || { echo "FAIL: shellcheck $f"; fail=1; }
  else
    echo "shellcheck not installed: only bash -n for $f"
  fi
done

work=$PWD/sbatch_check.d
rm -rf "$work" && mkdir -p "$work/submit/mc" "$work/bin" "$work/elsewhere"
cat > "$work/bin/srun" <<'SRUN'
#!/bin/bash
# srun stand-in: records --mpi, then starts the command.
mpi=
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in --mpi=*) mpi=${1#--mpi=} ;; esac
  shift
done
echo "--mpi=$mpi ntasks=${SLURM_NTASKS:-}" >> "$FAKE_SRUN_LOG"
if [[ $mpi == none ]]; then exec "$@"; fi
# Open MPI's mpiexec must not take the SLURM_* variables for an allocation to launch into.
unset_slurm=()
for v in $(compgen -e | grep '^SLURM_' || true); do unset_slurm+=(-u "$v"); done
exec env "${unset_slurm[@]}" mpiexec -n "$SLURM_NTASKS" --oversubscribe --allow-run-as-root \
  -x OMP_NUM_THREADS=1 "$@"
SRUN
chmod +x "$work/bin/srun"
export FAKE_SRUN_LOG=$work/srun.log PATH=$work/bin:$PATH QMLPIPE=$qmlpipe
"$qmlpipe" simulate --example "$work/submit/ex" --cls "$src/data/cls_planck2015_lcdm.txt" > /dev/null

# The single-process job: config and output relative to the submission directory.
if (cd "$work/elsewhere" && SLURM_SUBMIT_DIR=$work/submit SLURM_JOB_ID=123 SLURM_NTASKS=1 \
    SLURM_CPUS_PER_TASK=1 bash "$src/jobs/qmlpipe-cpu.sbatch" ex/config.yaml 'mc/r-%j.h5' \
    > "$work/cpu.out" 2>&1); then
  [[ -f $work/submit/mc/r-123.h5 ]] || { echo "FAIL: cpu job did not write mc/r-123.h5"; fail=1; }
  [[ ! -e $work/submit/ex/results.h5 ]] || { echo "FAIL: cpu job wrote the config's output"; fail=1; }
  grep -q -- '--mpi=none' "$FAKE_SRUN_LOG" || { echo "FAIL: cpu job's srun lacks --mpi=none"; fail=1; }
  grep -q 'memory report: .*mc/r-123.h5' "$work/cpu.out" || { echo "FAIL: cpu job's report"; fail=1; }
else
  echo "FAIL: the cpu job failed:"; cat "$work/cpu.out"; fail=1
fi
# Without OUTPUT: the config's output, reported through the config.
if (cd "$work/elsewhere" && SLURM_SUBMIT_DIR=$work/submit SLURM_JOB_ID=124 SLURM_NTASKS=1 \
    bash "$src/jobs/qmlpipe-cpu.sbatch" ex/config.yaml > "$work/cpu2.out" 2>&1); then
  grep -q 'memory report: .*ex/results.h5' "$work/cpu2.out" || { echo "FAIL: cpu job's report of the config"; fail=1; }
else
  echo "FAIL: the cpu job without OUTPUT failed:"; cat "$work/cpu2.out"; fail=1
fi

# The MPI job asked for with -n 2 only (no SLURM_NTASKS_PER_NODE).
if command -v mpiexec >/dev/null 2>&1; then
  set +e
  (cd "$work/elsewhere" && SLURM_SUBMIT_DIR=$work/submit SLURM_JOB_ID=125 SLURM_NTASKS=2 \
    SLURM_NNODES=1 SLURM_CPUS_PER_TASK=1 bash "$src/jobs/qmlpipe-mpi.sbatch" ex/config.yaml \
    'mc/r-%j.h5' > "$work/mpi.out" 2>&1)
  status=$?
  set -e
  grep -q -- '--mpi=pmix ntasks=2' "$FAKE_SRUN_LOG" || { echo "FAIL: mpi job's srun"; fail=1; }
  if [[ $have_mpi == 1 ]]; then
    [[ $status == 0 && -f $work/submit/mc/r-125.h5 ]] || { echo "FAIL: mpi job (status $status):"; cat "$work/mpi.out"; fail=1; }
    grep -q 'ranks' "$work/mpi.out" || { echo "FAIL: mpi job's per-rank report"; fail=1; }
  else
    # A build without MPI: every copy refuses, exit 9, nothing written.
    [[ $status == 9 && ! -e $work/submit/mc/r-125.h5 ]] || { echo "FAIL: mpi job of a build without MPI (status $status):"; cat "$work/mpi.out"; fail=1; }
    grep -q 'OMPI_COMM_WORLD_SIZE=2' "$work/mpi.out" || { echo "FAIL: the refusal does not name the variable"; cat "$work/mpi.out"; fail=1; }
    grep -q -- '-DQP_ENABLE_MPI=ON' "$work/mpi.out" || { echo "FAIL: the refusal does not say what to do"; fail=1; }
  fi
else
  echo "mpiexec not installed: the MPI job is not run"
fi
[[ $fail == 0 ]] && rm -rf "$work"
exit $fail
