#!/usr/bin/env bash
# outputs.sh: hostile outputs and signals in the write window (issue 38, second round), against
# the real qmlpipe binary.
#   outputs.sh QMLPIPE CLS WORK
# 1. Every command that writes a file the user names (run --output, run by the config's
#    `output:`, calibrate --output, simulate --out / --mask / --example, plan --sbatch with and
#    without --force) against every hostile target: a FIFO, /dev/null (and a private mknod copy
#    as root), a directory, a socket, a symlink to a FIFO and to /dev/null, a symlink and a hard
#    link to the command's input, the input itself, a read-only directory, a missing directory,
#    a path ending in '/'; and two that must be written (an existing regular file, a dangling
#    symlink). A refusal: exit 8 before any work, the message names the option, the path and the
#    kind; the target is still what it was (/dev/null still the null device), the inputs byte
#    for byte the same, no temporary (base/atomic_file.h's ".qmlpipe-tmp." in a name) left.
#    --example's own cases: a directory holding another run's config, a file as DIR.
# 2. Every signal sent in the write window (QP_TEST_PAUSE=before_rename: the file complete in
#    its temporary, not yet renamed) of each writer: SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1,
#    SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU end it with 128 + the signal and "interrupted by SIGX";
#    SIGPIPE and SIGXFSZ are ignored (the process lives on; a SIGTERM then ends it). Each time:
#    the old file intact, no temporary. calibrate (2 s of dgemm a run) gets SIGHUP, SIGUSR2 and
#    SIGXFSZ only.
# 3. The limits themselves: `ulimit -f` below the file's size (EFBIG, not SIGXFSZ: exit 8, the
#    file named, the old one intact, no temporary); standard output into a pipe whose reader has
#    gone (EPIPE, not SIGPIPE: exit 8, the results still written).
# 4. An option's value that is the next option (`--output --quiet`): exit 2, nothing written.
# Every command runs under `timeout 30`. Prints "hostile_outputs: N cases, M failed"; exit 1
# when any failed.
set -uo pipefail
qmlpipe=$1 cls_src=$2 work=$3/hostile_outputs
start_time=$(date +%s.%N)
uid=$(id -u)
# what an earlier run may have left: its read-only directory (mounted, or mode 555)
umount "$work/ro" 2>/dev/null
chmod -R u+w "$work" 2>/dev/null
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset QP_TEST_PAUSE QP_FAULT QMLPIPE_CALIBRATION POSIXLY_CORRECT

cases=0 failed=0 skipped=0 tag="" bad=0
# section NAME: prints the section's name and the seconds since the start
section() { echo "$1 ($(awk -v a="$start_time" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"; }
begin() { tag=$1 bad=0 cases=$((cases + 1)); }
fail() {
  echo "FAIL $tag: $*"
  bad=1
}
finish_case() { [[ $bad == 0 ]] || failed=$((failed + 1)); }
skip() {
  echo "skip $1: $2"
  skipped=$((skipped + 1))
}

# ---- the inputs: the example of `simulate --example` at nside 4, a calibration file ----
cls=$work/in/cls.txt
mkdir -p in ref t
cp "$cls_src" "$cls"
"$qmlpipe" simulate --example ex --cls "$cls" --nside 4 --lmax 8 >/dev/null || {
  echo "setup: simulate --example failed"
  exit 1
}
"$qmlpipe" calibrate --size 64 --output in/cal.txt >/dev/null 2>&1 || {
  echo "setup: calibrate failed"
  exit 1
}
# plan's --time from this file, not from a dgemm timed by every plan
export QMLPIPE_CALIBRATION=$work/in/cal.txt
"$qmlpipe" run ex/config.yaml --quiet --output in/old.h5 >/dev/null 2>&1 || {
  echo "setup: run failed"
  exit 1
}
# The results file named by a config's key (run without --output): its own config.
sed 's|^output: .*|output: ../t/cfgout.h5|' ex/config.yaml >ex/cfgout.yaml
inputs="ex/config.yaml ex/cfgout.yaml ex/map_0000.fits ex/map_0001.fits ex/mask.fits ex/cls.txt in/cls.txt in/cal.txt in/old.h5"
for f in $inputs; do cp "$f" "ref/${f//\//_}"; done

