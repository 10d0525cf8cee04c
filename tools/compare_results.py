#!/usr/bin/python3
"""compare_results.py: the worst difference between two qmlpipe results files (docs/output.md).

    tools/compare_results.py A.h5 B.h5 [--tolerance 1e-12]

For every floating-point dataset outside /budget (the Fisher matrix, /spectra's cl, yb,
noise_bias, error, covariance, window) it prints max |a - b| / max |a|: the worst difference
relative to the dataset's largest entry (a zero dataset: the absolute difference). Integer and
string datasets (bins, params) must be equal. Exit 0 when every dataset is within the
tolerance, 1 when one is not, 2 when the files cannot be compared (a dataset missing from one,
shapes that differ). Issue 42's before-and-after check (docs/benchmarks.md) used it.
"""
import argparse
import sys

import h5py
import numpy as np


def datasets(f):
    """{name: dataset} of every dataset outside /budget (the memory records differ by design)."""
    found = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and not name.startswith("budget/"):
            found[name] = obj

    f.visititems(visit)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tolerance", type=float, default=1e-12)
    args = ap.parse_args()
    with h5py.File(args.a, "r") as fa, h5py.File(args.b, "r") as fb:
        da, db = datasets(fa), datasets(fb)
        if set(da) != set(db):
            print(f"datasets differ: only in {args.a}: {sorted(set(da) - set(db))}; "
                  f"only in {args.b}: {sorted(set(db) - set(da))}")
            return 2
        worst, bad = 0.0, []
        for name in sorted(da):
            a, b = da[name][()], db[name][()]
            if a.shape != b.shape:
                print(f"{name}: shapes {a.shape} and {b.shape}")
                return 2
            if a.dtype.kind == "f":
                scale = np.max(np.abs(a)) if a.size else 0.0
                diff = np.max(np.abs(a - b)) if a.size else 0.0
                if np.isnan(a).any() or np.isnan(b).any():
                    rel = 0.0 if np.array_equal(np.isnan(a), np.isnan(b)) else np.inf
                    mask = ~np.isnan(a)
                    if rel == 0.0 and mask.any():
                        scale = np.max(np.abs(a[mask]))
                        diff = np.max(np.abs(a[mask] - b[mask]))
                        rel = diff / scale if scale > 0 else diff
                else:
                    rel = diff / scale if scale > 0 else diff
                print(f"{name:24s} {str(a.shape):12s} max|a| {scale:.6e}  rel diff {rel:.3e}")
                worst = max(worst, rel)
                if not rel <= args.tolerance:
                    bad.append(name)
            else:
                equal = np.array_equal(a, b)
                print(f"{name:24s} {str(a.shape):12s} {'equal' if equal else 'DIFFERENT'}")
                if not equal:
                    bad.append(name)
        print(f"worst rel diff {worst:.3e} (tolerance {args.tolerance:g}): "
              f"{'within' if not bad else 'OUTSIDE: ' + ', '.join(bad)}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
