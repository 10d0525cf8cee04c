#!/usr/bin/python3
"""Plots the power spectra of a qmlpipe results file (auto- or cross-spectra).

One figure (PNG, PDF or SVG by OUT's extension), one column of panels per requested spectrum
(TT, EE, BB, TE, TB, EB, as the run asked; three a row at most):
  top:    C_hat per bin with its error bars (/spectra/error) for each map (the first
          --max-maps), or with --mean their mean, its error (scatter / sqrt(n_maps)) as error
          bars and the scatter of the maps (one standard deviation) as a band, beside the
          expected scatter of one map (the binned fiducial +- /spectra/error, dashed);
          the fiducial C_ell (thin grey) and the fiducial binned as the estimator sees it:
          through the window functions, sum_ell W_p,ell C_ell, when the file has
          /spectra/window, else its flat mean over each bin (the legend says which);
  bottom: the window functions, each parameter's row of /spectra/window against ell (solid:
          its own spectrum's columns; dotted: the other spectra's, the leakage), or the flat
          bins' top hats when the file has none.
The fiducial C_ell file is the results' root attribute `cls` (as qmlpipe wrote it, relative to
where it ran, or found beside the results file); --cls FILE names another. C_ell, not D_ell.
A cross-spectra file (root attribute cross = 1) says "cross" in the title.
Needs h5py, numpy and matplotlib (Debian: python3-h5py, python3-numpy, python3-matplotlib).
Exit status: 0, 1 for a file it cannot use (a missing file, no /spectra, no C_ell file), 2 for
a usage error.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spectra_results import (SpectraError, binned_fiducial, find_cls, read_cls,  # noqa: E402
                             read_results, window_columns)

PER_ROW = 3


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="plot_spectra.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: /usr/bin/python3 tools/plot_spectra.py ex/results.h5 spectra.png")
    parser.add_argument("results", metavar="RESULTS.h5", help="a qmlpipe results file")
    parser.add_argument("out", metavar="OUT", help="the figure: .png, .pdf or .svg")
    parser.add_argument("--mean", action="store_true",
                        help="the maps' mean, its error and their scatter instead of each map "
                             "(needs 2 maps or more)")
    parser.add_argument("--cls", metavar="FILE",
                        help="the fiducial C_ell file (default: the results' attribute cls)")
    parser.add_argument("--no-fiducial", action="store_true", help="draw no fiducial")
    parser.add_argument("--max-maps", type=int, default=10, metavar="K",
                        help="without --mean, draw the first K maps (default 10)")
    args = parser.parse_args(argv)
    if args.max_maps < 1:
        parser.error("--max-maps must be at least 1")
    return args


def fiducial(args, res):
    """(C_ell dict, binned values per parameter, how, path) or Nones with --no-fiducial."""
    if args.no_fiducial:
        return None, None, None, None
    path = args.cls
    if path is None:
        attr = str(res["attrs"].get("cls", ""))
        path = find_cls(res["path"], attr)
        if path is None:
            raise SpectraError(f"{res['path']}: the fiducial C_ell file '{attr}' (its attribute "
                               "cls) is not found, as written or beside the results: give "
                               "--cls FILE (or --no-fiducial)")
    cls = read_cls(path)
    binned, how = binned_fiducial(res, cls)
    return cls, binned, how, path


def spectrum_panel(ax, args, res, name, fid):
    cls, binned, how, _ = fid
    idx = [p for p, s in enumerate(res["spectrum"]) if s == name]
    lo, hi = res["ell_min"][idx], res["ell_max"][idx]
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    width = np.maximum(hi - lo + 1, 1)
    cl, err = res["cl"][:, idx], res["error"][idx]
    n_maps = cl.shape[0]
    if cls is not None:
        ells = np.arange(lo.min(), hi.max() + 1)
        ax.plot(ells, cls[name][ells], color="0.6", lw=0.8, label="fiducial C_ell")
        label = ("fiducial through the window functions" if how == "window"
                 else "fiducial, flat mean over each bin (no /spectra/window)")
        ax.hlines(binned[idx], lo - 0.5, hi + 0.5, colors="k", lw=1.6, label=label)
    if args.mean:
        mean, scatter = cl.mean(axis=0), cl.std(axis=0, ddof=1)
        ax.fill_between(np.ravel(np.column_stack((lo - 0.5, hi + 0.5))),
                        np.repeat(mean - scatter, 2), np.repeat(mean + scatter, 2),
                        color="C0", alpha=0.2, lw=0, label=f"scatter of the {n_maps} maps (1 sd)")
        ax.errorbar(centre, mean, yerr=scatter / np.sqrt(n_maps), xerr=half, fmt="o", ms=3,
                    color="C0", capsize=2, label="mean, error of the mean")
        if binned is not None:
            for sign in (-1, 1):
                ax.hlines(binned[idx] + sign * err, lo - 0.5, hi + 0.5, colors="k", lw=0.8,
                          linestyles="dashed",
                          label="fiducial +- /spectra/error (one map)" if sign > 0 else None)
    else:
        shown = min(n_maps, args.max_maps)
        for m in range(shown):
            offset = (m - 0.5 * (shown - 1)) / max(shown, 1) * 0.6 * width
            ax.errorbar(centre + offset, cl[m], yerr=err, fmt="o", ms=3, capsize=2,
                        color=f"C{m % 10}", label=f"map {m}")
        if shown < n_maps:
            ax.plot([], [], " ", label=f"(first {shown} of {n_maps} maps: --max-maps, --mean)")
    if name not in ("TT", "EE", "BB"):
        ax.axhline(0.0, color="0.8", lw=0.6, zorder=0)
    ax.set_title(name)
    ax.set_xlabel("ell")
    ax.set_ylabel("C_ell (map units squared)")
    ax.legend(fontsize=6)


def window_panel(ax, res, name):
    idx = [p for p, s in enumerate(res["spectrum"]) if s == name]
    if res["window"] is None:
        for k, p in enumerate(idx):
            lo, hi = res["ell_min"][p], res["ell_max"][p]
            height = 1.0 / (hi - lo + 1)
            ax.plot([lo - 0.5, lo - 0.5, hi + 0.5, hi + 0.5], [0, height, height, 0],
                    color=f"C{k % 10}", lw=1.0)
        ax.set_title(f"{name}: flat bins (the file has no /spectra/window)", fontsize=9)
    else:
        columns = window_columns(res)
        spec_of = np.array([s for s, _ in columns])
        ell_of = np.array([ell for _, ell in columns])
        leaks = []  # the other spectra with a non-zero column in this spectrum's rows
        for k, p in enumerate(idx):
            own = spec_of == name
            ax.plot(ell_of[own], res["window"][p, own], color=f"C{k % 10}", lw=1.0,
                    drawstyle="steps-mid")
            for s in res["spectra"]:
                cols = spec_of == s
                row = res["window"][p, cols]
                if s != name and np.any(row != 0):
                    ax.plot(ell_of[cols], row, color=f"C{k % 10}", lw=0.7, ls=":",
                            drawstyle="steps-mid")
                    leaks += [s] if s not in leaks else []
        ax.axhline(0.0, color="0.8", lw=0.6, zorder=0)
        ax.set_title(f"{name}: window functions W_p,ell" +
                     (" (dotted: from " + ", ".join(leaks) + ")" if leaks else ""), fontsize=9)
    ax.set_xlabel("ell")
    ax.set_ylabel("W_p,ell")


def main(argv):
    args = parse_args(argv[1:])
    try:
        res = read_results(args.results)
        if args.mean and res["cl"].shape[0] < 2:
            raise SpectraError(f"{args.results}: --mean needs 2 maps or more; the file has "
                               f"{res['cl'].shape[0]}")
        fid = fiducial(args, res)
        # matplotlib only once the inputs are known good: a refusal is quick.
        import matplotlib
        matplotlib.use("Agg")  # headless
        import matplotlib.pyplot as plt
        names = res["spectra"]
        cols = min(len(names), PER_ROW)
        rows = (len(names) + PER_ROW - 1) // PER_ROW
        fig, axes = plt.subplots(2 * rows, cols, figsize=(max(7.0, 5.2 * cols), 8.0 * rows),
                                 squeeze=False)
        for k, name in enumerate(names):
            r, c = divmod(k, PER_ROW)
            spectrum_panel(axes[r][c], args, res, name, fid)
            window_panel(axes[rows + r][c], res, name)
        for k in range(len(names), rows * cols):  # empty places of the last row
            r, c = divmod(k, PER_ROW)
            axes[r][c].axis("off")
            axes[rows + r][c].axis("off")
    except SpectraError as e:
        print(f"plot_spectra.py: {e}", file=sys.stderr)
        return 1
    kind = "cross" if res["cross"] else "auto"
    n_maps = res["cl"].shape[0]
    what = f"{n_maps} map pair(s)" if res["cross"] else f"{n_maps} map(s)"
    source = f"; fiducial {os.path.basename(fid[3])}" if fid[3] else ""
    fig.suptitle(f"qmlpipe {kind}-spectra: {os.path.basename(args.results)}\n({what}, "
                 f"fields {res['attrs'].get('fields', '?')}{source})")
    fig.tight_layout()
    try:
        fig.savefig(args.out, dpi=110)
    except (OSError, ValueError) as e:
        print(f"plot_spectra.py: cannot write {args.out}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
