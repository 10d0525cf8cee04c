#!/bin/bash
# A throw-away Slurm cluster for the tests (label `slurm`, docs/slurm.md):
#   slurm_fixture.sh start DIR [--no-db] [--nodes N] [--gather linux|cgroup]
#                                          munge, (MariaDB, slurmdbd,) slurmctld and N compute
#                                          nodes (default 2); waits until all are idle
#   slurm_fixture.sh set-gather DIR linux|cgroup   JobAcctGatherType changed in slurm.conf,
#                                          slurmctld and every slurmd restarted (no job may run);
#                                          waits until the nodes are idle again
#   slurm_fixture.sh stop DIR              stops exactly what `start DIR` started
#   slurm_fixture.sh status DIR            the daemons it started and whether they live, then sinfo
#   slurm_fixture.sh kill-node DIR NODE    SIGKILL of NODE's slurmd, slurmstepd and tasks (a lost node)
#   slurm_fixture.sh kill-tasks DIR NODE   SIGKILL of NODE's tasks (the ranks there; slurmstepd
#                                          and slurmd live on and report their end)
#   slurm_fixture.sh restart-node DIR NODE NODE's slurmd stopped if alive, its spool's PMIx
#                                          leftovers and its TmpFS cleared, slurmd started again; waits
#                                          until the node is back (not DOWN)
# Client commands use the cluster through SLURM_CONF=DIR/slurm.conf (`env.sh` in DIR sets it);
# DIR/nodes lists the compute nodes.
#
# Compute nodes (N >= 2, docs/slurm.md "Several nodes"): each is a slurmd in its own network,
# UTS and mount namespace (`ip netns add`, then nsenter + unshare), with its own hostname and an
# address on a bridge the fixture creates; slurmctld, slurmdbd, MariaDB and munge stay in the
# root namespace. Node names, namespaces, bridge, /24 subnet and FirstJobId all derive from the
# port base, so two fixtures run at once. Where `ip netns add` is refused (no CAP_NET_ADMIN),
# or with --nodes 1, one node `localhost` runs on loopback as before and DIR/nodes-why says why;
# the multi-node tests then skip (exit 77).
#
# Runs as root, installs nothing: without slurmctld/slurmd/munged (Debian: slurm-wlm, munge) it
# says what is missing and exits 77 (CTest's skip code); the accounting database (slurmdbd,
# MariaDB: Debian slurmdbd, mariadb-server; needed for `sacct` after a job) likewise, unless
# --no-db. Memory is enforced by cgroup v1 (task/cgroup, ConstrainRAMSpace=yes) where
# /sys/fs/cgroup/memory is a v1 hierarchy; elsewhere by polling (OverMemoryKill), which DIR/mode
# records. Accounting: jobacct_gather/linux (right per node and per task across nodes; Slurm
# 22.05's jobacct_gather/cgroup counts only the first node's tasks), recorded in DIR/gather;
# --gather cgroup or `set-gather` gives the other, for the tests of that undercount.
# AuthInfo cred_expire=10: a requeued job may start again 10 s after its requeue (Slurm's
# default 120 s; the jobs that requeue themselves would wait that long).
#
# Every daemon runs in the foreground of a background job of this script; its PID and start time
# (/proc/PID/stat field 22) go to DIR/pids, and `stop` signals a PID only while both still
# match, so it never signals a process it did not start even if a PID is reused. Job processes
# left behind by slurmd (slurmstepd and the tasks) are found in this fixture's nodes' cgroups
# (slurm_<node>) and signalled only when their environment names this DIR's slurm.conf. `stop`
# removes the cgroups of its own nodes (slurm_<node>; for `localhost`, only those that did not
# exist before `start`), then its namespaces and bridge (DIR/net lists what it created).
# Ports: the first free block of four from $QP_SLURM_PORT_BASE (default 16817) whose names and
# subnet are free too. Bounded waits: $QP_SLURM_START_TIMEOUT (default 60 s) for idle nodes,
# 10 s per daemon at stop.
set -uo pipefail