inputs_intact() {
  local f
  for f in $inputs; do
    cmp -s "$f" "ref/${f//\//_}" || fail "the input $f changed"
  done
}
no_temps() {
  local left
  left=$(find "$work" -name '*.qmlpipe-tmp.*' 2>/dev/null | head -3)
  [[ -z $left ]] || fail "temporary left: $left"
  find "$work" -name '*.qmlpipe-tmp.*' -exec rm -rf {} + 2>/dev/null
}
null_intact() {
  [[ -c /dev/null ]] || fail "/dev/null is no longer a character device"
  [[ $(stat -c '%t,%T' /dev/null) == 1,3 ]] || fail "/dev/null is no longer device 1,3"
}
# expect_words FILE WORD...: every word in FILE
expect_words() {
  local file=$1 w
  shift
  for w in "$@"; do grep -qF -- "$w" "$file" || fail "stderr lacks '$w': $(head -c 600 "$file")"; done
}

# ---- the writers: write_<name> TARGET runs the command onto TARGET (stdout, stderr: files) ----
# Each sets `opt` (what the message must name) and `input` (the file its input cases use).
q() { timeout 30 "$qmlpipe" "$@" >"$work/out.txt" 2>"$work/err.txt"; }
write_run() { q run ex/config.yaml --quiet --output "$1"; }
write_config() {
  sed "s|^output: .*|output: $1|" ex/config.yaml >ex/key.yaml
  q run ex/key.yaml --quiet
}
write_calibrate() { q calibrate --size 64 --output "$1"; }
write_mask() { q simulate --cls "$cls" --nside 2 --out t/sim --mask "$1"; }
# --out PREFIX writes PREFIX_0000.fits: the target's name must end so.
write_out() { q simulate --cls "$sim_cls" --nside 2 --out "${1%_0000.fits}"; }
write_plan() { q plan ex/config.yaml --sbatch "$1"; }
write_plan_force() { q plan ex/config.yaml --sbatch "$1" --force; }
# --example DIR: the target is DIR/config.yaml (DIR made fresh by the case).
write_example() { q simulate --example "$(dirname "$1")" --cls "$cls" --nside 2 --lmax 5; }

opt_of() {
  case $1 in
  run | calibrate) echo "--output" ;;
  config) echo "key 'output'" ;;
  mask) echo "--mask" ;;
  out) echo "--out" ;;
  plan | plan_force) echo "--sbatch" ;;
  example) echo "--example" ;;
  esac
}
# The input of each writer that the input cases point at.
input_of() {
  case $1 in
  run | config | plan | plan_force) echo "$work/ex/mask.fits" ;;
  mask | example) echo "$cls" ;;
  out) echo "$sim_cls" ;;
  calibrate) echo "" ;; # calibrate reads no file
  esac
}
sim_cls=$work/in/cin_0000.fits # simulate --out's --cls, named like its maps
cp "$cls" "$sim_cls"
inputs="$inputs in/cin_0000.fits"
cp "$sim_cls" ref/in_cin_0000.fits

# A read-only directory: chmod for a user; root writes anywhere, so a read-only tmpfs.
rodir=$work/ro
mkdir -p "$rodir"
ro_ok=0
if [[ $uid != 0 ]]; then
  touch "$rodir/existing" && chmod 555 "$rodir" && ro_ok=1
elif mount -t tmpfs -o ro,size=64k tmpfs "$rodir" 2>/dev/null; then
  ro_ok=1
  trap 'umount "$rodir" 2>/dev/null' EXIT
fi

