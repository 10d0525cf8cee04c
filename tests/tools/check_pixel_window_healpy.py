#!/usr/bin/python3
"""check_pixel_window_healpy.py: qmlpipe's reader of HEALPix's pixel window tables
(io/pixel_window.c) against healpy.pixwin(nside, pol=True), every multipole of nside 8 and 16
(the whole table, l = 0..4 nside), to 1e-12 relative. A CTest (pixel_window_healpy); exits 77
(skipped) where healpy is not installed (Debian: python3-healpy).

Usage: /usr/bin/python3 tests/tools/check_pixel_window_healpy.py BUILD/tests/io/test_pixel_window
(the test program prints "l w_l^T w_l^P" of the table with --print NSIDE LMAX)."""
import subprocess
import sys

try:
    import healpy
    import numpy as np
except ImportError as e:
    print(f"check_pixel_window_healpy: skipped: {e} (Debian: apt-get install python3-healpy)")
    sys.exit(77)


def main():
    program = sys.argv[1]
    worst = 0.0
    for nside in (8, 16):
        lmax = 4 * nside
        out = subprocess.run([program, "--print", str(nside), str(lmax)], check=True,
                             capture_output=True, text=True).stdout
        got = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
        t, p = healpy.pixwin(nside, pol=True, lmax=lmax)
        if got.shape != (lmax + 1, 3) or not np.array_equal(got[:, 0], np.arange(lmax + 1)):
            print(f"nside {nside}: qmlpipe printed {got.shape[0]} rows, expected {lmax + 1}")
            return 1
        for name, mine, ref in (("T", got[:, 1], t), ("P", got[:, 2], p)):
            scale = np.maximum(np.abs(ref), np.abs(mine))
            rel = np.where(scale > 0, np.abs(mine - ref) / np.where(scale > 0, scale, 1), 0.0)
            bad = ~np.isfinite(mine) | (rel > 1e-12)
            worst = max(worst, float(np.max(rel)) if np.all(np.isfinite(mine)) else np.inf)
            if np.any(bad):
                l = int(np.argmax(bad))
                print(f"nside {nside} w_l^{name}: l = {l}: qmlpipe {mine[l]!r}, healpy {ref[l]!r}")
                return 1
    print(f"pixel windows of nside 8 and 16 (l = 0..4 nside, T and P) against healpy "
          f"{healpy.__version__}: worst relative difference {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
