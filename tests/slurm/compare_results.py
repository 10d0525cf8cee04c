"""Compare two qmlpipe results files: /fisher and /spectra/cl, every value finite, rel. diff <= tol.
An entry's difference is taken relative to max(|a|, |b|); a Fisher entry's also to at least
sqrt(|F_ii F_jj|) (its correlation scale): far off-diagonal entries are sums that cancel to
1e-6 of the diagonal, where a run on 2 ranks and one on 1 process, summing in other orders,
differ by 1e-12 of the entry but 1e-14 of the scale that errors on the spectra see.
usage: /usr/bin/python3 compare_results.py A.h5 B.h5 [TOL]"""
import sys

import h5py
import numpy as np


def main():
    a_path, b_path = sys.argv[1], sys.argv[2]
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-12
    bad = 0
    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        for name in ("/fisher", "/spectra/cl"):
            a = np.asarray(fa[name][()], dtype=float)
            b = np.asarray(fb[name][()], dtype=float)
            if a.shape != b.shape:
                print(f"{name}: shapes differ {a.shape} vs {b.shape}")
                bad += 1
                continue
            if a.size == 0:
                print(f"{name}: empty")
                bad += 1
                continue
            for label, x in (("A", a), ("B", b)):
                n = int(np.count_nonzero(~np.isfinite(x)))
                if n:
                    print(f"{name}: {n} non-finite value(s) in {label}")
                    bad += 1
            scale = np.maximum(np.abs(a), np.abs(b))
            if name == "/fisher" and a.ndim == 2 and a.shape[0] == a.shape[1]:
                diag = np.sqrt(np.abs(np.diag(a) * np.diag(b)))
                scale = np.maximum(scale, np.sqrt(np.outer(diag, diag)))
            diff = np.abs(a - b)
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = np.where(scale > 0, diff / scale, np.where(diff == 0, 0.0, np.inf))  # NaN: inf
            worst = float(np.nanmax(rel)) if np.isfinite(rel).any() else float("nan")
            ok = np.all(np.isfinite(rel)) and worst <= tol
            print(f"{name}: shape {a.shape}, max rel. diff {worst:.3e} (tol {tol:g}) {'ok' if ok else 'FAIL'}")
            bad += 0 if ok else 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
