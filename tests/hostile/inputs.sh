#!/usr/bin/env bash
# inputs.sh: inputs that are not files (issue 38, "Hostile inputs, second round").
#   inputs.sh QMLPIPE CLS WORK
# Every file qmlpipe reads goes through one check (base/input_file.h): it is opened without
# blocking and refused unless its descriptor is a regular file, a name with a blank at an end
# is refused, text inputs are bounded to 1 GiB. Here each input a user names, through each
# command that reads it:
#   the config (run, budget, plan, report CONFIG, validate CONFIG); its keys maps[0], maps[1],
#   mask, mask_pol (TQU), cls, bins, noise.variance_map, noise.covariance, memory.calibration,
#   pixel_window_file (run; the ones the plan reads through budget too); $QMLPIPE_CALIBRATION (budget); the
#   results file of report and validate (argument, or the config's output); validate's --sacct
#   and --cgroup-peak files; simulate's --cls; a checkpoint (run --resume)
# is replaced by each hostile kind:
#   fifo (mkfifo, no writer), null (/dev/null), zero (/dev/zero), dir (a directory), sock (a
#   Unix socket), linkfifo (a symlink to a FIFO), missing, lead (' name': a blank before the
#   name of a file that exists), trail ('name '), huge (a sparse 1 GiB + 1 MiB file: text
#   inputs only).
# Each case asserts: the exit status (8 for what is not a regular file or cannot be opened, 6
# for a blank or an oversized text file; README "Exit status"), that the message names the
# file's role, the path and its kind, that it ends within `timeout 20` (KILL 5 s later; a hang
# is a failure), and that nothing was written or lost (the tree of inputs, hostile objects and
# outputs is the same before and after: no results file, no temporary, every input in place,
# unchanged).
# Positive controls (exit 0) show each config is good but for the key a case replaces.
# Prints "hostile_inputs: N cases, M failed"; exit 1 when any failed.
set -uo pipefail
qmlpipe=$(realpath "$1") cls_src=$(realpath "$2") work=$(realpath -m "$3")
export QP_WARM_UP=0 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset QMLPIPE_CALIBRATION QP_FAULT QP_TEST_STOP_AFTER_STAGE
start=$(date +%s.%N)
rm -rf "$work"
mkdir -p "$work"/{in,h,out} || exit 1
cd "$work" || exit 1

cases=0 failed=0 allow_writes=0
log=$work/case.log

# --- The tiny valid inputs: nside 4, two T maps, a TQU map, mask, C_ell to ell 11, bins, a
# calibration file, a sacct file. The mask (all ones) serves as a T variance map too.
"$qmlpipe" simulate --cls "$cls_src" --nside 4 --n-maps 2 --mask in/mask.fits --out in/map \
  --noise-variance 100 >/dev/null 2>&1 || { echo "simulate (T) failed"; exit 1; }
"$qmlpipe" simulate --cls "$cls_src" --nside 4 --fields TQU --out in/tqu --noise-variance 100 \
  >/dev/null 2>&1 || { echo "simulate (TQU) failed"; exit 1; }
awk '/^#/ || $1 <= 11' "$cls_src" >in/cls.txt
printf '2 5\n6 11\n' >in/bins.txt
# HEALPix's pixel window table of nside 4 (Debian's healpy-data, which setup.sh installs).
cp /usr/share/healpy/data/pixel_window_n0004.fits in/pixwin.fits ||
  { echo "no HEALPix pixel window table: apt-get install healpy-data"; exit 1; }
printf 'overhead_bytes 25165824\nprogram_bytes 4194304\nblas_bytes 20971520\nhdf5_bytes 0\n' \
  >in/cal.txt
printf 'JobID|State|MaxRSS\n1|COMPLETED|\n1.0|COMPLETED|1000000\n' >in/sacct.txt

