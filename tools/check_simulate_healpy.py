#!/usr/bin/python3
"""check_simulate_healpy.py: a manual statistical check (not a CTest) that polarised maps from
`qmlpipe simulate --fields TQU` have healpy's statistics.

It writes a 6-column C_ell file (TT EE BB TE TB EB, all correlations non-zero), simulates
N maps at nside 8 with qmlpipe (T and Q/U white noise of different variances), reads them with
healpy, and averages hp.anafast(pol=True) over the maps. The same is done for N maps from
hp.synfast (plus the same noise), for reference. The maps are band-limited at
lmax = 2 nside, where anafast's quadrature (iter 3) is accurate. Expected: C_ell + N_ell (N_ell = variance * 4pi / n_pix for
TT, EE, BB; 0 for the cross spectra). Printed per spectrum: chi^2 of (mean - expected) over
ell 2..lmax in units of the Monte-Carlo error of the mean, for qmlpipe and for healpy, and a
table of a few multipoles.

Usage (Debian's python3 with python3-healpy; from the repository root, after building):
    /usr/bin/python3 tools/check_simulate_healpy.py [QMLPIPE] [N_MAPS]
QMLPIPE defaults to build/pipeline/qmlpipe, N_MAPS to 200.
"""
import os
import subprocess
import sys
import tempfile

import healpy as hp
import numpy as np

NSIDE = 8
LMAX = 2 * NSIDE  # band limit of the simulations; anafast is accurate up to here
NOISE_T, NOISE_P = 1.0, 0.5
NAMES = ["TT", "EE", "BB", "TE", "EB", "TB"]  # anafast's and synfast(new=True)'s order


def fiducial():
    ell = np.arange(LMAX + 1)
    tt = np.zeros(LMAX + 1)
    tt[2:] = 1000.0 * 2 * np.pi / (ell[2:] * (ell[2:] + 1.0))
    ee, bb = tt / 10.0, tt / 40.0
    return {"TT": tt, "EE": ee, "BB": bb, "TE": 0.5 * np.sqrt(tt * ee),
            "TB": 0.1 * np.sqrt(tt * bb), "EB": 0.2 * np.sqrt(ee * bb)}


def mean_spectra(maps_iter):
    cls = np.array([hp.anafast(m, lmax=LMAX, pol=True) for m in maps_iter])
    return cls.mean(axis=0), cls.std(axis=0, ddof=1) / np.sqrt(len(cls))


def main():
    qmlpipe = sys.argv[1] if len(sys.argv) > 1 else "build/pipeline/qmlpipe"
    n_maps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    cl = fiducial()
    npix = hp.nside2npix(NSIDE)
    noise_cl = {"TT": NOISE_T * 4 * np.pi / npix, "EE": NOISE_P * 4 * np.pi / npix,
                "BB": NOISE_P * 4 * np.pi / npix}
    expected = np.array([cl[n] + noise_cl.get(n, 0.0) for n in NAMES])
    with tempfile.TemporaryDirectory() as tmp:
        cls_path = os.path.join(tmp, "cls.txt")
        with open(cls_path, "w") as f:
            f.write("# ell TT EE BB TE TB EB\n")
            for l in range(LMAX + 1):
                f.write("%d %s\n" % (l, " ".join("%.17e" % cl[n][l]
                                                 for n in ["TT", "EE", "BB", "TE", "TB", "EB"])))
        prefix = os.path.join(tmp, "sim")
        subprocess.run([qmlpipe, "simulate", "--cls", cls_path, "--nside", str(NSIDE),
                        "--lmax", str(LMAX), "--ell-min", "0", "--fields", "TQU",
                        "--noise-variance", str(NOISE_T), "--noise-variance-pol", str(NOISE_P),
                        "--n-maps", str(n_maps), "--seed", "7", "--out", prefix], check=True)
        paths = ["%s_%04d.fits" % (prefix, k) for k in range(n_maps)]
        qp_mean, qp_err = mean_spectra(hp.read_map(p, field=(0, 1, 2)) for p in paths)

    rng = np.random.default_rng(7)
    spectra = [cl[n] for n in NAMES]

    def healpy_maps():
        np.random.seed(11)
        for _ in range(n_maps):
            m = np.array(hp.synfast(spectra, NSIDE, lmax=LMAX, new=True, pixwin=False))
            m[0] += rng.normal(0, np.sqrt(NOISE_T), npix)
            m[1:] += rng.normal(0, np.sqrt(NOISE_P), (2, npix))
            yield m
    hp_mean, hp_err = mean_spectra(healpy_maps())

    np.seterr(divide="ignore", invalid="ignore")  # cross spectra are exactly 0 at ell < 2
    ells = np.arange(2, LMAX + 1)
    dof = len(ells)
    print("healpy %s, nside %d, lmax %d, %d maps each; chi^2 over ell 2..%d (%d dof) of "
          "(mean - expected) / MC error:" % (hp.__version__, NSIDE, LMAX, n_maps, LMAX, dof))
    print("  spectrum   qmlpipe chi2   healpy chi2   qmlpipe-healpy chi2")
    worst = 0.0
    for i, n in enumerate(NAMES):
        c_qp = np.sum(((qp_mean[i] - expected[i]) / qp_err[i])[ells] ** 2)
        c_hp = np.sum(((hp_mean[i] - expected[i]) / hp_err[i])[ells] ** 2)
        c_d = np.sum(((qp_mean[i] - hp_mean[i]) ** 2 / (qp_err[i] ** 2 + hp_err[i] ** 2))[ells])
        worst = max(worst, c_qp)
        print("  %-8s   %12.1f   %11.1f   %19.1f" % (n, c_qp, c_hp, c_d))
    print("\n  ell spec     expected   qmlpipe mean +- err      healpy mean +- err")
    for l in (2, 3, 5, 8, 12, LMAX):
        for i, n in enumerate(NAMES[:4]):
            print("  %3d %-4s %12.5g   %10.5g +- %-9.3g   %10.5g +- %-9.3g"
                  % (l, n, expected[i][l], qp_mean[i][l], qp_err[i][l], hp_mean[i][l],
                     hp_err[i][l]))
    # chi^2 with 15 dof: mean 15, sd ~5.5; 40 is far in the tail (p ~ 5e-4).
    print("\nPASS" if worst < 40 else "\nFAIL: a spectrum is off by more than Monte-Carlo error")
    return 0 if worst < 40 else 1


if __name__ == "__main__":
    sys.exit(main())
