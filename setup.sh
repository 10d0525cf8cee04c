#!/usr/bin/env bash
# setup.sh: the one set-up command. Installs the Debian packages qmlpipe needs, configures and
# builds it with CMake into build/, then runs the main job on the small built-in example
# (simulated maps, nside 16, |b| > 20 deg) and prints its memory report.
#   QP_SKIP_APT=1 ./setup.sh   skips the package installation
#   CI=true ./setup.sh         builds with warnings as errors
set -euo pipefail
cd "$(dirname "$0")"

# healpy-data: HEALPix's pixel window tables (/usr/share/healpy/data), for `pixel_window: true`.
packages=(build-essential cmake pkg-config libopenblas-dev liblapacke-dev libhdf5-dev
  libcfitsio-dev libchealpix-dev libbz2-dev libyaml-dev libopenmpi-dev openmpi-bin
  libscalapack-openmpi-dev healpy-data python3-numpy python3-h5py python3-matplotlib file
  xz-utils)
if [ "${QP_SKIP_APT:-0}" != 1 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null
fi

werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQP_WERROR=$werror \
  -DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON
cmake --build build -j "$(nproc)"

qmlpipe=build/pipeline/qmlpipe
$qmlpipe simulate --example build/example --cls data/cls_planck2015_lcdm.txt
$qmlpipe budget build/example/config.yaml
$qmlpipe run build/example/config.yaml
$qmlpipe report build/example/results.h5
