#!/usr/bin/python3
"""Monte Carlo check of qmlpipe's spectra: simulated maps of a config's own model, run, compared
with the fiducial and with the covariance the results file predicts.

For a config (its mask, fields, C_ell file, white noise, beam, ell_min..lmax_signal, bins,
route), N simulations: `qmlpipe simulate` with seeds S, S+1, ... draws maps from the config's
fiducial C_ell over ell_min..lmax_signal (the multipoles its signal model holds) plus its
white noise (with --cross, pairs: the same signal and independent noise, the second set's noise
from the config's noise2, --noise2-variance or the first set's), then `qmlpipe run` on a copy
of the config naming those maps (maps, and maps2 with noise2 for --cross). Then, per parameter p:
  fiducial  the fiducial binned as the estimator sees it: through the window functions
            (sum_ell W_p,ell C_ell) when the results have /spectra/window, else flat over each
            bin (exact only where C_ell is flat in a bin: use bin_width 1 to test the mean
            without window functions);
  bias      (mean C_hat - fiducial) in units of the predicted error of the mean,
            sqrt(Cov_pp / N) (Cov = /spectra/covariance; F^-1 for an auto file without it);
  ratio     the sample variance of C_hat over the predicted Cov_pp, with its sampling error
            (from the sample's own fourth moment: C_hat at low ell is far from Gaussian) and
            that deviation in sigmas;
and as summaries: chi^2 of the mean, N (m - f)^T Cov^-1 (m - f) (n_params dof, its z by
Wilson-Hilferty), the mean of the variance ratios, sum of the ratios' z^2 (chi^2-like: the
parameters are correlated), and tr(Cov^-1 S) / n_params of the whole sample covariance S
(1 expected). A benchmark-style report: it prints figures and the seconds the runs took,
and judges nothing unless --check is given (without window functions it does not judge the
means of bins wider than one ell, nor the chi^2 of the mean).
The config's noise must be white ({variance: V} or {variance_t, variance_p}): simulate draws
no other. With pixel_window: true, simulate is given --pixel-window.
Needs h5py, numpy and PyYAML, astropy (the mask's NSIDE) (Debian: python3-h5py, python3-numpy,
python3-yaml, python3-astropy, which python3-healpy brings).
Exit status: 0; 1 when a step fails (its command and output are printed) or, with --check,
when a figure is beyond the given sigmas; 2 for a usage error.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spectra_results import (SpectraError, binned_fiducial, read_cls,  # noqa: E402
                             read_results)

# Config keys that hold paths (relative to the config's directory): made absolute in the copies.
PATH_KEYS = ("mask", "mask_pol", "cls", "bins", "pixel_window_file")
NOISE_PATH_KEYS = ("variance_map", "covariance")


class McError(Exception):
    """A step that failed; the message names it."""


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default_qmlpipe = os.path.join(here, "..", "build", "pipeline", "qmlpipe")
    parser = argparse.ArgumentParser(prog="mc_spectra.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", metavar="CONFIG.yaml", help="a qmlpipe config")
    parser.add_argument("--n-sims", type=int, default=50, metavar="N",
                        help="simulations (default 50)")
    parser.add_argument("--cross", action="store_true",
                        help="cross-spectra of map pairs (implied by a config with maps2)")
    parser.add_argument("--noise2-variance", type=float, metavar="V",
                        help="with --cross and no noise2 in the config: the second set's T "
                             "(and, without --noise2-variance-pol, Q and U) variance")
    parser.add_argument("--noise2-variance-pol", type=float, metavar="V",
                        help="with --cross and no noise2 in the config: the second set's Q and "
                             "U variance")
    parser.add_argument("--seed", type=int, default=1, metavar="S",
                        help="seed of the first simulation (default 1); run i uses S + i")
    parser.add_argument("--maps-per-run", type=int, default=1, metavar="K",
                        help="maps per simulate and run (default 1: one run per simulation; "
                             "K > 1 shares each run's Fisher matrix among K maps, faster)")
    parser.add_argument("--qmlpipe", default=default_qmlpipe, metavar="PATH",
                        help="the qmlpipe program (default build/pipeline/qmlpipe beside tools/)")
    parser.add_argument("--work", metavar="DIR",
                        help="keep the maps, configs and results in DIR (default: a temporary "
                             "directory, removed at the end)")
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    parser.add_argument("--check", type=float, metavar="SIGMAS",
                        help="exit 1 when a parameter's bias or variance ratio, or the chi^2 of "
                             "the mean, is more than SIGMAS sigma off")
    args = parser.parse_args(argv)
    if args.n_sims < 2:
        parser.error("--n-sims must be at least 2 (a scatter needs two)")
    if args.maps_per_run < 1:
        parser.error("--maps-per-run must be at least 1")
    for name in ("noise2_variance", "noise2_variance_pol"):
        value = getattr(args, name)
        if value is not None and not (np.isfinite(value) and value >= 0):
            parser.error(f"--{name.replace('_', '-')} must be a finite number >= 0")
    if args.check is not None and not args.check > 0:
        parser.error("--check must be a positive number of sigmas")
    return args


def load_config(path):
    import yaml
    if not os.path.isfile(path):
        raise McError(f"the config '{path}' does not exist (or is not a regular file)")
    with open(path, "r", encoding="utf-8") as f:
        try:
            cfg = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise McError(f"the config '{path}' is not YAML: {e}")
    if not isinstance(cfg, dict):
        raise McError(f"the config '{path}' is not a mapping of keys")
    for key in ("mask", "cls", "noise", "lmax"):
        if key not in cfg:
            raise McError(f"the config '{path}' has no '{key}'")
    base = os.path.dirname(os.path.abspath(path))

    def absolute(value):
        return value if os.path.isabs(str(value)) else os.path.join(base, str(value))
    for key in PATH_KEYS:
        if key in cfg:
            cfg[key] = absolute(cfg[key])
    for key in ("noise", "noise2"):
        if isinstance(cfg.get(key), dict):
            for sub in NOISE_PATH_KEYS:
                if sub in cfg[key]:
                    cfg[key][sub] = absolute(cfg[key][sub])
    return cfg


def white_noise(cfg, key):
    """(T variance, Q and U variance) of the config's `key` (noise or noise2)."""
    noise = cfg.get(key)
    if not isinstance(noise, dict):
        raise McError(f"the config's '{key}' is not a mapping")
    if "variance" in noise:
        return float(noise["variance"]), float(noise["variance"])
    if "variance_t" in noise or "variance_p" in noise:
        t = float(noise.get("variance_t", noise.get("variance_p")))
        return t, float(noise.get("variance_p", t))
    raise McError(f"the config's '{key}' is not white noise ({{variance: V}} or {{variance_t, "
                  f"variance_p}}): simulate draws white noise only")