# make_target KIND PATH WRITER: the hostile thing at PATH; prints the path to give the command.
make_target() {
  local kind=$1 path=$2 writer=$3 input
  input=$(input_of "$writer")
  case $kind in
  fifo) mkfifo "$path" ;;
  devnull) path=/dev/null ;;
  mknod) mknod "$path" c 1 3 ;;
  dir) mkdir "$path" ;;
  socket) python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$path" ;;
  link_fifo) mkfifo "$path.fifo" && ln -s "$(basename "$path").fifo" "$path" ;;
  link_null) ln -s /dev/null "$path" ;;
  link_input) ln -s "$input" "$path" ;;
  hard_input) ln "$input" "$path" ;;
  input) path=$input ;;
  readonly) path=$rodir/$(basename "$path") ;;
  missing) path=$(dirname "$path")/missing/$(basename "$path") ;;
  slash) mkdir -p "$path" && path=$path/ ;;
  regular) echo "old contents" >"$path" ;;
  dangling) ln -s nowhere "$path" ;;
  esac
  echo "$path"
}
# what a refusal says, and the kind the target must still be (test -X), per kind
words_of() {
  case $1 in
  fifo) echo "named pipe (FIFO)" ;;
  devnull | mknod) echo "character device" ;;
  dir) echo "is a directory" ;;
  socket) echo "a socket" ;;
  link_fifo) echo "a symlink to a named pipe" ;;
  link_null) echo "a symlink to a character device" ;;
  link_input | hard_input | input) echo "this command's input" ;;
  readonly) [[ $uid == 0 ]] && echo "Read-only file system" || echo "Permission denied" ;;
  missing) echo "does not exist" ;;
  slash) echo "ends in '/'" ;;
  esac
}
kind_test() {
  case $1 in
  fifo) echo "-p" ;;
  devnull | mknod) echo "-c" ;;
  dir | slash) echo "-d" ;;
  socket) echo "-S" ;;
  link_fifo | link_null | link_input) echo "-L" ;;
  *) printf "%s\n" -f ;;
  esac
}

# mknod before devnull and link_null: as root, /dev/null itself (and a symlink to it: plan
# resolves the script's path) is tried only when the writer left a private copy of it alone (a
# regression would otherwise replace the machine's /dev/null).
kinds="fifo mknod devnull dir socket link_fifo link_null link_input hard_input input readonly missing slash regular dangling"
writers="run config calibrate mask out plan plan_force example"

