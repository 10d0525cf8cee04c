#!/usr/bin/env bash
# scaling_bench.sh: per-stage seconds and MPI traffic of small cases of each route on 1, 2 and 4
# ranks over the two-node Slurm fixture, beside the cost model's times (docs/distributed.md,
# "Scaling, measured and modelled"). Not part of CTest; run as root (the fixture needs it).
#
# usage: tools/scaling_bench.sh [QMLPIPE [OUTDIR]]
#   QP_SCALING_FIXTURE=DIR  use a running fixture (tests/slurm/slurm_fixture.sh start DIR);
#                           otherwise one is started in OUTDIR/fx (port base QP_SLURM_PORT_BASE,
#                           default 19817) and stopped at the end.
#   QP_SCALING_CASES="t16 qu8"   cases (t16: T nside 16 |b|>20 lmax 30; qu8: QU nside 8 |b|>20
#                           lmax 20; qu16: QU nside 16 |b|>20 lmax 30; 2 maps, bins of 4)
#   QP_SCALING_ROUTES="pixel_direct projected smw"
# Layouts: 1 rank; 2 ranks on 1 node; 2 ranks on 2 nodes; 4 ranks as 2 + 2. One thread a rank.
# Prints the kernel rates, the ping-pong's alpha and beta, then tools/scaling_model.py's table.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qmlpipe=$(realpath "${1:-$repo/build/pipeline/qmlpipe}")
out=$(realpath -m "${2:-$(mktemp -d "${TMPDIR:-/tmp}/qmlpipe-scaling.XXXXXX")}")
mkdir -p "$out"
fx=${QP_SCALING_FIXTURE:-}
if [[ -z $fx ]]; then
  fx=$out/fx
  QP_SLURM_PORT_BASE=${QP_SLURM_PORT_BASE:-19817} "$repo/tests/slurm/slurm_fixture.sh" start "$fx" >"$out/fixture.log" 2>&1 ||
    { tail -20 "$out/fixture.log"; exit 1; }
  trap '"$repo/tests/slurm/slurm_fixture.sh" stop "$fx" >>"$out/fixture.log" 2>&1' EXIT
fi
(($(wc -l <"$fx/nodes") >= 2)) || { echo "scaling_bench: the fixture has one node: $(cat "$fx/nodes-why" 2>/dev/null)"; exit 1; }
export SLURM_CONF=$fx/slurm.conf
# 4 ranks on 2 cores: polling ranks would starve each other (tests/slurm/test_nodes.sh).
export OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
blasdir=/usr/lib/x86_64-linux-gnu/openblas-pthread
mpicc -O2 -Wall -Wextra -shared -fPIC "$repo/tools/mpi_stage_bytes.c" -o "$out/libstagebytes.so"
mpicc -O2 -Wall -Wextra "$repo/tools/mpi_pingpong.c" -o "$out/pingpong"
cc -O2 -Wall -Wextra "$repo/tools/kernel_rates.c" -o "$out/kernel_rates" -L"$blasdir" -lopenblas -Wl,-rpath,"$blasdir"

"$out/kernel_rates" 1500 | tee "$out/rates.txt"
srun -N2 -n2 --ntasks-per-node=1 --mpi=pmix "$out/pingpong" >"$out/pingpong_2nodes.txt"
srun -N1 -n2 --mpi=pmix "$out/pingpong" >"$out/pingpong_1node.txt"
echo "between nodes (veth): $(tail -n1 "$out/pingpong_2nodes.txt")"
echo "within a node:        $(tail -n1 "$out/pingpong_1node.txt")"

cls=$repo/data/cls_planck2015_lcdm.txt
simulate() { # case
  local c=$1 nside fields
  case $c in
    t16) nside=16 fields=T ;;
    qu8) nside=8 fields=QU ;;
    qu16) nside=16 fields=QU ;;
    *) echo "scaling_bench: unknown case $c" >&2; exit 2 ;;
  esac
  "$qmlpipe" simulate --cls "$cls" --nside "$nside" --fields "$fields" --n-maps 2 --noise-variance 10 \
    --noise-variance-pol 1 --seed 5 --out "$out/$c" --mask "$out/$c-mask.fits" --galactic-cut 20 >/dev/null
}
config() { # case route label
  local c=$1 route=$2 label=$3
  echo "maps: [$out/${c}_0000.fits, $out/${c}_0001.fits]"
  echo "mask: $out/$c-mask.fits"
  echo "cls: $cls"
  case $c in
    t16) echo "fields: T"; echo "noise: {variance: 10}"; echo "spectra: [TT]"; echo "lmax: 30" ;;
    qu8) echo "fields: QU"; echo "noise: {variance_p: 1}"; echo "spectra: [EE, BB]"; echo "lmax: 20" ;;
    qu16) echo "fields: QU"; echo "noise: {variance_p: 1}"; echo "spectra: [EE, BB]"; echo "lmax: 30" ;;
  esac
  echo "bin_width: 4"
  echo "window_functions: false"
  case $route in
    pixel_direct) echo "path: pixel_direct" ;;
    projected) echo "path: harmonic"; echo "harmonic_method: projected" ;;
    smw) echo "path: harmonic"; echo "harmonic_method: smw" ;;
  esac
  echo "backend: dist"
  echo "memory: {sample_interval_ms: 0}"
  echo "output: $out/runs/$label.h5"
}
mkdir -p "$out/runs"
for c in ${QP_SCALING_CASES:-t16 qu8}; do
  simulate "$c"
  for route in ${QP_SCALING_ROUTES:-pixel_direct projected smw}; do
    # layout: name nodes ranks ranks-per-node
    for layout in "1r 1 1 1" "2r1n 1 2 2" "2r2n 2 2 1" "4r2n 2 4 2"; do
      read -r lname nodes ranks per <<<"$layout"
      label=$c-$route-$lname
      config "$c" "$route" "$label" >"$out/runs/$label.yaml"
      rm -rf "$out/runs/$label.bytes" && mkdir -p "$out/runs/$label.bytes"
      srun -N"$nodes" -n"$ranks" --ntasks-per-node="$per" --cpus-per-task=1 --mem=2G --mpi=pmix \
        --kill-on-bad-exit=1 \
        --export=ALL,LD_PRELOAD="$out/libstagebytes.so",QP_MPI_BYTES_DIR="$out/runs/$label.bytes" \
        "$qmlpipe" run "$out/runs/$label.yaml" >"$out/runs/$label.log" 2>&1 ||
        { echo "scaling_bench: $label failed ($out/runs/$label.log)"; tail -5 "$out/runs/$label.log"; }
    done
  done
done
/usr/bin/python3 "$repo/tools/scaling_model.py" "$out"
echo "output: $out"