# --- The hostile objects. Each kind exists under plain names and as .yaml / .h5 (report and
# validate take a .yaml argument for a config).
mkfifo h/fifo h/fifo.yaml h/fifo.h5
ln -s /dev/null h/null.yaml
ln -s /dev/zero h/zero.yaml
ln -s /dev/null h/null.h5
ln -s /dev/zero h/zero.h5
mkdir h/dir h/dir.yaml h/dir.h5
ln -s fifo h/linkfifo
ln -s fifo.yaml h/linkfifo.yaml
ln -s fifo.h5 h/linkfifo.h5
truncate -s 1025M h/huge
truncate -s 1025M h/huge.yaml
have_socket=0
if python3 -c 'import socket, sys
for p in sys.argv[1:]:
    socket.socket(socket.AF_UNIX).bind(p)' h/sock h/sock.yaml h/sock.h5 2>/dev/null; then
  have_socket=1
else
  echo "note: no python3 to make a Unix socket: the sock kind is left out"
fi

# path_of KIND EXT REAL: the hostile path for KIND (EXT "", .yaml or .h5); REAL is the name of
# a real file that the blank kinds put a blank before or after.
path_of() {
  local kind=$1 ext=$2 real=$3
  case $kind in
  null) [[ -z $ext ]] && echo /dev/null || echo "$work/h/null$ext" ;;
  zero) [[ -z $ext ]] && echo /dev/zero || echo "$work/h/zero$ext" ;;
  missing) echo "$work/h/missing$ext" ;;
  lead) echo " $real" ;;
  trail) echo "$real " ;;
  *) echo "$work/h/$kind$ext" ;;
  esac
}
# What the message says of each kind, and the exit status.
words_of() {
  case $1 in
  fifo | linkfifo) echo "is a named pipe (FIFO), not a regular file" ;;
  null | zero) echo "is a character device, not a regular file" ;;
  dir) echo "is a directory, not a regular file" ;;
  sock) echo "is a socket, not a regular file" ;;
  missing) echo "No such file or directory" ;;
  lead) echo "begins with a blank" ;;
  trail) echo "ends with a blank" ;;
  huge) echo "more than the 1.000 GiB" ;;
  esac
}
status_of() { case $1 in lead | trail | huge) echo 6 ;; *) echo 8 ;; esac; }
binary_kinds="fifo null zero dir linkfifo missing lead trail"
((have_socket)) && binary_kinds="$binary_kinds sock"
text_kinds="$binary_kinds huge"

# The tree that must not change: every path with its kind, and for regular files their size
# and modification time (directories' times move with the configs written and removed here).
# A checkpoint directory's lock file (qmlpipe.lock) is the run's own: each run that gets as far
# as the checkpoints takes it and writes its pid there, so it is left out.
snapshot() {
  find "$work/in" "$work/h" "$work/out" "$work/ck" \( -type f ! -name qmlpipe.lock \
    -printf '%p f %s %T@\n' \) -o \( ! -type f -printf '%p %y\n' \) 2>/dev/null | LC_ALL=C sort
}