def mask_nside(path):
    from astropy.io import fits
    try:
        with fits.open(path) as hdus:
            for hdu in hdus:
                if "NSIDE" in hdu.header:
                    return int(hdu.header["NSIDE"])
    except OSError as e:
        raise McError(f"cannot read the mask '{path}': {e}")
    raise McError(f"the mask '{path}' has no NSIDE in its headers: not a HEALPix map")


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise McError(f"{what} failed (exit {r.returncode}): {' '.join(cmd)}\n"
                      f"{r.stdout}{r.stderr}")
    return r


class Campaign:
    """The simulations and runs of one Monte Carlo check."""

    def __init__(self, args, cfg, work):
        self.args, self.cfg, self.work = args, cfg, work
        self.cross = args.cross or "maps2" in cfg
        self.noise = white_noise(cfg, "noise")
        if self.cross:
            if "noise2" in cfg:
                self.noise2 = white_noise(cfg, "noise2")
            elif args.noise2_variance is not None or args.noise2_variance_pol is not None:
                t = args.noise2_variance if args.noise2_variance is not None else self.noise[0]
                p = args.noise2_variance_pol
                self.noise2 = (t, p if p is not None else
                               (t if args.noise2_variance is not None else self.noise[1]))
            else:
                self.noise2 = self.noise
        elif args.noise2_variance is not None or args.noise2_variance_pol is not None:
            raise McError("--noise2-variance and --noise2-variance-pol need --cross")
        self.nside = mask_nside(cfg["mask"])
        self.fields = str(cfg.get("fields", "T"))
        self.ell_min = int(cfg.get("ell_min", 2))
        self.lmax_signal = int(cfg.get("lmax_signal", cfg["lmax"]))

    def simulate(self, i, n_maps):
        a = self.args
        prefix = os.path.join(self.work, f"sim_{i:04d}")
        cmd = [a.qmlpipe, "simulate", "--cls", self.cfg["cls"], "--nside", str(self.nside),
               "--lmax", str(self.lmax_signal), "--ell-min", str(self.ell_min), "--fields",
               self.fields, "--noise-variance", repr(self.noise[0]), "--noise-variance-pol",
               repr(self.noise[1]), "--beam-fwhm", repr(float(self.cfg.get("beam_fwhm_arcmin", 0))),
               "--n-maps", str(n_maps), "--seed", str(a.seed + i), "--out", prefix]
        if self.cfg.get("pixel_window") is True:
            cmd.append("--pixel-window")
        if self.cross:
            cmd += ["--pairs", "--out2", prefix + "_b", "--noise2-variance",
                    repr(self.noise2[0]), "--noise2-variance-pol", repr(self.noise2[1])]
        run(cmd, f"simulation {i} (qmlpipe simulate)")
        maps = [f"{prefix}_{k:04d}.fits" for k in range(n_maps)]
        maps2 = [f"{prefix}_b_{k:04d}.fits" for k in range(n_maps)] if self.cross else []
        return maps, maps2

    def run_one(self, i, maps, maps2):
        import yaml
        cfg = dict(self.cfg)
        cfg.pop("output", None)
        cfg.pop("checkpoint", None)
        cfg["maps"] = maps
        if self.cross:
            cfg["maps2"] = maps2
            if "noise2" not in cfg:
                t, p = self.noise2
                cfg["noise2"] = {"variance": t} if t == p else {"variance_t": t, "variance_p": p}
        path = os.path.join(self.work, f"run_{i:04d}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("# written by tools/mc_spectra.py from " + os.path.abspath(self.args.config)
                    + "\n")
            yaml.safe_dump(cfg, f, default_flow_style=None, sort_keys=False)
        results = os.path.join(self.work, f"results_{i:04d}.h5")
        run([self.args.qmlpipe, "run", path, "--quiet", "--output", results],
            f"run {i} (qmlpipe run {path})")
        return results


