#!/bin/bash
# A throw-away Slurm cluster on loopback for the tests (label `slurm`, docs/slurm.md):
#   slurm_fixture.sh start DIR [--no-db]   munge, (MariaDB, slurmdbd,) slurmctld, slurmd; waits for an idle node
#   slurm_fixture.sh stop DIR              stops exactly what `start DIR` started
#   slurm_fixture.sh status DIR            the daemons it started and whether they live, then sinfo
# Client commands use the cluster through SLURM_CONF=DIR/slurm.conf (`env.sh` in DIR sets it).
#
# Runs as root, installs nothing: without slurmctld/slurmd/munged (Debian: slurm-wlm, munge) it
# says what is missing and exits 77 (CTest's skip code); the accounting database (slurmdbd,
# MariaDB: Debian slurmdbd, mariadb-server; needed for `sacct` after a job) likewise, unless
# --no-db. Memory is enforced by cgroup v1 (task/cgroup, ConstrainRAMSpace=yes) where
# /sys/fs/cgroup/memory is a v1 hierarchy; elsewhere by polling (jobacct_gather/linux,
# OverMemoryKill), which DIR/mode records.
#
# Every daemon runs in the foreground of a background job of this script; its PID and start time
# (/proc/PID/stat field 22) go to DIR/pids, and `stop` signals a PID only while both still
# match, so it never signals a process it did not start even if a PID is reused. Job processes
# left behind by slurmd (slurmstepd and the tasks) are found in the slurm cgroups and signalled
# only when their environment names this DIR's slurm.conf. The slurm cgroup directories that
# did not exist before `start` are removed by `stop`.
# Ports: the first free block of four from $QP_SLURM_PORT_BASE (default 16817), so that two
# fixtures (two worktrees) on one machine do not collide. Bounded waits:
# $QP_SLURM_START_TIMEOUT (default 60 s) for the idle node, 10 s per daemon at stop.
set -uo pipefail

usage="usage: slurm_fixture.sh start|stop|status DIR [--no-db]"
cmd=${1:-}
dir_arg=${2:-}
[[ -n $cmd && -n $dir_arg ]] || { echo "$usage" >&2; exit 2; }
shift 2
want_db=1
for a in "$@"; do
  case $a in
    --no-db) want_db=0 ;;
    --db) want_db=1 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
D=$(realpath -m -- "$dir_arg")
marker=$D/.qp-slurm-fixture
node=localhost
start_timeout=${QP_SLURM_START_TIMEOUT:-60}

log() { printf 'slurm_fixture: %s\n' "$*" >&2; }

now() { date +%s.%N; }

# The start time of a process (clock ticks since boot), empty when there is none.
start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  # after "comm) " the fields begin with field 3 (state); field 22 is the 20th of these
  awk '{print $20}' <<<"$stat"
}

# Whether PID is still the process recorded with start time ST.
is_ours() {
  local pid=$1 st=$2 cur
  cur=$(start_time "$pid")
  [[ -n $cur && $cur == "$st" ]]
}

record() {  # record NAME PID
  local st
  st=$(start_time "$2")
  printf '%s %s %s\n' "$1" "$2" "${st:-0}" >>"$D/pids"
}