usage="usage: slurm_fixture.sh start DIR [--no-db] [--nodes N] [--gather linux|cgroup] | stop|status DIR | kill-node|kill-tasks|restart-node DIR NODE | set-gather DIR linux|cgroup"
cmd=${1:-}
dir_arg=${2:-}
[[ -n $cmd && -n $dir_arg ]] || { echo "$usage" >&2; exit 2; }
shift 2
want_db=1
want_nodes=2
want_gather=linux
target=
while (($#)); do
  case $1 in
    --no-db) want_db=0 ;;
    --db) want_db=1 ;;
    --nodes)
      want_nodes=${2:-}
      [[ $want_nodes =~ ^[1-3]$ ]] || { echo "--nodes expects 1, 2 or 3" >&2; exit 2; }
      shift ;;
    --gather)
      want_gather=${2:-}
      [[ $want_gather == linux || $want_gather == cgroup ]] ||
        { echo "--gather expects linux or cgroup" >&2; exit 2; }
      shift ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) [[ -z $target ]] || { echo "$usage" >&2; exit 2; }; target=$1 ;;
  esac
  shift
done
D=$(realpath -m -- "$dir_arg")
marker=$D/.qp-slurm-fixture
start_timeout=${QP_SLURM_START_TIMEOUT:-60}
use_netns=0