section "1. hostile targets"
n=0
for writer in $writers; do
  mknod_bad=0
  for kind in $kinds; do
    n=$((n + 1))
    name=o${n}_0000.fits
    base=t/c$n
    mkdir -p "$base"
    case $writer/$kind in
    calibrate/link_input | calibrate/hard_input | calibrate/input)
      continue ;; # calibrate reads nothing
    out/devnull | out/slash | example/devnull | example/slash | example/input)
      continue ;; # a name these cannot take (--out adds _0000.fits; --example writes in DIR)
    */mknod)
      if [[ $uid != 0 ]]; then skip "$writer/$kind" "mknod needs root"; continue; fi ;;
    */socket)
      if ! command -v python3 >/dev/null; then skip "$writer/$kind" "no python3 to bind a socket"; continue; fi ;;
    */devnull | */link_null)
      if [[ $mknod_bad == 1 ]]; then skip "$writer/$kind" "its private null device was replaced"; continue; fi ;;
    */readonly)
      if [[ $ro_ok != 1 ]]; then skip "$writer/$kind" "no read-only directory"; continue; fi ;;
    esac
    if [[ $writer == example ]]; then
      # DIR/config.yaml is the target; for "missing", DIR's parent does not exist.
      target=$(make_target "$kind" "$base/config.yaml" "$writer")
      [[ $kind != readonly ]] || target=$rodir/ex/config.yaml
      [[ $kind != missing ]] || target=$base/missing/ex/config.yaml
    else
      target=$(make_target "$kind" "$base/$name" "$writer")
    fi
    # the config's `output:` is relative to the config's directory: given absolute
    [[ $writer != config || $target == /* ]] || target=$work/$target
    begin "$writer/$kind"
    "write_$writer" "$target"
    rc=$?
    t=$target
    case $writer/$kind in
    example/regular | example/dangling)
      [[ $rc == 8 ]] || fail "exit $rc, expected 8: $(head -c 600 err.txt)"
      expect_words err.txt "--example" "not the config of an earlier example"
      ;;
    plan/regular | plan/dangling)
      [[ $rc == 8 ]] || fail "exit $rc, expected 8: $(head -c 600 err.txt)"
      expect_words err.txt "exists"
      ;;
    */regular | */dangling)
      [[ $rc == 0 ]] || fail "exit $rc, expected 0: $(head -c 600 err.txt)"
      [[ -f $t && ! -L $t ]] || fail "'$t' is not the new regular file"
      ! grep -qx "old contents" "$t" 2>/dev/null || fail "'$t' was not replaced"
      ;;
    *)
      [[ $rc == 8 ]] || fail "exit $rc, expected 8: $(head -c 600 err.txt)"
      expect_words err.txt "$(opt_of "$writer")" "$(words_of "$kind")"
      [[ $kind == missing || $kind == readonly ]] || expect_words err.txt "'$target'"
      # the target is what it was
      case $kind in
      missing) [[ ! -e $(dirname "$t") ]] || fail "the missing directory was made" ;;
      readonly) ;;
      *) test "$(kind_test "$kind")" "$t" || fail "'$t' is no longer $(kind_test "$kind")" ;;
      esac
      [[ $kind != link_fifo ]] || [[ -p $t.fifo || -p $(dirname "$t")/$(readlink "$t") ]] ||
        fail "the FIFO behind the link changed"
      ;;
    esac
    null_intact
    inputs_intact
    no_temps
    [[ $kind != mknod || $bad == 0 ]] || mknod_bad=1
    finish_case
  done
done

# --example's own: another run's config in DIR; DIR a regular file; an earlier example's DIR.
begin "example/other_config"
mkdir -p t/user && echo "maps: [mine.fits]" >t/user/config.yaml && echo "mine" >t/user/mask.fits
write_example t/user/config.yaml
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--example" "not the config of an earlier example"
grep -qx "maps: \[mine.fits\]" t/user/config.yaml || fail "the user's config changed"
grep -qx "mine" t/user/mask.fits || fail "the user's mask changed"
[[ ! -e t/user/cls.txt ]] || fail "the example wrote into the user's directory"
no_temps
finish_case
begin "example/user_mask_no_config"
mkdir -p t/user2 && echo "mine" >t/user2/mask.fits
write_example t/user2/config.yaml
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "'t/user2/mask.fits' exists"
grep -qx "mine" t/user2/mask.fits || fail "the user's mask changed"
no_temps
finish_case
begin "example/dir_is_file"
echo "a file" >t/afile
write_example t/afile/config.yaml
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--example" "'t/afile'"
grep -qx "a file" t/afile || fail "t/afile changed"
no_temps
finish_case
begin "example/earlier_example"
write_example t/again/config.yaml && write_example t/again/config.yaml
rc=$?
[[ $rc == 0 ]] || fail "exit $rc, expected 0 (an earlier example is replaced): $(head -c 600 err.txt)"
no_temps
finish_case
begin "example/over_its_cls"
q simulate --example t/again --cls t/again/cls.txt --nside 2 --lmax 5
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--example" "this command's input 't/again/cls.txt' (--cls)"
no_temps
finish_case
begin "mask/one_of_the_maps"
q simulate --cls "$cls" --nside 2 --out t/mm --mask t/mm_0000.fits
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--mask" "is also map 0"
[[ ! -e t/mm_0000.fits ]] || fail "a map was written"
no_temps
finish_case
begin "plan/exists_without_force"
echo "old contents" >t/job.sh
write_plan t/job.sh
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "exists (--force replaces it)"
grep -qx "old contents" t/job.sh || fail "t/job.sh changed"
no_temps
finish_case
begin "plan/own_calibration"
write_plan_force "$QMLPIPE_CALIBRATION"
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--sbatch" "(memory.calibration)"
inputs_intact
finish_case
begin "run/own_config"
write_run ex/config.yaml
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "--output" "(the config file)"
inputs_intact
finish_case
begin "run/a_map_through_symlink_dir"
ln -s ../ex t/exlink
write_run t/exlink/map_0001.fits
rc=$?
[[ $rc == 8 ]] || fail "exit $rc, expected 8"
expect_words err.txt "(maps)"
inputs_intact
finish_case