def wilson_hilferty(x, k):
    """The z of x ~ chi^2 with k dof (Wilson-Hilferty's cube root)."""
    return ((x / k) ** (1.0 / 3.0) - (1.0 - 2.0 / (9.0 * k))) / np.sqrt(2.0 / (9.0 * k))


def figures(cl, first, fid, how):
    """Every figure of the report, as a dict of lists and numbers."""
    n, n_params = cl.shape
    cov = first["covariance"]
    cov_source = "/spectra/covariance"
    if cov is None:
        if first["cross"] or first["fisher"] is None:
            raise McError(f"{first['path']}: no /spectra/covariance (a cross file needs it)")
        cov, cov_source = np.linalg.inv(first["fisher"]), "F^-1 (the file has no covariance)"
    predicted = np.diag(cov)
    mean = cl.mean(axis=0)
    dev = cl - mean
    var = (dev ** 2).sum(axis=0) / (n - 1)
    m4 = (dev ** 4).mean(axis=0)
    bias = (mean - fid) / np.sqrt(predicted / n)
    ratio = var / predicted
    # The sampling error of a sample variance, from the sample's own kurtosis (a Gaussian's,
    # 3, gives 2 / N); never below the Gaussian 2 / (N - 1).
    ratio_sigma = np.sqrt(np.maximum(2.0 / (n - 1), (m4 / var ** 2 - (n - 3.0) / (n - 1)) / n))
    ratio_z = (ratio - 1.0) / ratio_sigma
    inv = np.linalg.inv(cov)
    d = mean - fid
    chi2_mean = float(n * d @ inv @ d)
    sample_cov = dev.T @ dev / (n - 1)
    return {
        "n_sims": n, "n_params": n_params, "fiducial_binning": how, "covariance": cov_source,
        "fiducial": fid.tolist(), "mean": mean.tolist(), "sample_sd": np.sqrt(var).tolist(),
        "predicted_sd": np.sqrt(predicted).tolist(), "bias_sigmas": bias.tolist(),
        "variance_ratio": ratio.tolist(), "variance_ratio_sigma": ratio_sigma.tolist(),
        "variance_ratio_sigmas": ratio_z.tolist(),
        "chi2_mean": chi2_mean, "chi2_mean_dof": n_params,
        "chi2_mean_z": float(wilson_hilferty(chi2_mean, n_params)),
        "variance_ratio_mean": float(ratio.mean()),
        "variance_ratio_chi2_like": float((ratio_z ** 2).sum()),
        "trace_ratio": float(np.trace(inv @ sample_cov) / n_params),
        "trace_ratio_sigma_gaussian": float(np.sqrt(2.0 / (n_params * (n - 1)))),
    }


