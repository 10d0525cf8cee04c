#!/usr/bin/python3
"""test_mc_spectra.py QMLPIPE SOURCE_DIR WORK_DIR: tools/mc_spectra.py on auto-spectra.

- 50 simulations of a T config at nside 8 (|b| > 20 deg, noise 100, ell 2..16 in bins of 1:
  unbinned, so the mean of C_hat is the fiducial itself without window functions), one
  `qmlpipe run` each: every parameter's bias and variance ratio (sample variance of C_hat over
  /spectra/covariance's diagonal) and the chi^2 of the mean within 5 sigma of their sampling
  errors for N = 50 (--check 5; the ratio's sigma is at least sqrt(2 / 49) = 0.20), and
  tr(Cov^-1 S) / n_params within 0.4 of 1 (Gaussian sd 0.05; C_hat at low ell has heavier
  tails); the figures printed. Seeds are fixed.
- --maps-per-run 5 (10 runs of 5 maps each, other seeds): the same figures within the same
  tolerances.
- --cross writes maps2 (the pair's maps, kept with --work) and noise2 into the runs' configs.
- refusals: a missing config, noise that is not white, --noise2-variance without --cross, a
  config qmlpipe refuses (the run's message shown), qmlpipe missing, usage errors.
Exit 77 (skipped) when h5py, numpy, PyYAML or astropy is missing.
"""
import json
import os
import shutil
import subprocess
import sys

try:
    import astropy  # noqa: F401  (what the tool needs)
    import h5py  # noqa: F401
    import numpy  # noqa: F401
    import yaml
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

QMLPIPE, SOURCE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TOOL = os.path.join(SOURCE, "tools", "mc_spectra.py")
failures = []