# ---- 2. signals in the write window ----
section "2. signals in the write window"
# sig_writer NAME TARGET: starts the writer paused before its rename, in the background.
# Each writer's first committed file is TARGET (simulate: its first map; --example: cls.txt).
sig_start() {
  local writer=$1 target=$2
  case $writer in
  run) set -- run ex/config.yaml --quiet --output "$target" ;;
  calibrate) set -- calibrate --size 64 --output "$target" ;;
  simulate) set -- simulate --cls "$cls" --nside 2 --out "${target%_0000.fits}" ;;
  example) set -- simulate --example "$(dirname "$target")" --cls "$cls" --nside 2 --lmax 5 ;;
  plan) set -- plan ex/config.yaml --sbatch "$target" --force ;;
  esac
  # Background commands of a script start with SIGINT and SIGQUIT ignored (and qmlpipe keeps
  # an ignored signal ignored, as nohup expects): env puts every signal back to its default.
  # the last case's stderr holds the pause line too: gone before this one can write its own
  rm -f "$work/err.txt"
  local reset=--default-signal
  env --default-signal true 2>/dev/null || reset=
  QP_TEST_PAUSE=before_rename env $reset timeout -s KILL 90 "$qmlpipe" "$@" \
    >"$work/out.txt" 2>"$work/err.txt" &
  tpid=$!
}
# the pid of qmlpipe under timeout (the only child of this timeout)
child_of() {
  local _ c
  for _ in $(seq 100); do
    c=$(cat "/proc/$1/task/$1/children" 2>/dev/null)
    [[ -z $c ]] || { echo "${c%% *}"; return; }
    sleep 0.02
  done
}
wait_paused() {
  local _
  for _ in $(seq 600); do
    grep -q "QP_TEST_PAUSE: paused in before_rename" "$work/err.txt" 2>/dev/null && return 0
    kill -0 "$tpid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
signals="HUP INT QUIT TERM USR1 USR2 ALRM VTALRM XCPU PIPE XFSZ"
# env --default-signal (coreutils 8.31+) gives back SIGINT and SIGQUIT to a background command
if ! env --default-signal true 2>/dev/null; then
  skip "SIGINT, SIGQUIT" "env --default-signal is missing (coreutils before 8.31)"
  signals="HUP TERM USR1 USR2 ALRM VTALRM XCPU PIPE XFSZ"
fi
for writer in run calibrate simulate example plan; do
  # calibrate spends ~2 s in its dgemm before each write: three signals (the handler is the
  # same for every command), every one for the others.
  sigs=$signals
  [[ $writer != calibrate ]] || sigs="HUP USR2 XFSZ"
  for sig in $sigs; do
    begin "$writer/SIG$sig"
    case $writer in
    run) target=t/sig_run.h5 && cp in/old.h5 "$target" ;;
    calibrate) target=t/sig_cal.txt && echo "old contents" >"$target" ;;
    simulate) target=t/sig_0000.fits && echo "old contents" >"$target" ;;
    example)
      rm -rf t/sigex && "$qmlpipe" simulate --example t/sigex --cls "$cls" --nside 2 --lmax 5 \
        >/dev/null 2>&1
      target=t/sigex/cls.txt && echo "old contents" >"$target"
      ;;
    plan) target=$work/t/sig_job.sh && echo "old contents" >"$target" ;;
    esac
    cp "$target" t/sig_old
    sig_start "$writer" "$target"
    if ! wait_paused; then
      fail "never paused before the rename: $(head -c 600 err.txt)"
      kill -KILL "$tpid" 2>/dev/null
      wait "$tpid" 2>/dev/null
      no_temps
      finish_case
      continue
    fi
    pid=$(child_of "$tpid")
    n_temps=$(find t -maxdepth 2 -name '*.qmlpipe-tmp.*' -type d | wc -l)
    [[ $n_temps == 1 ]] || fail "$n_temps temporaries while writing, expected 1"
    num=$(kill -l "$sig")
    kill -s "$sig" "$pid"
    if [[ $sig == PIPE || $sig == XFSZ ]]; then
      # ignored: still alive (and still paused) after it; SIGTERM then ends it as usual
      sleep 0.3
      kill -0 "$pid" 2>/dev/null || fail "SIG$sig ended the process"
      kill -s TERM "$pid" 2>/dev/null
      sig=TERM num=15
    fi
    wait "$tpid"
    rc=$?
    [[ $rc == $((128 + num)) ]] || fail "exit $rc, expected $((128 + num))"
    expect_words err.txt "interrupted by SIG$sig (signal $num) while writing '$target'" \
      "removed the unfinished temporary file"
    cmp -s "$target" t/sig_old || fail "the old '$target' changed"
    null_intact
    inputs_intact
    no_temps
    finish_case
  done