# check NAME EXPECTED_STATUS WORDS... -- COMMAND...: runs COMMAND (timeout 20) from $work and
# judges it; every WORDS argument must be in its output.
check() {
  local name=$1 expected=$2
  shift 2
  local words=()
  while [[ $1 != -- ]]; do
    words+=("$1")
    shift
  done
  shift
  local before after status=0 t0 t1
  before=$(snapshot)
  t0=$(date +%s.%N)
  timeout -k 5 20 "$@" >"$log" 2>&1 || status=$?
  t1=$(date +%s.%N)
  after=$(snapshot)
  cases=$((cases + 1))
  local problems=()
  if [[ $status == 124 ]]; then
    problems+=("hung: no end within 20 s")
  elif [[ $status != "$expected" ]]; then
    problems+=("exit $status, expected $expected")
  fi
  local w
  for w in "${words[@]}"; do
    grep -qF -- "$w" "$log" || problems+=("no '$w' in the message")
  done
  if ((!allow_writes)) && [[ $before != "$after" ]]; then
    problems+=("files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -4 |
      tr '\n' ' ')")
  fi
  if ((${#problems[@]})); then
    failed=$((failed + 1))
    printf 'FAIL %s: %s\n' "$name" "${problems[*]}"
    sed 's/^/    /' "$log" | head -8
  else
    printf 'ok   %s: exit %s in %.2f s: %s\n' "$name" "$status" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
      "$(grep -m1 'error' "$log" | cut -c1-150)"
  fi
}

# gen_cfg FILE KEY VALUE: a config in in/ (paths relative to it), good but for KEY.
gen_cfg() {
  local file=$1 key=$2 val=$3
  local map0=map_0000.fits map1=map_0001.fits mask=mask.fits mpol="" cls=cls.txt fields=T
  local spectra="[TT]" noise="{variance: 100}" bins="" cal="" out="$work/out/results.h5" pwf=""
  case $key in
  maps0) map0=$val ;;
  maps1) map1=$val ;;
  mask) mask=$val ;;
  mask_pol) fields=TQU map0=tqu_0000.fits map1="" mpol=$val spectra="[TT, EE]" ;;
  cls) cls=$val ;;
  bins) bins=$val ;;
  var) noise="{variance_map: \"$val\"}" ;;
  cov) noise="{covariance: \"$val\", dataset: /covariance}" ;;
  cal) cal=$val ;;
  pwf) pwf=$val ;;
  output) out=$val ;;
  esac
  {
    if [[ -n $map1 ]]; then echo "maps: [\"$map0\", \"$map1\"]"; else echo "maps: [\"$map0\"]"; fi
    echo "mask: \"$mask\""
    [[ -z $mpol ]] || echo "mask_pol: \"$mpol\""
    echo "fields: $fields"
    echo "cls: \"$cls\""
    echo "noise: $noise"
    echo "spectra: $spectra"
    echo "lmax: 11"
    if [[ -n $bins ]]; then echo "bins: \"$bins\""; else echo "bin_width: 2"; fi
    echo "path: pixel_direct"
    [[ -z $pwf ]] || printf 'pixel_window: true\npixel_window_file: "%s"\n' "$pwf"
    echo "output: \"$out\""
    if [[ -n $cal ]]; then echo "memory: {host_limit: 8GiB, calibration: \"$cal\"}"; else
      echo "memory: {host_limit: 8GiB}"; fi
  } >"$file"
}

# The role each key's messages name, and the real file a blank kind puts a blank beside.
role_of() {
  case $1 in
  maps0) echo "map file (maps[0])" ;; maps1) echo "map file (maps[1])" ;;
  mask) echo "mask file" ;; mask_pol) echo "mask_pol file" ;; cls) echo "C_ell file" ;;
  bins) echo "bins file" ;; var) echo "noise variance map" ;;
  cov) echo "noise covariance file" ;; cal) echo "calibration file" ;;
  pwf) echo "pixel window table" ;;
  esac
}
real_of() {
  case $1 in
  maps0) echo map_0000.fits ;; maps1) echo map_0001.fits ;; mask | mask_pol | var) echo mask.fits ;;
  cls) echo cls.txt ;; bins) echo bins.txt ;; cal) echo cal.txt ;; cov) echo map_0000.fits ;;
  pwf) echo pixwin.fits ;;
  esac
}
is_text() { case $1 in cls | bins | cal) return 0 ;; *) return 1 ;; esac; }

# --- Positive controls: each key given its good file runs (exit 0); the results are removed.
allow_writes=1
for key in maps0 mask_pol cls bins var cal pwf; do
  gen_cfg in/good.yaml "$key" "$(real_of "$key")"
  rm -f out/results.h5
  check "control run ($key good)" 0 "results:" -- "$qmlpipe" run in/good.yaml --quiet
  [[ -f out/results.h5 ]] || { failed=$((failed + 1)); echo "FAIL control $key: no results file"; }
  rm -f out/results.h5 in/good.yaml