CONFIG = """maps: [unused_0000.fits]
mask: mask.fits
fields: T
cls: cls.txt
noise: {variance: 100}
spectra: [TT]
ell_min: 2
lmax: 16
bin_width: 1
path: pixel_direct
output: results.h5
"""


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def tool(*args):
    r = subprocess.run([sys.executable, TOOL, "--qmlpipe", QMLPIPE, *args], capture_output=True,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def expect_refused(status_wanted, words, *args):
    status, out, err = tool(*args)
    check(status == status_wanted and all(w in err for w in words),
          f"mc_spectra.py {' '.join(args)}: exit {status_wanted} and {words}: got {status}: "
          f"{err.strip()[-400:]}")


def campaign(name, *extra):
    status, out, err = tool("config.yaml", "--n-sims", "50", "--check", "5", "--json",
                            f"{name}.json", *extra)
    print(out + err)
    check(status == 0, f"{name}: 50 simulations within 5 sigma (exit {status})")
    if not os.path.exists(f"{name}.json"):
        check(False, f"{name}: no {name}.json")
        return
    with open(f"{name}.json") as f:
        fig = json.load(f)
    ratios, sigmas = fig["variance_ratio"], fig["variance_ratio_sigmas"]
    check(fig["n_sims"] == 50 and fig["n_params"] == 15 and len(ratios) == 15,
          f"{name}: 50 simulations of 15 parameters")
    check(all(abs(z) <= 5 for z in sigmas) and all(abs(b) <= 5 for b in fig["bias_sigmas"]),
          f"{name}: variance ratios {min(ratios):.2f}..{max(ratios):.2f} (worst "
          f"{max(abs(z) for z in sigmas):.2f} sigma), biases within 5 sigma")
    check(abs(fig["trace_ratio"] - 1) <= 0.4,
          f"{name}: tr(Cov^-1 S) / n_params {fig['trace_ratio']:.3f} within 0.4 of 1")
    # qmlpipe writes /spectra/window: the fiducial is binned through it
    check(fig["covariance"] == "/spectra/covariance" and fig["fiducial_binning"] == "window",
          f"{name}: covariance from {fig['covariance']}, fiducial {fig['fiducial_binning']}")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chdir(WORK)
    shutil.copy(os.path.join(SOURCE, "data", "cls_planck2015_lcdm.txt"), "cls.txt")
    subprocess.run([QMLPIPE, "simulate", "--cls", "cls.txt", "--nside", "8", "--out", "unused",
                    "--mask", "mask.fits", "--galactic-cut", "20"], check=True,
                   capture_output=True)
    with open("config.yaml", "w") as f:
        f.write(CONFIG)

    campaign("one_map_a_run")
    campaign("five_maps_a_run", "--maps-per-run", "5", "--seed", "101")

    # --cross: the runs' configs name the pairs and their noise (kept with --work). qmlpipe
    # without maps2 refuses the config (exit 1); with it the campaign runs.
    status, out, err = tool("config.yaml", "--n-sims", "2", "--cross", "--noise2-variance",
                            "50", "--work", "cross_work")
    run_cfg = os.path.join("cross_work", "run_0000.yaml")
    cfg = yaml.safe_load(open(run_cfg)) if os.path.exists(run_cfg) else {}
    maps2 = cfg.get("maps2", [])
    check(len(maps2) == 1 and os.path.isabs(maps2[0]) and os.path.exists(maps2[0]) and
          os.path.isabs(cfg.get("maps", [""])[0]) and os.path.isabs(cfg.get("mask", "")) and
          cfg.get("noise2") == {"variance": 50.0} and "output" not in cfg,
          f"--cross: {run_cfg} names the pair {maps2} and noise2 {cfg.get('noise2')} "
          f"(exit {status}{': ' + err.strip()[-200:] if status else ''})")

    # Refusals.
    expect_refused(1, ["'missing.yaml'", "does not exist"], "missing.yaml")
    with open("map_noise.yaml", "w") as f:
        f.write(CONFIG.replace("{variance: 100}", "{variance_map: var.fits}"))
    expect_refused(1, ["'noise'", "white noise only"], "map_noise.yaml")
    with open("list.yaml", "w") as f:
        f.write("- a\n- b\n")
    expect_refused(1, ["'list.yaml'", "not a mapping"], "list.yaml")
    with open("no_mask.yaml", "w") as f:
        f.write(CONFIG.replace("mask: mask.fits\n", ""))
    expect_refused(1, ["'no_mask.yaml'", "no 'mask'"], "no_mask.yaml")
    with open("text_mask.yaml", "w") as f:
        f.write(CONFIG.replace("mask: mask.fits", "mask: cls.txt"))
    expect_refused(1, ["cannot read the mask", "cls.txt"], "text_mask.yaml")
    with open("bad_fields.yaml", "w") as f:
        f.write(CONFIG.replace("fields: T", "fields: XYZ"))
    expect_refused(1, ["simulation 0 (qmlpipe simulate) failed", "--fields"], "bad_fields.yaml",
                   "--n-sims", "2")
    expect_refused(1, ["--noise2-variance", "need --cross"], "config.yaml",
                   "--noise2-variance", "3")
    with open("refused.yaml", "w") as f:
        f.write(CONFIG.replace("spectra: [TT]", "spectra: [EE]"))
    expect_refused(1, ["run 0", "failed", "EE"], "refused.yaml", "--n-sims", "2")
    r = subprocess.run([sys.executable, TOOL, "config.yaml", "--qmlpipe", "no/qmlpipe"],
                       capture_output=True, text=True)
    check(r.returncode == 1 and "qmlpipe not found at 'no/qmlpipe'" in r.stderr,
          f"qmlpipe missing: exit 1 naming it: {r.returncode} {r.stderr.strip()}")
    expect_refused(2, ["--n-sims must be at least 2"], "config.yaml", "--n-sims", "1")
    expect_refused(2, ["--maps-per-run"], "config.yaml", "--maps-per-run", "0")
    expect_refused(2, ["--noise2-variance"], "config.yaml", "--cross", "--noise2-variance", "-1")
    expect_refused(2, ["--check"], "config.yaml", "--check", "0")
    r = subprocess.run([sys.executable, TOOL, "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "Wilson-Hilferty" in r.stdout, "--help")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