# Send TERM to the recorded daemons named, wait up to $2 s, then KILL those still there.
stop_daemons() {
  local names=$1 wait_s=$2 name pid st deadline alive
  local -a mine=()
  [[ -r $D/pids ]] || return 0
  while read -r name pid st; do
    [[ " $names " == *" $name "* ]] || continue
    if is_ours "$pid" "$st"; then
      kill -TERM "$pid" 2>/dev/null && mine+=("$pid:$st:$name")
    fi
  done <"$D/pids"
  ((${#mine[@]})) || return 0
  deadline=$(($(date +%s) + wait_s))
  while :; do
    alive=()
    for e in "${mine[@]}"; do
      IFS=: read -r pid st name <<<"$e"
      is_ours "$pid" "$st" && alive+=("$e")
    done
    ((${#alive[@]})) || return 0
    if (($(date +%s) >= deadline)); then
      for e in "${alive[@]}"; do
        IFS=: read -r pid st name <<<"$e"
        log "$name ($pid) still running after ${wait_s} s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null
      done
      sleep 0.5
      return 0
    fi
    sleep 0.2
  done
}

# The processes in slurm cgroups whose environment names this fixture's slurm.conf
# (slurmstepd and the job's tasks, started by our slurmd).
job_processes() {
  local f pid
  shopt -s nullglob globstar
  for f in /sys/fs/cgroup/*/slurm_*/**/cgroup.procs /sys/fs/cgroup/*/slurm/**/cgroup.procs; do
    while read -r pid; do
      [[ -n $pid ]] || continue
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$D/slurm.conf"; then
        echo "$pid"
      fi
    done <"$f"
  done | sort -u
  shopt -u nullglob globstar
}

tails() {
  local f
  for f in "$D"/log/*; do
    [[ -f $f ]] || continue
    echo "----- tail of $f" >&2
    tail -n 25 "$f" >&2
  done
}

do_stop() {
  local t0 pids p
  t0=$(now)
  [[ -e $marker ]] || { log "$D is not a fixture directory (no $marker); nothing to stop"; return 0; }
  export SLURM_CONF=$D/slurm.conf
  # Jobs first, so that slurmstepd ends cleanly while slurmctld and slurmd still run.
  if [[ -r $D/pids ]] && command -v scancel >/dev/null 2>&1; then
    timeout 5 scancel --quiet --full --user=root >/dev/null 2>&1 || true
  fi
  stop_daemons "slurmd" 10
  stop_daemons "slurmctld" 10
  # Job processes that outlived slurmd (e.g. after a KILL): only those of this fixture.
  pids=$(job_processes)
  if [[ -n $pids ]]; then
    log "job processes left behind: ${pids//$'\n'/ }; SIGKILL"
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.5
  fi
  stop_daemons "slurmdbd" 10
  stop_daemons "mariadbd" 20
  stop_daemons "munged" 10
  # The slurm cgroup directories created while this fixture ran (deepest first; rmdir only
  # removes empty cgroups, so one still in use elsewhere stays).
  if [[ -r $D/cgroups-before ]]; then
    local c
    shopt -s nullglob
    for c in /sys/fs/cgroup/*/slurm*; do
      [[ -d $c ]] || continue
      grep -qxF "$c" "$D/cgroups-before" && continue
      find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
      [[ -d $c ]] && log "could not remove $c (not empty)"
    done
    shopt -u nullglob
  fi
  mv -f "$D/pids" "$D/pids.stopped" 2>/dev/null
  rm -f "$D/ready"
  log "stopped in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}') s"
}

do_status() {
  local name pid st rc=0
  [[ -r $D/pids ]] || { echo "no fixture running in $D"; return 3; }
  while read -r name pid st; do
    if is_ours "$pid" "$st"; then echo "$name $pid running"; else echo "$name $pid gone"; rc=3; fi
  done <"$D/pids"
  SLURM_CONF=$D/slurm.conf timeout 5 sinfo -N 2>&1
  return $rc
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The first base (stepping by 10) whose four ports are all free.
pick_ports() {
  local base=${QP_SLURM_PORT_BASE:-16817} i ok
  for ((; base < 60000; base += 10)); do
    ok=1
    for i in 0 1 2 3; do port_free $((base + i)) || { ok=0; break; }; done
    ((ok)) && { echo "$base"; return 0; }
  done
  return 1
}

fail_start() {
  log "start failed: $*"
  tails
  do_stop
  exit 1
}

# Wait until CMD succeeds (bounded); CMD is a string.
wait_for() {
  local what=$1 limit=$2 check=$3 deadline
  deadline=$(($(date +%s) + limit))
  until eval "$check" >/dev/null 2>&1; do
    (($(date +%s) >= deadline)) && fail_start "$what not ready after ${limit} s"
    sleep 0.2
  done
}

daemon_alive() {  # daemon_alive NAME: the recorded process of that name still runs
  local name pid st
  while read -r name pid st; do
    [[ $name == "$1" ]] && is_ours "$pid" "$st" && return 0
  done <"$D/pids"
  return 1
}

do_start() {
  local missing=() c t0
  t0=$(now)
  if [[ $(id -u) != 0 ]]; then
    echo "slurm_fixture: needs root (cgroups, slurmd); skipped" >&2
    exit 77
  fi
  for c in munged mungekey slurmctld slurmd sinfo sbatch scontrol scancel srun setpriv; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  if ((want_db)); then
    for c in slurmdbd sacctmgr sacct mariadbd mariadb-install-db mariadb; do
      command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
  fi
  if ((${#missing[@]})); then
    echo "slurm_fixture: missing: ${missing[*]}" >&2
    echo "  install: apt-get install slurm-wlm munge$( ((want_db)) && echo ' slurmdbd mariadb-server') (or start with --no-db)" >&2
    exit 77
  fi
  if [[ -e $D ]]; then
    if [[ -e $marker ]]; then
      [[ -e $D/pids ]] && { log "a fixture is recorded in $D: stopping it first"; do_stop; }
      rm -rf -- "$D"
    elif [[ -n $(ls -A -- "$D") ]]; then
      log "$D exists, is not empty and is not a fixture directory; refusing to use it"
      exit 2
    fi
  fi
  mkdir -p "$D"/{munge,state,spool,log,peaks} || exit 1
  : >"$marker"
  : >"$D/pids"
  export SLURM_CONF=$D/slurm.conf

  local mode=linux
  if [[ -d /sys/fs/cgroup/memory && -w /sys/fs/cgroup/memory && -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
    mode=cgroup
  else
    log "no writable cgroup v1 memory hierarchy: memory enforced by polling (jobacct_gather/linux, OverMemoryKill)"
  fi
  echo "$mode" >"$D/mode"
  ls -d /sys/fs/cgroup/*/slurm* 2>/dev/null >"$D/cgroups-before"

  local base
  base=$(pick_ports) || fail_start "no free ports"
  local ctld_port=$base slurmd_port=$((base + 1)) dbd_port=$((base + 2)) db_port=$((base + 3))
  echo "$base" >"$D/ports"

  # munge: own key and socket; the socket directory owned by munge, mode 0711.
  chown munge:munge "$D/munge" && chmod 0711 "$D/munge"
  setpriv --reuid=munge --regid=munge --init-groups mungekey -c -k "$D/munge/munge.key" \
    >"$D/log/mungekey.log" 2>&1 || fail_start "mungekey"
  setpriv --reuid=munge --regid=munge --init-groups munged -F --socket="$D/munge/munge.socket" \
    --key-file="$D/munge/munge.key" --pid-file="$D/munge/munged.pid" \
    --seed-file="$D/munge/munge.seed" --log-file="$D/log/munged.log" >/dev/null 2>&1 </dev/null &
  record munged $!
  wait_for munged 15 "[[ -S '$D/munge/munge.socket' ]]"

  local cpus mem
  cpus=$(nproc)
  mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -n1)
  [[ -n $mem ]] || mem=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)

  local proctrack=proctrack/cgroup task=task/cgroup gather=jobacct_gather/cgroup extra="TaskEpilog=$D/taskepilog.sh"
  if [[ $mode == linux ]]; then
    proctrack=proctrack/linuxproc task=task/none gather=jobacct_gather/linux
    extra="JobAcctGatherParams=OverMemoryKill"
  fi
  local acct="AccountingStorageType=accounting_storage/none"
  if ((want_db)); then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbd_port
AccountingStoragePass=$D/munge/munge.socket"
  fi
  cat >"$D/slurm.conf" <<EOF
# written by tests/slurm/slurm_fixture.sh
ClusterName=qpci
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
# Job ids from the port base: two fixtures at once (two worktrees) share the node's cgroup
# tree (slurm_localhost), and equal job ids there would mix their jobs' cgroups.
FirstJobId=$((base * 10))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=$proctrack
TaskPlugin=$task
JobAcctGatherType=$gather
JobAcctGatherFrequency=1
$extra
$acct
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
MinJobAge=300
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$D/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
EOF
  # The job cgroup's peak (includes page cache), one line per task end: job step peak_bytes.
  cat >"$D/taskepilog.sh" <<EOF
#!/bin/sh
for f in /sys/fs/cgroup/memory/slurm_*/uid_*/job_\${SLURM_JOB_ID}/memory.max_usage_in_bytes \\
         /sys/fs/cgroup/memory/slurm/uid_*/job_\${SLURM_JOB_ID}/memory.max_usage_in_bytes; do
  [ -r "\$f" ] && echo "\${SLURM_JOB_ID} \${SLURM_STEP_ID:-${SLURM_STEPID:-?}} \$(cat "\$f")" >>"$D/peaks/\${SLURM_JOB_ID}"
done
exit 0
EOF
  chmod 755 "$D/taskepilog.sh"

  if ((want_db)); then
    mkdir -p "$D/mysql/data"
    mariadb-install-db --no-defaults --user=root --datadir="$D/mysql/data" --skip-test-db \
      >"$D/log/mariadb-install.log" 2>&1 || fail_start "mariadb-install-db"
    mariadbd --no-defaults --user=root --datadir="$D/mysql/data" --socket="$D/mysql/mysql.sock" \
      --pid-file="$D/mysql/mariadbd.pid" --log-error="$D/log/mariadb.log" \
      --bind-address=127.0.0.1 --port="$db_port" --skip-log-bin >/dev/null 2>&1 </dev/null &
    record mariadbd $!
    wait_for MariaDB 60 "mariadb --no-defaults -S '$D/mysql/mysql.sock' -u root -e 'select 1'"
    mariadb --no-defaults -S "$D/mysql/mysql.sock" -u root -e \
      "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'qpci'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
      >>"$D/log/mariadb-install.log" 2>&1 || fail_start "creating the slurm database user"
    # slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF (mode 600).
    (umask 077; cat >"$D/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$D/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=qpci
StorageLoc=slurm_acct_db
EOF
    )
    slurmdbd -D >/dev/null 2>&1 </dev/null &
    record slurmdbd $!
    # The cluster must exist in the database before slurmctld first starts.
    wait_for slurmdbd 30 "daemon_alive slurmdbd && sacctmgr -i add cluster qpci"
    sacctmgr -n list cluster format=cluster 2>/dev/null | grep -qw qpci || fail_start "sacctmgr add cluster"
  fi

  slurmctld -D -i -f "$D/slurm.conf" >/dev/null 2>&1 </dev/null &
  record slurmctld $!
  slurmd -D -N "$node" -f "$D/slurm.conf" >/dev/null 2>&1 </dev/null &
  record slurmd $!

  local deadline state
  deadline=$(($(date +%s) + start_timeout))
  while :; do
    state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -n1)
    [[ $state == idle ]] && break
    for c in munged slurmctld slurmd; do
      daemon_alive "$c" || fail_start "$c exited"
    done
    (($(date +%s) >= deadline)) && fail_start "node not idle after ${start_timeout} s (state '${state}')"
    sleep 0.2
  done
  cat >"$D/env.sh" <<EOF
export SLURM_CONF=$D/slurm.conf
EOF
  : >"$D/ready"
  ((want_db)) && : >"$D/db"
  log "up in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}') s: $D (mode $mode, db $( ((want_db)) && echo yes || echo no), ports $base-$((base + 3)))"
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
