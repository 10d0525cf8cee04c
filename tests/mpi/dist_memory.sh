#!/usr/bin/env bash
# dist_memory.sh: the memory model against each rank's measured RSS on the dist backend
# (ScaLAPACK) for a harmonic route whose stages are tens of MiB a rank: T nside 16,
# |b| > 20 deg (1984 pixels), ell 2..47 (n_modes 2300), 2 maps, on 2 ranks (1 x 2); the
# projection route Q and U (n_pix 3968, n_modes 4600).
#   dist_memory.sh QMLPIPE MPIEXEC WORKDIR METHOD  (METHOD: smw, projected or projected_narrow)
# projected_narrow: 80 maps (read in the default batches, 64 here), block 16 (a panel unit of 32 of the
# 2304 (l, m) columns; block 64's 128 is the default panel here already) and a
# memory.host_limit 1-2 MiB above the peak at the projection's narrowest product panel, which
# the plan prints: the windows and Z's lined-up columns come in panels narrower than the
# default (issue 42).
# `qmlpipe validate --tolerance 0.02` must pass on every stage it judges (16 MiB and up):
# pdgetrs's and pdgemr2d's buffers, outside the budget, once put SMW's fisher_run 34.7% above
# its model here (docs/distributed.md, "SMW's solves"); this keeps that from coming back.
set -euo pipefail
qmlpipe=$1 mpiexec=$2 work=$3 method=$4
cls=$(cd "$(dirname "$0")/../../data" && pwd)/cls_planck2015_lcdm.txt
dir=$work/dist_memory_$method
rm -rf "$dir" && mkdir -p "$dir"
fields=T spectra=TT n_maps=2 harmonic=$method
[[ $method == projected* ]] && fields=QU spectra="EE, BB" harmonic=projected
block=()
[[ $method == projected_narrow ]] && n_maps=80 block=(--block 16)
"$qmlpipe" simulate --cls "$cls" --nside 16 --lmax 47 --noise-variance 100 --n-maps $n_maps --fields $fields \
  --seed 3 --out "$dir/map" --mask "$dir/mask.fits" --galactic-cut 20 >/dev/null
# Projection keeps Z (n_pix x n_modes) alone after fisher_run (L goes there): with T's 17.5
# MiB a rank, the heap's run-to-run 0.2-0.4 MiB was 2% of it; Q and U double both sides.
cat >"$dir/config.yaml" <<YAML
maps: [$(cd "$dir" && ls map_*.fits | paste -sd, -)]
mask: mask.fits
fields: $fields
cls: $cls
noise: {variance: 100}
spectra: [$spectra]
lmax: 47
bin_width: 4
path: harmonic
harmonic_method: $harmonic
output: results.h5
YAML
if [[ $method == projected_narrow ]]; then
  # The default panel (2304: whole) and the limit: 1-2 MiB above the peak at the narrowest
  # panel, as the plan's reason prints them.
  read -r default_panel narrowest < <("$qmlpipe" plan "$dir/config.yaml" --ranks 2 "${block[@]}" \
    --json | /usr/bin/python3 -c '
import json, re, sys
reason = json.load(sys.stdin)["reason"]
p = re.search(r"in panels of ([0-9]+) of 2304", reason)
m = re.search(r"([0-9.]+) (GiB|MiB) at the narrowest panel", reason)
print(p.group(1) if p else 2304, int(float(m.group(1)) * (1024 if m.group(2) == "GiB" else 1)) + 1 if m else "")')
  [[ -n $narrowest ]] || { echo "dist_memory: the plan names no narrowest panel" >&2; exit 1; }
  printf 'memory: {host_limit: %dMiB}\n' "$((narrowest + 1))" >>"$dir/config.yaml"
  "$qmlpipe" plan "$dir/config.yaml" --ranks 2 "${block[@]}" >"$dir/plan.log" 2>&1 ||
    { cat "$dir/plan.log"; exit 1; }
  panel=$(sed -n 's/.*in panels of \([0-9]*\) of 2304 (l, m) columns for memory.host_limit.*/\1/p' \
    "$dir/plan.log")
  [[ -n $panel && $panel -lt $default_panel ]] || { cat "$dir/plan.log"
    echo "dist_memory: the limit did not narrow the product panels below $default_panel" >&2; exit 1; }
  echo "dist_memory: product panels of $panel of 2304 (l, m) columns (default $default_panel)"
  grep -q "maps in batches of" "$dir/plan.log" ||
    { cat "$dir/plan.log"; echo "dist_memory: 80 maps in one batch" >&2; exit 1; }
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
(cd "$dir" && "$mpiexec" -n 2 --oversubscribe --allow-run-as-root --bind-to none \
  "$qmlpipe" run config.yaml "${block[@]}" --quiet >run.log 2>&1) || { cat "$dir/run.log"; exit 1; }
if ! "$qmlpipe" validate --tolerance 0.02 "$dir/results.h5" >"$dir/validate.log" 2>&1; then
  cat "$dir/validate.log"
  echo "dist_memory: $method on 2 ranks: the model is off by more than 2% (above)" >&2
  exit 1
fi
judged=$(sed -n 's/^\([0-9]*\) judged stage(s).*/\1/p' "$dir/validate.log")
[[ ${judged:-0} -ge 2 ]] || { cat "$dir/validate.log"; echo "dist_memory: fewer than 2 stages judged" >&2; exit 1; }
grep -E "basis_setup|fisher_run" "$dir/validate.log" | grep "results.h5"
echo "dist_memory: $method on 2 ranks: $judged stage(s) judged, all within 2%"