done

# ---- 3. the limits themselves ----
section "3. ulimit -f and a pipe without a reader"
# limited BLOCKS WRITER TARGET: the writer under `ulimit -f BLOCKS` (1024-byte blocks); stderr
# through a pipe (not subject to the limit), stdout to /dev/null.
limited() {
  local blocks=$1
  shift
  (
    ulimit -f "$blocks"
    exec timeout 30 "$qmlpipe" "$@" 2>&1 >/dev/null
  ) | cat >"$work/err.txt"
  return "${PIPESTATUS[0]}"
}
for writer in run calibrate simulate example plan; do
  begin "$writer/ulimit_f"
  case $writer in
  run) target=t/lim.h5 && cp in/old.h5 "$target" && limited 8 run ex/config.yaml --quiet --output "$target" ;;
  calibrate) target=t/lim.txt && echo "old contents" >"$target" && limited 0 calibrate --size 64 --output "$target" ;;
  simulate) target=t/lim_0000.fits && echo "old contents" >"$target" && limited 2 simulate --cls "$cls" --nside 8 --out t/lim ;;
  example)
    rm -rf t/limex && "$qmlpipe" simulate --example t/limex --cls "$cls" --nside 2 --lmax 5 >/dev/null 2>&1
    target=t/limex/cls.txt && echo "old contents" >"$target"
    limited 0 simulate --example t/limex --cls "$cls" --nside 2 --lmax 5
    ;;
  plan) target=$work/t/lim.sh && echo "old contents" >"$target" && limited 0 plan ex/config.yaml --sbatch "$target" --force ;;
  esac
  rc=$?
  [[ $rc == 8 ]] || fail "exit $rc, expected 8 (153: killed by SIGXFSZ): $(head -c 600 err.txt)"
  if [[ $writer == simulate ]]; then
    expect_words err.txt "lim_0000.fits" # cfitsio's own words, without errno
  else
    expect_words err.txt "'$target'" "File too large"
  fi
  if [[ $writer == run ]]; then cmp -s "$target" in/old.h5 || fail "the old results changed"
  else grep -qx "old contents" "$target" || fail "the old '$target' changed"; fi
  inputs_intact
  no_temps
  finish_case