done
# One results file kept for report, validate and --sacct.
gen_cfg in/keep.yaml output good.h5
"$qmlpipe" run in/keep.yaml --quiet >/dev/null 2>&1 || { echo "the results run failed"; exit 1; }
check "control report" 0 "baseline" -- "$qmlpipe" report in/good.h5
check "control validate" 0 "" -- "$qmlpipe" validate in/good.h5
allow_writes=0
# Files whose names have a blank at an end beside the real one: a config's output that names
# one exists, so what refuses it is the blank, not its absence.
cp in/good.h5 "in/ good.h5"
cp in/good.h5 "in/good.h5 "

# --- 1. The config itself, through every command that reads one.
for kind in $text_kinds; do
  p=$(path_of "$kind" .yaml in/config.yaml)
  gen_cfg in/config.yaml none ""
  role="config file"
  for cmd in run budget plan report validate; do
    r=$role
    # 'in/config.yaml ' does not end in .yaml: report and validate take it for a results file.
    [[ $kind == trail && ($cmd == report || $cmd == validate) ]] && r="results file"
    check "config $kind: $cmd" "$(status_of "$kind")" "$r" "$p" "$(words_of "$kind")" -- \
      "$qmlpipe" "$cmd" "$p"
  done
  rm -f in/config.yaml
done

# --- 2. Each key of the config, by run (and by budget for what the plan reads).
for key in maps0 maps1 mask mask_pol cls bins var cov cal pwf; do
  kinds=$binary_kinds
  is_text "$key" && kinds=$text_kinds
  for kind in $kinds; do
    p=$(path_of "$kind" "" "$(real_of "$key")")
    gen_cfg in/case.yaml "$key" "$p"
    cmds="run"
    case $key in mask | mask_pol | cls | bins | cal | pwf) cmds="run budget" ;; esac
    for cmd in $cmds; do
      check "$key $kind: $cmd" "$(status_of "$kind")" "$(role_of "$key")" "$p" \
        "$(words_of "$kind")" -- "$qmlpipe" "$cmd" in/case.yaml
    done
    rm -f in/case.yaml
  done
done
# plan reads the same files as budget: the mask and the C_ell file as a FIFO and /dev/zero.
for key in mask cls; do
  for kind in fifo zero; do
    p=$(path_of "$kind" "" "$(real_of "$key")")
    gen_cfg in/case.yaml "$key" "$p"
    check "$key $kind: plan" 8 "$(role_of "$key")" "$p" "$(words_of "$kind")" -- \
      "$qmlpipe" plan in/case.yaml
    rm -f in/case.yaml
  done
done

# --- 3. $QMLPIPE_CALIBRATION, read when the config names no calibration.
gen_cfg in/env.yaml none ""
for kind in $text_kinds; do
  p=$(path_of "$kind" "" in/cal.txt)
  check "QMLPIPE_CALIBRATION $kind: budget" "$(status_of "$kind")" "calibration file" "$p" \
    "$(words_of "$kind")" -- env QMLPIPE_CALIBRATION="$p" "$qmlpipe" budget in/env.yaml
done
rm -f in/env.yaml

# --- 4. Results files: the argument of report and validate, and a config's output.
for kind in $binary_kinds; do
  p=$(path_of "$kind" .h5 in/good.h5)
  for cmd in report validate; do
    check "results $kind: $cmd" "$(status_of "$kind")" "results file" "$p" "$(words_of "$kind")" \
      -- "$qmlpipe" "$cmd" "$p"
  done
  [[ $kind == lead || $kind == trail ]] && p=$(path_of "$kind" "" good.h5)
  gen_cfg in/out.yaml output "$p"
  # The config's output is found first (pipeline/cli/results_path.c), which says itself that
  # it is missing or a directory; every other kind reaches the results reader's check.
  role="results file" words=$(words_of "$kind")
  case $kind in
  dir) role="names the results file" words="which is a directory" ;;
  missing) role="names the results file" words="which cannot be opened: No such file" ;;
  esac
  check "output $kind: report CONFIG" "$(status_of "$kind")" "$role" "$p" "$words" -- \
    "$qmlpipe" report in/out.yaml
  rm -f in/out.yaml
done

