#!/usr/bin/python3
"""test_plot_spectra.py QMLPIPE SOURCE_DIR WORK_DIR: tools/plot_spectra.py, headless.

- an auto-spectra file from today's qmlpipe (`simulate --example` at nside 8, `run`): a
  non-empty PNG per map and with --mean; the fiducial flat-binned (the file has no
  /spectra/window);
- a cross-spectra file written here with h5py in the format of docs/output.md (cross = 1,
  TT EE BB TE, /spectra/window and /spectra/window_ell, no /spectra/window_spectrum): a PNG
  and a PDF; the binned fiducial through window functions whose rows are known (a top hat
  gives the flat mean, a delta at ell its C_ell, a leak from EE into BB adds EE);
- the refusals: a missing file, a file that is not HDF5, one without /spectra, a fiducial
  that is not found (and --cls naming a missing file), --mean with one map, a window whose
  columns are not a block per spectrum, and usage errors.
Exit 77 (skipped) when h5py, numpy or matplotlib is missing.
"""
import os
import shutil
import subprocess
import sys

try:
    import h5py
    import matplotlib  # noqa: F401  (what the tool needs)
    import numpy as np
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

QMLPIPE, SOURCE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TOOL = os.path.join(SOURCE, "tools", "plot_spectra.py")
sys.path.insert(0, os.path.join(SOURCE, "tools"))
from spectra_results import binned_fiducial, read_cls, read_results  # noqa: E402

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def tool(*args):
    r = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def expect_png(path, *args):
    status, text = tool(*args, path)
    magic, size = b"", 0
    if os.path.exists(path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            magic = f.read(8)
    check(status == 0 and size > 10000 and
          magic.startswith(b"\x89PNG" if path.endswith(".png") else b"%PDF"),
          f"plot_spectra.py {' '.join(args)} {os.path.basename(path)}: a non-empty figure "
          f"(exit {status}) {text.strip()}")


def expect_refused(status_wanted, words, *args):
    status, text = tool(*args)
    check(status == status_wanted and all(w in text for w in words),
          f"refused with exit {status_wanted} and {words}: got {status}: {text.strip()[-300:]}")


def cross_file(path, cls_path, n_maps=3, window="structured"):
    """A cross-spectra results file as docs/output.md describes it, TT EE BB TE, ell 2..11 in
    bins of 2; window rows: a top hat over the bin with, for BB, a leak from EE."""
    spectra, ell_min, lmax, width = ["TT", "EE", "BB", "TE"], 2, 11, 2
    n_bins = (lmax - ell_min + 1) // width
    n_params, n_ell = len(spectra) * n_bins, lmax - ell_min + 1
    cls = read_cls(cls_path)
    w = np.zeros((n_params, len(spectra) * n_ell))
    for s, name in enumerate(spectra):
        for b in range(n_bins):
            p = s * n_bins + b
            for ell in range(ell_min + b * width, ell_min + (b + 1) * width):
                w[p, s * n_ell + ell - ell_min] = 1.0 / width
            if name == "BB":  # a leak of EE into BB, 1% per ell of the bin
                for ell in range(ell_min + b * width, ell_min + (b + 1) * width):
                    w[p, 1 * n_ell + ell - ell_min] = 0.01
    ells = np.tile(np.arange(ell_min, lmax + 1), len(spectra))
    if window == "bad":  # a column short: not a block per spectrum
        w, ells = w[:, :-1], ells[:-1]
    lo = np.array([ell_min + (p % n_bins) * width for p in range(n_params)], dtype=np.int32)
    truth = binned_fiducial({"window": None, "spectrum": [spectra[p // n_bins] for p in
                             range(n_params)], "ell_min": lo, "ell_max": lo + width - 1,
                             "path": path}, cls)[0]
    rng = np.random.default_rng(5)
    err = 0.1 * np.abs(truth) + 1e-3
    with h5py.File(path, "w") as f:
        f["fisher"] = np.diag(1.0 / err ** 2)
        f["spectra/cl"] = truth + err * rng.standard_normal((n_maps, n_params))
        f["spectra/yb"] = np.zeros((n_maps, n_params))
        f["spectra/noise_bias"] = np.zeros(n_params)
        f["spectra/covariance"] = np.diag(err ** 2)
        f["spectra/error"] = err
        f["spectra/window"] = w
        f["spectra/window_ell"] = ells
        f["params/spectrum"] = np.array([spectra[p // n_bins] for p in range(n_params)],
                                        dtype="S2")
        f["params/bin"] = np.array([p % n_bins for p in range(n_params)], dtype=np.int32)
        f["params/ell_min"] = lo
        f["params/ell_max"] = lo + width - 1
        for k, v in {"cross": 1, "ell_min": ell_min, "lmax": lmax, "n_bins": n_bins,
                     "n_params": n_params, "n_maps": n_maps}.items():
            f.attrs[k] = np.int64(v)
        f.attrs["cls"] = cls_path
        f.attrs["fields"] = "TQU"
        f.attrs["spectra"] = ",".join(spectra)
    return cls, n_bins, width


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chdir(WORK)
    cls_path = os.path.join(SOURCE, "data", "cls_planck2015_lcdm.txt")

    # Auto-spectra from today's qmlpipe.
    subprocess.run([QMLPIPE, "simulate", "--example", "ex", "--cls", cls_path, "--nside", "8"],
                   check=True, capture_output=True)
    subprocess.run([QMLPIPE, "run", "ex/config.yaml", "--quiet"], check=True,
                   capture_output=True)
    expect_png("auto.png", "ex/results.h5")
    expect_png("auto_mean.png", "ex/results.h5", "--mean")
    expect_png("auto_cls.png", "ex/results.h5", "--cls", cls_path, "--max-maps", "1")
    res = read_results("ex/results.h5")
    binned, how = binned_fiducial(res, read_cls("ex/cls.txt"))
    # qmlpipe writes /spectra/window: the fiducial goes through it, sum_ell W_0,ell C_ell
    with h5py.File("ex/results.h5", "r") as f:
        w0 = f["spectra/window"][0, :]
        ells = f["spectra/window_ell"][()]
    tt = read_cls("ex/cls.txt")["TT"]
    through = float(np.dot(w0, tt[ells]))
    check(how == "window" and not res["cross"] and abs(binned[0] - through) <= 1e-12 * abs(through),
          f"auto file: fiducial through the window ({how}), bin 0 {binned[0]:.6g} = {through:.6g}")

    # A cross file of the format, written here.
    cls, n_bins, width = cross_file("cross.h5", cls_path)
    expect_png("cross.png", "cross.h5")
    expect_png("cross_mean.pdf", "cross.h5", "--mean")
    res = read_results("cross.h5")
    binned, how = binned_fiducial(res, cls)
    tt0 = cls["TT"][2:4].mean()
    bb0 = cls["BB"][2:4].mean() + 0.01 * (cls["EE"][2] + cls["EE"][3])
    check(how == "window" and res["cross"], f"cross file: cross = 1, fiducial {how}")
    check(abs(binned[0] - tt0) <= 1e-12 * tt0 and abs(binned[2 * n_bins] - bb0) <= 1e-12 * bb0,
          f"window binning: TT bin 0 {binned[0]:.6g} (top hat {tt0:.6g}), BB bin 0 with the EE "
          f"leak {binned[2 * n_bins]:.6g} (expected {bb0:.6g})")

    # Refusals.
    expect_refused(1, ["missing.h5", "no such file"], "missing.h5", "x.png")
    with open("text.h5", "w") as f:
        f.write("not hdf5\n")
    expect_refused(1, ["text.h5", "not an HDF5 file"], "text.h5", "x.png")
    with h5py.File("nospectra.h5", "w") as f:
        f["fisher"] = np.eye(2)
    expect_refused(1, ["nospectra.h5", "no /spectra group"], "nospectra.h5", "x.png")
    shutil.copy("cross.h5", "lost_cls.h5")
    with h5py.File("lost_cls.h5", "a") as f:
        f.attrs["cls"] = "gone/cls.txt"
    expect_refused(1, ["'gone/cls.txt'", "--cls FILE"], "lost_cls.h5", "x.png")
    expect_refused(1, ["'nothere.txt'", "does not exist"], "cross.h5", "x.png", "--cls",
                   "nothere.txt")
    expect_png("lost_cls_override.png", "lost_cls.h5", "--cls", cls_path)
    expect_png("no_fiducial.png", "lost_cls.h5", "--no-fiducial")
    cross_file("one_map.h5", cls_path, n_maps=1)
    expect_refused(1, ["--mean needs 2 maps"], "one_map.h5", "x.png", "--mean")
    cross_file("bad_window.h5", cls_path, window="bad")
    expect_refused(1, ["/spectra/window has 39 columns", "not a whole block"], "bad_window.h5",
                   "x.png")
    shutil.copy("cross.h5", "shifted_ells.h5")
    with h5py.File("shifted_ells.h5", "a") as f:
        f["spectra/window_ell"][...] = f["spectra/window_ell"][...] + 1
    expect_refused(1, ["window_ell is not ell_min..lmax"], "shifted_ells.h5", "x.png")
    with open("short_cls.txt", "w") as f:
        f.writelines(f"{ell} 1 1 1 0\n" for ell in range(8))
    expect_refused(1, ["ends at ell 7", "reach ell 11"], "cross.h5", "x.png", "--cls",
                   "short_cls.txt")
    expect_refused(1, ["ends at ell 7", "reach ell 23"], "ex/results.h5", "x.png", "--cls",
                   "short_cls.txt")
    check(not os.path.exists("x.png"), "no figure written by a refused call")
    expect_refused(1, ["cannot write", "nodir/x.png"], "cross.h5", "nodir/x.png")
    expect_refused(2, ["usage"], "cross.h5")
    expect_refused(2, ["--max-maps"], "cross.h5", "x.png", "--max-maps", "0")
    status, text = tool("--help")
    check(status == 0 and "window functions" in text and "--mean" in text, "--help")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