def report(fig, first, args, cross, seconds):
    print(f"mc_spectra.py: {args.config}: {fig['n_sims']} simulations, "
          f"{'cross' if cross else 'auto'}-spectra, route {first['attrs'].get('path_used', '?')}, "
          f"{fig['n_params']} parameters")
    binning = ("through /spectra/window" if fig["fiducial_binning"] == "window" else
               "flat over each bin (no /spectra/window: not what the estimator measures where "
               "C_ell varies within a bin)")
    print(f"  fiducial binned {binning}; covariance {fig['covariance']}")
    print(f"  {'p':>3} {'spec':>4} {'ell':>7} {'fiducial':>11} {'mean':>11} {'bias/err':>8} "
          f"{'sample sd':>10} {'predicted':>10} {'var ratio':>10} {'+-':>6} {'sigmas':>6}")
    for p in range(fig["n_params"]):
        ell = f"{first['ell_min'][p]}-{first['ell_max'][p]}"
        print(f"  {p:3d} {first['spectrum'][p]:>4} {ell:>7} {fig['fiducial'][p]:11.4g} "
              f"{fig['mean'][p]:11.4g} {fig['bias_sigmas'][p]:+8.2f} {fig['sample_sd'][p]:10.4g} "
              f"{fig['predicted_sd'][p]:10.4g} {fig['variance_ratio'][p]:10.3f} "
              f"{fig['variance_ratio_sigma'][p]:6.3f} {fig['variance_ratio_sigmas'][p]:+6.2f}")
    print(f"  chi^2 of the mean: {fig['chi2_mean']:.2f} for {fig['chi2_mean_dof']} dof "
          f"(z {fig['chi2_mean_z']:+.2f}, Wilson-Hilferty)")
    print(f"  variance ratio: mean {fig['variance_ratio_mean']:.3f} over the parameters, "
          f"sum of z^2 {fig['variance_ratio_chi2_like']:.2f} for {fig['n_params']} parameters "
          f"(chi^2-like: they are correlated)")
    print(f"  tr(Cov^-1 S) / n_params: {fig['trace_ratio']:.3f} (1 expected; "
          f"+-{fig['trace_ratio_sigma_gaussian']:.3f} for Gaussian C_hat, more at low ell)")
    print(f"  largest |bias| {max(abs(b) for b in fig['bias_sigmas']):.2f} sigma, largest "
          f"|variance ratio - 1| {max(abs(z) for z in fig['variance_ratio_sigmas']):.2f} sigma")
    print(f"  {seconds:.1f} s for the simulations and runs ({seconds / fig['n_sims']:.2f} s "
          f"a simulation)")


def main(argv):
    args = parse_args(argv[1:])
    # Absolute: the runs' configs name the maps, and qmlpipe resolves a config's relative paths
    # against the config's own directory.
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="mc_spectra."))
    try:
        os.makedirs(work, exist_ok=True)
        cfg = load_config(args.config)
        if not os.path.isfile(args.qmlpipe) or not os.access(args.qmlpipe, os.X_OK):
            raise McError(f"qmlpipe not found at '{args.qmlpipe}': build it or give --qmlpipe")
        campaign = Campaign(args, cfg, work)
        rows, first, start = [], None, time.monotonic()
        for i, done in enumerate(range(0, args.n_sims, args.maps_per_run)):
            n_maps = min(args.maps_per_run, args.n_sims - done)
            maps, maps2 = campaign.simulate(i, n_maps)
            results = campaign.run_one(i, maps, maps2)
            res = read_results(results)
            if first is None:
                first = res
            rows.append(res["cl"])
            if not args.work:
                for path in maps + maps2 + [results]:
                    os.remove(path)
        seconds = time.monotonic() - start
        cl = np.concatenate(rows)
        fid, how = binned_fiducial(first, read_cls(cfg["cls"]))
        fig = figures(cl, first, fid, how)
    except (McError, SpectraError) as e:
        print(f"mc_spectra.py: {e}", file=sys.stderr)
        return 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report(fig, first, args, campaign.cross, seconds)
    fig.update({"config": os.path.abspath(args.config), "cross": campaign.cross,
                "seconds": seconds, "spectrum": first["spectrum"],
                "ell_min": first["ell_min"].tolist(), "ell_max": first["ell_max"].tolist()})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(fig, f, indent=1)
    if args.check is not None:
        # A flat bin mean is not what the estimator measures where C_ell varies in the bin: the
        # means of bins wider than one ell (and the chi^2 of the mean) are judged only against
        # the window functions.
        exact = [how == "window" or lo == hi for lo, hi in zip(fig["ell_min"], fig["ell_max"])]
        judged = [abs(z) for z in fig["variance_ratio_sigmas"]]
        judged += [abs(b) for b, e in zip(fig["bias_sigmas"], exact) if e]
        if all(exact):
            judged.append(abs(fig["chi2_mean_z"]))
        worst = max(judged)
        skipped = "" if all(exact) else (
            f" (the means of the {exact.count(False)} bins wider than one ell, and the chi^2 of "
            "the mean, not judged: no window functions)")
        print(f"  --check {args.check:g}: the worst figure is {worst:.2f} sigma: "
              f"{'within' if worst <= args.check else 'BEYOND'}{skipped}")
        if not worst <= args.check:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
