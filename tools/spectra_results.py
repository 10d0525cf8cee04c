"""spectra_results.py: what tools/plot_spectra.py and tools/mc_spectra.py read from a qmlpipe
results file (docs/output.md) and its fiducial C_ell text file; a module, not a program.

- read_results(path): /spectra (C_hat, error bars, covariance, window functions), /params, the
  root attributes, for auto- and cross-spectra files alike;
- read_cls(path): the fiducial C_ell text file as io/cls_text.c reads it;
- window_columns(res): the spectrum and ell of each column of /spectra/window;
- binned_fiducial(res, cls): the fiducial through the window functions, or flat over each bin
  when the file has none.
Every failure is a SpectraError whose message names the file and what to do.
"""
import os

import h5py
import numpy as np

SPECTRA = ("TT", "EE", "BB", "TE", "TB", "EB")  # the C_ell file's column order after ell


class SpectraError(Exception):
    """A results or C_ell file that cannot be used; the message says which and why."""


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def read_cls(path):
    """{spectrum: C_ell array from ell 0} of a fiducial C_ell text file, as io/cls_text.c reads
    it: '#' lines and blank lines skipped, rows `ell TT EE BB TE` or `ell TT EE BB TE TB EB`
    (TB, EB zero when absent), ell from 0, consecutive. C_ell, not D_ell."""
    if not os.path.isfile(path):
        raise SpectraError(f"the C_ell file '{path}' does not exist (or is not a regular file)")
    rows, width = [], None
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                values = [float(t) for t in text.split()]
            except ValueError:
                raise SpectraError(f"C_ell file '{path}' line {line_no}: not a row of numbers")
            if len(values) not in (5, 7):
                raise SpectraError(f"C_ell file '{path}' line {line_no}: {len(values)} columns; "
                                   "expected 5 (ell TT EE BB TE) or 7 (ell TT EE BB TE TB EB)")
            if width is None:
                width = len(values)
            if len(values) != width or values[0] != len(rows):
                raise SpectraError(f"C_ell file '{path}' line {line_no}: expected ell "
                                   f"{len(rows)} with {width} columns (rows start at ell 0)")
            rows.append(values[1:] + [0.0] * (7 - width))
    if not rows:
        raise SpectraError(f"C_ell file '{path}' has no data rows")
    table = np.array(rows)
    return {name: table[:, s] for s, name in enumerate(SPECTRA)}


def find_cls(results_path, attr):
    """The fiducial C_ell file the results name (root attribute `cls`): as written (relative to
    the directory qmlpipe ran in), else beside the results file. None when neither exists."""
    if not attr:
        return None
    here = os.path.dirname(os.path.abspath(results_path))
    for candidate in (attr, os.path.join(here, attr), os.path.join(here, os.path.basename(attr))):
        if os.path.isfile(candidate):
            return candidate
    return None