# --- 5. validate --sacct FILE and --cgroup-peak FILE.
for kind in $text_kinds; do
  p=$(path_of "$kind" "" in/sacct.txt)
  check "sacct $kind: validate --sacct" "$(status_of "$kind")" "sacct file (--sacct)" "$p" \
    "$(words_of "$kind")" -- "$qmlpipe" validate in/good.h5 --sacct "$p"
  p=$(path_of "$kind" "" in/sacct.txt)
  check "cgroup-peak $kind: validate --cgroup-peak" "$(status_of "$kind")" "--cgroup-peak file" \
    "$p" "$(words_of "$kind")" -- "$qmlpipe" validate in/good.h5 --sacct in/sacct.txt \
    --cgroup-peak "$p"
done

# --- 6. simulate --cls FILE: refused before any map is written.
for kind in $text_kinds; do
  p=$(path_of "$kind" "" in/cls.txt)
  check "cls $kind: simulate --cls" "$(status_of "$kind")" "C_ell file" "$p" \
    "$(words_of "$kind")" -- "$qmlpipe" simulate --cls "$p" --nside 4 --out out/sim
done

# --- 7. A checkpoint replaced by each kind that can stand at its name, then run --resume.
gen_cfg in/ck.yaml none ""
QP_TEST_STOP_AFTER_STAGE=covariance_setup timeout 60 "$qmlpipe" run in/ck.yaml --quiet \
  --checkpoint ck >/dev/null 2>&1
stage=ck/stage-covariance_setup.rank0.h5
if [[ -f $stage ]]; then
  mv "$stage" h/stage.saved
  ck_kinds="fifo null zero dir linkfifo"
  ((have_socket)) && ck_kinds="$ck_kinds sock"
  for kind in $ck_kinds; do
    case $kind in
    fifo) mkfifo "$stage" ;; null) ln -s /dev/null "$stage" ;; zero) ln -s /dev/zero "$stage" ;;
    dir) mkdir "$stage" ;; linkfifo) ln -s "$work/h/fifo" "$stage" ;;
    sock) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$stage" ;;
    esac
    check "checkpoint $kind: run --resume" 8 "checkpoint '" "$stage" "$(words_of "$kind")" -- \
      "$qmlpipe" run in/ck.yaml --quiet --checkpoint ck --resume
    rm -rf "$stage"
  done
  mv h/stage.saved "$stage"
  # The real checkpoint resumes (this writes the results and removes the checkpoint).
  status=0
  timeout 60 "$qmlpipe" run in/ck.yaml --quiet --checkpoint ck --resume >"$log" 2>&1 || status=$?
  cases=$((cases + 1))
  if [[ $status != 0 || ! -f out/results.h5 ]] || ! grep -Eq "covariance_setup .* resumed" "$log"; then
    failed=$((failed + 1))
    echo "FAIL control resume: exit $status"
    sed 's/^/    /' "$log" | head -8
  else
    echo "ok   control resume: exit 0, continued after covariance_setup"
  fi
  rm -f out/results.h5
else
  cases=$((cases + 1)) failed=$((failed + 1))
  echo "FAIL checkpoint: the stopped run left no $stage"
fi
rm -f in/ck.yaml

# Every input is still there, unchanged (the cases checked the tree each time; this is the
# whole content once more).
for f in in/map_0000.fits in/map_0001.fits in/mask.fits in/tqu_0000.fits in/cls.txt \
  in/bins.txt in/cal.txt in/sacct.txt in/good.h5; do
  [[ -s $f ]] || { failed=$((failed + 1)); echo "FAIL: input $f lost"; }
done
[[ -p h/fifo ]] || { failed=$((failed + 1)); echo "FAIL: the FIFO is gone"; }

# The sparse 1 GiB files go (a copy of the build tree that does not keep holes would write them).
rm -f h/huge h/huge.yaml

end=$(date +%s.%N)
printf 'hostile_inputs: %d cases, %d failed (%.1f s)\n' "$cases" "$failed" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
((failed == 0))