done
# A pipe whose reader has gone before qmlpipe writes to it: EPIPE, exit 8, the files written.
for writer in run simulate plan report; do
  begin "$writer/stdout_closed_pipe"
  rm -f t/pipe.h5 t/pipe_0000.fits t/pipe.sh
  case $writer in
  run) set -- run ex/config.yaml --quiet --output t/pipe.h5 ;;
  simulate) set -- simulate --cls "$cls" --nside 2 --out t/pipe ;;
  plan) set -- plan ex/config.yaml --sbatch t/pipe.sh ;;
  report) set -- report in/old.h5 ;;
  esac
  { sleep 0.3; timeout 30 "$qmlpipe" "$@" 2>"$work/err.txt"; echo $? >"$work/rc.txt"; } | true
  rc=$(cat rc.txt)
  [[ $rc == 8 ]] || fail "exit $rc, expected 8 (141: killed by SIGPIPE): $(head -c 600 err.txt)"
  expect_words err.txt "cannot write standard output"
  case $writer in
  run) [[ -f t/pipe.h5 ]] || fail "no results written" ;;
  simulate) [[ -f t/pipe_0000.fits ]] || fail "no map written" ;;
  plan) [[ -x t/pipe.sh ]] || fail "no job script written" ;;
  esac
  inputs_intact
  no_temps
  finish_case
done

# ---- 4. an option's value that is the next option ----
section "4. option values that are options"
value_case() {
  local name=$1 option=$2 next=$3
  shift 3
  begin "value/$name"
  q "$@"
  rc=$?
  [[ $rc == 2 ]] || fail "exit $rc, expected 2"
  expect_words err.txt "$option needs" "not the option '$next'"
  [[ ! -e $next && ! -e ${next}_0000.fits ]] || fail "a file '$next' was written"
  inputs_intact
  no_temps
  finish_case
}
value_case run_output --output --quiet run ex/config.yaml --output --quiet
value_case run_checkpoint --checkpoint --resume run ex/config.yaml --checkpoint --resume
value_case calibrate_output --output --size calibrate --output --size 64
value_case simulate_mask --mask --out simulate --cls "$cls" --nside 2 --mask --out t/v
value_case simulate_out --out --mask simulate --cls "$cls" --nside 2 --out --mask t/vm.fits
value_case simulate_example --example --cls simulate --example --cls "$cls"
value_case simulate_cls --cls --nside simulate --cls --nside 2
value_case plan_sbatch --sbatch --force plan ex/config.yaml --sbatch --force
value_case plan_ranks --ranks --json plan ex/config.yaml --ranks --json
value_case run_abbreviated --output --quiet run ex/config.yaml --outp --quiet
begin "value/equals_form"
q simulate --cls "$cls" --nside 2 --out=t/--eq
rc=$?
[[ $rc == 0 ]] || fail "exit $rc, expected 0 (--out=VALUE is taken as written): $(head -c 600 err.txt)"
[[ -f t/--eq_0000.fits ]] || fail "t/--eq_0000.fits not written"
finish_case

# A directory name that would inject a key into the example's config (issue 38): the path in
# its comment line has each control character written as '?', so the config is the example's.
begin "example/newline_in_dir"
inject=$'t/inj\nlmax: 3'
q simulate --example "$inject" --cls "$cls" --nside 2 --lmax 5
rc=$?
[[ $rc == 0 ]] || fail "exit $rc, expected 0: $(head -c 600 err.txt)"
grep -q '^lmax: 3' "$inject/config.yaml" 2>/dev/null && fail "the directory's name injected 'lmax: 3'"
q budget "$inject/config.yaml"
rc=$?
[[ $rc == 0 ]] || fail "budget of the example: exit $rc: $(head -c 600 err.txt)"
finish_case

seconds=$(awk -v a="$start_time" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "hostile_outputs: $cases cases, $failed failed ($skipped skipped) in $seconds s"
[[ $failed == 0 ]]