def read_results(path):
    """The spectra of a results file as a dict: cl (n_maps, n_params), error (n_params,),
    covariance (n_params, n_params) or None, window (n_params, n_window_ell) or None,
    window_ell, window_spectrum (per column, or None), fisher, spectrum / ell_min / ell_max
    (per parameter), spectra (the requested ones, in order), cross (bool), attrs (root)."""
    if not os.path.exists(path):
        raise SpectraError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise SpectraError(f"{path}: not a regular file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise SpectraError(f"{path}: not an HDF5 file ({e})")
    with f:
        if "spectra" not in f or not isinstance(f["spectra"], h5py.Group):
            raise SpectraError(f"{path}: no /spectra group: not a qmlpipe results file (`qmlpipe "
                               "run` writes one; docs/output.md)")
        for need in ("spectra/cl", "spectra/error", "params/spectrum", "params/ell_min",
                     "params/ell_max"):
            if need not in f:
                raise SpectraError(f"{path}: /{need} is missing (docs/output.md)")
        g = f["spectra"]
        res = {
            "path": path,
            "cl": np.atleast_2d(g["cl"][...]),
            "error": g["error"][...],
            "covariance": g["covariance"][...] if "covariance" in g else None,
            "window": g["window"][...] if "window" in g else None,
            "window_ell": g["window_ell"][...] if "window_ell" in g else None,
            "window_spectrum": ([_text(s) for s in g["window_spectrum"][...]]
                                if "window_spectrum" in g else None),
            "fisher": f["fisher"][...] if "fisher" in f else None,
            "spectrum": [_text(s) for s in f["params/spectrum"][...]],
            "ell_min": f["params/ell_min"][...].astype(int),
            "ell_max": f["params/ell_max"][...].astype(int),
            "attrs": {k: f.attrs[k] for k in f.attrs},
        }
    n_params = len(res["spectrum"])
    if res["cl"].shape[1] != n_params or len(res["error"]) != n_params:
        raise SpectraError(f"{path}: /spectra/cl is {res['cl'].shape} and /spectra/error "
                           f"{res['error'].shape} for {n_params} parameters")
    if res["window"] is not None and res["window"].shape[0] != n_params:
        raise SpectraError(f"{path}: /spectra/window has {res['window'].shape[0]} rows for "
                           f"{n_params} parameters")
    res["spectra"] = list(dict.fromkeys(res["spectrum"]))  # spectrum-major: the order asked
    res["cross"] = int(res["attrs"].get("cross", 0)) == 1
    return res


def window_columns(res):
    """[(spectrum, ell)] of each column of /spectra/window: /spectra/window_spectrum when the
    file has it, else from the position (spectrum-major blocks, one per requested spectrum,
    each the ells ell_min..lmax ascending; /spectra/window_ell gives each column's ell)."""
    window = res["window"]
    n_cols, n_spec = window.shape[1], len(res["spectra"])
    path = res["path"]
    ells = res["window_ell"]
    if ells is None:
        raise SpectraError(f"{path}: /spectra/window without /spectra/window_ell")
    ells = np.asarray(ells).astype(int)
    if len(ells) != n_cols:
        raise SpectraError(f"{path}: /spectra/window_ell has {len(ells)} values for "
                           f"{n_cols} columns of /spectra/window")
    if res["window_spectrum"] is not None:
        if len(res["window_spectrum"]) != n_cols:
            raise SpectraError(f"{path}: /spectra/window_spectrum has "
                               f"{len(res['window_spectrum'])} values for {n_cols} columns")
        return list(zip(res["window_spectrum"], ells))
    if n_cols % n_spec:
        raise SpectraError(f"{path}: /spectra/window has {n_cols} columns, not a whole block "
                           f"per requested spectrum ({n_spec}: {', '.join(res['spectra'])})")
    block = n_cols // n_spec
    attrs = res["attrs"]
    if "ell_min" in attrs and "lmax" in attrs:
        expected = np.arange(int(attrs["ell_min"]), int(attrs["lmax"]) + 1)
        if block != len(expected) or np.any(ells != np.tile(expected, n_spec)):
            raise SpectraError(f"{path}: /spectra/window_ell is not ell_min..lmax "
                               f"({expected[0]}..{expected[-1]}) once per requested spectrum")
    return [(res["spectra"][j // block], ells[j]) for j in range(n_cols)]


def binned_fiducial(res, cls):
    """(values per parameter, how): the fiducial through the window functions,
    C_p = sum_ell W_p,ell C_ell ("window"), or, for a file without /spectra/window, its mean
    over the ell of each parameter's bin ("flat": exact only where C_ell is flat in the bin)."""
    lmax_cls = len(cls["TT"]) - 1
    if res["window"] is not None:
        columns = window_columns(res)
        top = max(ell for _, ell in columns)
        if top > lmax_cls:
            raise SpectraError(f"the C_ell file ends at ell {lmax_cls}; the window functions "
                               f"of {res['path']} reach ell {top}")
        vector = np.array([cls[s][ell] for s, ell in columns])
        return res["window"] @ vector, "window"
    top = int(max(res["ell_max"]))
    if top > lmax_cls:
        raise SpectraError(f"the C_ell file ends at ell {lmax_cls}; the bins of {res['path']} "
                           f"reach ell {top}")
    flat = [cls[s][lo:hi + 1].mean()
            for s, lo, hi in zip(res["spectrum"], res["ell_min"], res["ell_max"])]
    return np.array(flat), "flat"