log() { printf 'slurm_fixture: %s\n' "$*" >&2; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

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

# This fixture's compute nodes (DIR/nodes), one a line.
nodes() { cat "$D/nodes" 2>/dev/null; }

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

# SIGKILL of the recorded daemons named, at once (a node lost).
kill_daemons() {
  local names=$1 name pid st
  [[ -r $D/pids ]] || return 0
  while read -r name pid st; do
    [[ " $names " == *" $name "* ]] || continue
    is_ours "$pid" "$st" && kill -KILL "$pid" 2>/dev/null
  done <"$D/pids"
}

# The processes in the slurm cgroups of the nodes named (default: all of this fixture's) whose
# environment names this fixture's slurm.conf (slurmstepd and the job's tasks, started by our
# slurmd); with TASKS_ONLY=1 only those in task_* cgroups (the tasks).
job_processes() {
  local f pid n
  local -a names=("$@") files
  ((${#names[@]})) || mapfile -t names < <(nodes)
  shopt -s nullglob globstar
  for n in "${names[@]}"; do
    if [[ ${TASKS_ONLY:-0} == 1 ]]; then
      files=(/sys/fs/cgroup/*/slurm_"$n"/**/task_*/cgroup.procs)
    else
      files=(/sys/fs/cgroup/*/slurm_"$n"/**/cgroup.procs)
    fi
    for f in "${files[@]}"; do
      while read -r pid; do
        [[ -n $pid ]] || continue
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$D/slurm.conf"; then
          echo "$pid"
        fi
      done <"$f"
    done
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

# Remove what DIR/net says this fixture created: namespaces (their veth ends go with them),
# then links still there (the bridge).
net_down() {
  local kind name
  [[ -r $D/net ]] || return 0
  while read -r kind name; do
    [[ $kind == netns ]] || continue
    ip netns del "$name" 2>/dev/null
    [[ -e /run/netns/$name ]] && log "could not delete namespace $name"
  done <"$D/net"
  while read -r kind name; do
    [[ $kind == link ]] || continue
    ip link show "$name" >/dev/null 2>&1 || continue
    ip link del "$name" 2>/dev/null || log "could not delete link $name"
  done <"$D/net"
  mv -f "$D/net" "$D/net.removed"
}

do_stop() {
  local t0 pids p n c
  t0=$(now)
  [[ -e $marker ]] || { log "$D is not a fixture directory (no $marker); nothing to stop"; return 0; }
  export SLURM_CONF=$D/slurm.conf
  # Jobs first, so that slurmstepd ends cleanly while slurmctld and slurmd still run.
  if [[ -r $D/pids ]] && command -v scancel >/dev/null 2>&1; then
    timeout 5 scancel --quiet --full --user=root >/dev/null 2>&1 || true
  fi
  stop_daemons "$(nodes | sed 's/^/slurmd-/' | tr '\n' ' ')" 10
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
  # The slurm cgroup directories of this fixture's nodes (deepest first; rmdir only removes
  # empty cgroups, so one still in use stays). `localhost` is shared by every single-node
  # fixture: only its cgroups that appeared after `start`.
  shopt -s nullglob
  for n in $(nodes); do
    for c in /sys/fs/cgroup/*/slurm_"$n"; do
      [[ -d $c ]] || continue
      [[ $n == localhost && -r $D/cgroups-before ]] && grep -qxF "$c" "$D/cgroups-before" && continue
      find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
      [[ -d $c ]] && log "could not remove $c (not empty)"
    done
  done
  shopt -u nullglob
  net_down
  mv -f "$D/pids" "$D/pids.stopped" 2>/dev/null
  rm -f "$D/ready"
  log "stopped in $(since "$t0") s"
}

do_status() {
  local name pid st rc=0
  [[ -r $D/pids ]] || { echo "no fixture running in $D"; return 3; }
  while read -r name pid st; do
    if is_ours "$pid" "$st"; then echo "$name $pid running"; else echo "$name $pid gone"; rc=3; fi
  done <"$D/pids"
  [[ -r $D/net ]] && sed 's/^/created: /' "$D/net"
  SLURM_CONF=$D/slurm.conf timeout 5 sinfo -N 2>&1
  return $rc
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Names and subnet for a port base: nodes (and their namespaces) q<base>n1, q<base>n2, ...,
# bridge qb<base>, veth v<node>, the /24 10.<base / 256>.<base % 256>.0 (bridge .1, node i .10+i).
net_names() {
  bridge=qb$1
  subnet=10.$((($1 >> 8) & 255)).$(($1 & 255))
}

# Whether the names and subnet of a base are unused (no stale fixture's namespace or bridge, no
# address or route in the /24).
net_free() {
  local bridge subnet i
  net_names "$1"
  ip link show "$bridge" >/dev/null 2>&1 && return 1
  for i in 1 2 3; do
    [[ -e /run/netns/q$1n$i ]] && return 1
    ip link show "vq$1n$i" >/dev/null 2>&1 && return 1
  done
  ip -4 -o addr show 2>/dev/null | grep -qF " $subnet." && return 1
  ip -4 route show 2>/dev/null | grep -q "^${subnet//./\\.}\\.0/" && return 1
  return 0
}

# The first base (stepping by 10) whose four ports are all free (and, with namespaces, its
# names and subnet).
pick_ports() {
  local base=${QP_SLURM_PORT_BASE:-16817} i ok
  for ((; base < 60000; base += 10)); do
    ok=1
    for i in 0 1 2 3; do port_free $((base + i)) || { ok=0; break; }; done
    ((ok && use_netns)) && ! net_free "$base" && ok=0
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

# Whether this machine lets us make network namespaces and bridges: a throw-away pair, made
# and deleted. Prints why not.
netns_usable() {
  local probe=qpprobe$$ out rc c
  for c in ip nsenter unshare; do
    command -v "$c" >/dev/null 2>&1 || { echo "no $c (iproute2, util-linux)"; return 1; }
  done
  out=$(ip netns add "$probe" 2>&1) || { echo "ip netns add refused: $out"; return 1; }
  out=$(ip link add "$probe" type bridge 2>&1)
  rc=$?
  ip link del "$probe" 2>/dev/null
  ip netns del "$probe" 2>/dev/null
  ((rc == 0)) || { echo "ip link add (bridge) refused: $out"; return 1; }
  return 0
}

# Start NODE's slurmd: in its namespaces with hostname NODE (nsenter, not `ip netns exec`, which
# remounts /sys and hides the cgroups); `exec` keeps the recorded PID slurmd's own.
start_slurmd() {
  local n=$1
  if [[ $n == localhost ]]; then
    slurmd -D -N "$n" -f "$D/slurm.conf" >/dev/null 2>&1 </dev/null &
  else
    nsenter --net="/run/netns/$n" -- unshare --uts --mount --propagation slave -- \
      sh -c "hostname $n && exec slurmd -D -N $n -f '$D/slurm.conf'" >/dev/null 2>&1 </dev/null &
  fi
  record "slurmd-$n" $!
}

# Until every node named is in one of the states STATES (sinfo %t, flags dropped); bounded.
# Prints why not.
wait_nodes() {
  local states=$1 limit=$2 deadline line n st ok c
  shift 2
  deadline=$(($(date +%s) + limit))
  while :; do
    ok=1
    line=$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null)
    for n in "$@"; do
      st=$(awk -v n="$n" '$1 == n {print $2; exit}' <<<"$line")
      # exactly the state: no flag (idle* is not responding, idle# powering up, ...)
      [[ -n $st && " $states " == *" $st "* ]] || { ok=0; break; }
    done
    ((ok)) && return 0
    for c in munged slurmctld; do daemon_alive "$c" || { echo "$c exited"; return 1; }; done
    for n in "$@"; do daemon_alive "slurmd-$n" || { echo "slurmd-$n exited"; return 1; }; done
    if (($(date +%s) >= deadline)); then
      echo "nodes not ${states// /|} after ${limit} s: $(tr '\n' ' ' <<<"$line")"
      return 1
    fi
    sleep 0.2
  done
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
  mkdir -p "$D"/{munge,state,spool,log,peaks,tasks,tmp} || exit 1
  : >"$marker"
  : >"$D/pids"
  export SLURM_CONF=$D/slurm.conf

  local why
  if ((want_nodes > 1)); then
    if why=$(netns_usable); then
      use_netns=1
    else
      echo "$why" >"$D/nodes-why"
      log "one node on loopback, not $want_nodes: $why (the multi-node tests will skip)"
    fi
  else
    echo "started with --nodes 1" >"$D/nodes-why"
  fi

  local mode=linux
  if [[ -d /sys/fs/cgroup/memory && -w /sys/fs/cgroup/memory && -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
    mode=cgroup
  else
    log "no writable cgroup v1 memory hierarchy: memory enforced by polling (OverMemoryKill)"
  fi
  echo "$mode" >"$D/mode"
  ls -d /sys/fs/cgroup/*/slurm* 2>/dev/null >"$D/cgroups-before"

  local base
  base=$(pick_ports) || fail_start "no free ports"
  local ctld_port=$base slurmd_port=$((base + 1)) dbd_port=$((base + 2)) db_port=$((base + 3))
  echo "$base" >"$D/ports"

  # The compute nodes: namespaces on a bridge, or localhost. DIR/net records each namespace
  # and link as it is made, so that a failed start removes exactly those.
  local bridge subnet i n ctld_host=localhost node_lines='' part_nodes
  local -a node_names=()
  if ((use_netns)); then
    net_names "$base"
    ctld_host="$(hostname -s)($subnet.1)"
    : >"$D/net"
    ip link add "$bridge" type bridge || fail_start "ip link add $bridge type bridge"
    echo "link $bridge" >>"$D/net"
    { ip addr add "$subnet.1/24" dev "$bridge" && ip link set "$bridge" up; } ||
      fail_start "bridge $bridge up"
    for ((i = 1; i <= want_nodes; ++i)); do
      n=q${base}n$i
      node_names+=("$n")
      ip netns add "$n" || fail_start "ip netns add $n"
      echo "netns $n" >>"$D/net"
      ip link add "v$n" type veth peer name eth0 netns "$n" || fail_start "veth for $n"
      echo "link v$n" >>"$D/net"
      { ip link set "v$n" master "$bridge" && ip link set "v$n" up &&
        ip -n "$n" addr add "$subnet.$((10 + i))/24" dev eth0 &&
        ip -n "$n" link set eth0 up && ip -n "$n" link set lo up; } || fail_start "network of $n"
      node_lines+="NodeName=$n NodeAddr=$subnet.$((10 + i)) CPUs=@CPUS@ RealMemory=@MEM@ State=UNKNOWN"$'\n'
    done
    part_nodes=q${base}n[1-$want_nodes]
  else
    node_names=(localhost)
    node_lines="NodeName=localhost NodeAddr=127.0.0.1 CPUs=@CPUS@ RealMemory=@MEM@ State=UNKNOWN"$'\n'
    part_nodes=localhost
  fi
  for n in "${node_names[@]}"; do mkdir -p "$D/spool/$n" "$D/tmp/$n"; done
  printf '%s\n' "${node_names[@]}" >"$D/nodes"

  # munge: own key and socket; the socket directory owned by munge, mode 0711. The socket is a
  # file: every node's namespace sees it.
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
  node_lines=${node_lines//@CPUS@/$cpus}
  node_lines=${node_lines//@MEM@/$mem}

  # jobacct_gather/linux: sacct's MaxRSS, MaxRSSNode and MaxRSSTask right across nodes (Slurm
  # 22.05's jobacct_gather/cgroup counts the first node's tasks only).
  if [[ $mode == linux && $want_gather == cgroup ]]; then
    log "--gather cgroup needs the cgroup v1 memory hierarchy: jobacct_gather/linux"
    want_gather=linux
  fi
  local gather=jobacct_gather/$want_gather
  local proctrack=proctrack/cgroup task=task/cgroup extra="TaskEpilog=$D/taskepilog.sh"
  if [[ $mode == linux ]]; then
    proctrack=proctrack/linuxproc task=task/none
    extra="JobAcctGatherParams=OverMemoryKill"
  fi
  echo "${gather#*/}" >"$D/gather"
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
# The nodes reach slurmctld over the bridge (several nodes) or loopback.
SlurmctldHost=$ctld_host
SlurmctldPort=$ctld_port
# The same port on every node: each has its own network namespace.
SlurmdPort=$slurmd_port
# Job ids from the port base: two fixtures at once (two worktrees) share the cgroup tree.
FirstJobId=$((base * 10))
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$D/munge/munge.socket,cred_expire=10
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
# One tmp per node: PMIx's client directories are named by job and step, not by host.
TmpFS=$D/tmp/%n
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
# A node whose slurmd stops answering is set DOWN after this (plus Slurm's ping cycle).
SlurmdTimeout=10
# The main scheduling loop every 2 s (default 60 s; the backfill's 30 s): a requeued job starts
# once its hold (cred_expire) has passed, not up to half a minute later.
SchedulerParameters=sched_interval=2
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
${node_lines}PartitionName=debug Nodes=$part_nodes Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$D/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
EOF
  # At each task's end, the job cgroup's peak on the task's node (page cache included):
  #   DIR/peaks/JOB  "job step bytes" (for qmlpipe validate --cgroup-peak)
  #   DIR/tasks/JOB  "job step rank node bytes" (where each rank ran)
  # The cgroup/v1 plugin names its root slurm_<NodeName>: slurm_${SLURMD_NODENAME}, never
  # slurm_*, which would read every node's.
  cat >"$D/taskepilog.sh" <<EOF
#!/bin/sh
step=\${SLURM_STEP_ID:-\${SLURM_STEPID:-?}}
for f in /sys/fs/cgroup/memory/slurm_\${SLURMD_NODENAME}/uid_*/job_\${SLURM_JOB_ID}/memory.max_usage_in_bytes; do
  [ -r "\$f" ] || continue
  b=\$(cat "\$f")
  echo "\${SLURM_JOB_ID} \$step \$b" >>"$D/peaks/\${SLURM_JOB_ID}"
  echo "\${SLURM_JOB_ID} \$step \${SLURM_PROCID:-?} \$(hostname) \$b" >>"$D/tasks/\${SLURM_JOB_ID}"
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
  for n in "${node_names[@]}"; do start_slurmd "$n"; done

  why=$(wait_nodes idle "$start_timeout" "${node_names[@]}") || fail_start "$why"
  cat >"$D/env.sh" <<EOF
export SLURM_CONF=$D/slurm.conf
EOF
  : >"$D/ready"
  ((want_db)) && : >"$D/db"
  log "up in $(since "$t0") s: $D (mode $mode, db $( ((want_db)) && echo yes || echo no), ports $base-$((base + 3)), nodes ${node_names[*]}$( ((use_netns)) && echo " on $bridge, $subnet.0/24"))"
}

# The node named on the command line must be one of this fixture's.
need_node() {
  [[ -r $D/pids ]] || { log "no fixture running in $D"; exit 3; }
  if [[ -z $target ]] || ! nodes | grep -qxF "$target"; then
    log "'$target' is not a node of $D ($(nodes | tr '\n' ' '))"
    exit 2
  fi
  export SLURM_CONF=$D/slurm.conf
}

# SIGKILL on NODE: `all`: its slurmd, then its job processes (slurmstepd and tasks), a node
# lost; else its tasks only. (Killing slurmstepd with the tasks while slurmd lives leaves no one
# to report the tasks' end: the other nodes' ranks then wait in MPI until the time limit.)
do_kill() {
  local pids p
  need_node
  if [[ ${1:-} == all ]]; then
    kill_daemons "slurmd-$target"
    pids=$(job_processes "$target")
  else
    pids=$(TASKS_ONLY=1 job_processes "$target")
  fi
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  log "SIGKILL on $target:$([[ ${1:-} == all ]] && echo " slurmd,") ${pids//$'\n'/ }"
}

# NODE's slurmd again, as after a reboot: Slurm 22.05 leaves a killed slurmstepd's PMIx socket
# (SPOOL/stepd.slurm.pmix.JOB.STEP) and directory (SPOOL/pmix.JOB.STEP) behind, and the step of
# the requeued job (the same JOB.STEP) then fails at once ("Address already in use", "Cannot
# create directory ... File exists"); its TmpFS holds PMIx's client directories likewise.
do_restart_node() {
  local t0 why
  t0=$(now)
  need_node
  stop_daemons "slurmd-$target" 10
  find "$D/spool/$target" -mindepth 1 -maxdepth 1 \( -name '*.pmix.*' -o -name 'pmix.*' \) \
    -exec rm -rf {} + 2>/dev/null
  find "$D/tmp/$target" -mindepth 1 -delete 2>/dev/null
  grep -v "^slurmd-$target " "$D/pids" >"$D/pids.new"
  mv -f "$D/pids.new" "$D/pids"
  start_slurmd "$target"
  why=$(wait_nodes "idle alloc mix comp" 60 "$target") || { log "restart of $target: $why"; exit 1; }
  log "$target back in $(since "$t0") s"
}

# JobAcctGatherType=jobacct_gather/TYPE: slurm.conf rewritten, slurmctld and every slurmd
# restarted (a plugin type is read at start only; `scontrol reconfigure` keeps the old one), the
# job state kept (StateSaveLocation). Refused while a job of the fixture is not finished.
do_set_gather() {
  local t0 n why
  t0=$(now)
  [[ -r $D/pids ]] || { log "no fixture running in $D"; exit 3; }
  [[ $target == linux || $target == cgroup ]] || { echo "$usage" >&2; exit 2; }
  [[ $target == cgroup && $(cat "$D/mode") != cgroup ]] &&
    { log "jobacct_gather/cgroup needs the cgroup v1 memory hierarchy (mode $(cat "$D/mode"))"; exit 77; }
  export SLURM_CONF=$D/slurm.conf
  [[ -z $(timeout 5 squeue -h -t PD,R,CG,CF,S -o %i 2>/dev/null) ]] ||
    { log "set-gather: jobs are queued or running in $D"; exit 2; }
  [[ $(cat "$D/gather" 2>/dev/null) == "$target" ]] && { log "jobacct_gather/$target already"; return 0; }
  sed -i "s|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/$target|" "$D/slurm.conf"
  stop_daemons "$(nodes | sed 's/^/slurmd-/' | tr '\n' ' ') slurmctld" 10
  grep -v '^slurmd-\|^slurmctld ' "$D/pids" >"$D/pids.new"
  mv -f "$D/pids.new" "$D/pids"
  echo "$target" >"$D/gather"
  slurmctld -D -i -f "$D/slurm.conf" >/dev/null 2>&1 </dev/null &
  record slurmctld $!
  for n in $(nodes); do start_slurmd "$n"; done
  # shellcheck disable=SC2046
  why=$(wait_nodes idle "$start_timeout" $(nodes)) || { log "set-gather $target: $why"; tails; exit 1; }
  log "JobAcctGatherType=jobacct_gather/$target, restarted in $(since "$t0") s"
}

case $cmd in
  start) do_start ;;
  set-gather) do_set_gather ;;
  stop) do_stop ;;
  status) do_status ;;
  kill-node) do_kill all ;;
  kill-tasks) do_kill ;;
  restart-node) do_restart_node ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
