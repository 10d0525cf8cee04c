#!/usr/bin/python3
"""make_pixel_reference.py: an independent reference (healpy, no qmlpipe code) for the pixel
covariance S and the bin matrices P_p of pipeline/sky/pixel_matrices.c at high ell, for
tests/pipeline/test_pixel_reference.c.

What it writes (into tests/data/ unless another directory is given):
  cls_planck2015_highell.txt   the fiducial C_ell, ell 0..767, columns ell TT EE BB TE TB EB:
        data/cls_planck2015_lcdm.txt (TT EE BB TE, which stops at ell 128) continued above 128
        at constant D_ell = l(l+1) C_ell / 2 pi (each spectrum's value at ell 128), plus
        synthetic TB = 0.1 sqrt(TT BB) and EB = 0.1 sqrt(EE BB); every ell's 3x3 (T, E, B)
        matrix is checked positive semidefinite.
  pixel_reference_nside128.txt, pixel_reference_nside256.txt
        selected entries of S (all six spectra, ell 2..3 nside - 1) and of the six bin
        matrices P_TT .. P_EB of the top bin (the last 16 multipoles, ending at 3 nside - 1),
        for the data vector [T | Q | U] in healpy's (COSMO) convention, no beam, no pixel
        window. Per nside, 5 reference pixels j (one near the north pole, one on the equator,
        one generic, one near the south pole, and the first whose centre vector's squared norm
        rounds furthest below 1, 1 - 4.4e-16) and for each ~40 pixels i: i = j, the antipode
        of j, its 8 neighbours, pixels at 2..21 pixel sizes from j, a pixel of the first and
        of the last ring, and random ones. One line per (j, i): `j i` (RING indices) then, for
        each matrix in the order S P_TT P_EE P_BB P_TE P_TB P_EB, the 9 entries
        M[X_i, Y_j] for (X, Y) in TT TQ TU QT QQ QU UT UQ UU (X: component at pixel i, the
        row; Y: component at pixel j, the column). Structural zeros are written as 0.

How: column Y_j of a matrix M = sum_l M_l (M_l: the 3x3 matrix of C_ell in (T, E, B), or for
P_X the unit derivative on the bin) is the map synthesised from alm = M_l a^(Y_j)_lm, where
a^(Y_j) is the harmonic transform of a unit delta in component Y at pixel j:
healpy.map2alm(delta, iter=0, use_weights=False, pol=True) is the plain quadrature sum
(4 pi / Npix) sum_p f(p) Y*_lm(p) (spin 0 for T, the E/B combinations of the spin +-2
harmonics for Q and U), so Npix / (4 pi) times it is exactly Y*_lm(n_j) (or its E/B
analogue); healpy.alm2map(..., pol=True) then evaluates sum_lm at every pixel centre. Exact
up to round-off of healpy's transforms (libsharp): the script checks TT entries at generic
pairs, and the QQ, UU, QU, TQ entries at coincident and antipodal pairs, against sums of
Legendre polynomials and of the closed forms of the Wigner d limits evaluated in mpmath (40
digits), and stops if any differs by more than 1e-12 of the matrix's largest entry.

Regenerate (Debian's python3 with healpy, numpy and mpmath; from the repository root; about a
minute, most of it for nside 256):
    /usr/bin/python3 tools/make_pixel_reference.py [OUTPUT_DIR [NSIDE ...]]
NSIDE (default 128 256) >= 8 makes other files of the same kind, e.g. nside 8 to check the sign
conventions at low ell; QP_REFERENCE_VERBOSE=1 prints every mpmath comparison.
"""
import os
import sys

import healpy as hp
import mpmath as mp
import numpy as np

NSIDES = (128, 256)
ELL_MIN = 2
BIN_WIDTH = 16  # the bin of every P_p: the last BIN_WIDTH multipoles, ending at 3 nside - 1
SPECTRA = ("TT", "EE", "BB", "TE", "TB", "EB")
MATRICES = ("S",) + tuple("P_" + s for s in SPECTRA)
# (T, E, B) index pair of each spectrum
PAIRS = {"TT": (0, 0), "EE": (1, 1), "BB": (2, 2), "TE": (0, 1), "TB": (0, 2), "EB": (1, 2)}
CLS_IN = "data/cls_planck2015_lcdm.txt"
CLS_OUT = "cls_planck2015_highell.txt"
CHECK_TOL = 1e-11
SEED = 20261123
VERBOSE = os.environ.get("QP_REFERENCE_VERBOSE") == "1"


def extended_cls(lmax):
    """C_ell (ell 0..lmax) of TT EE BB TE TB EB: the Planck file, constant D_ell above it."""
    table = np.loadtxt(CLS_IN)
    assert np.all(table[:, 0] == np.arange(len(table))), "ell must run 0, 1, ..."
    l_file = int(table[-1, 0])
    ell = np.arange(lmax + 1, dtype=float)
    cls = np.zeros((6, lmax + 1))
    for s in range(4):
        cls[s, : l_file + 1] = table[: lmax + 1, 1 + s]
        d_last = l_file * (l_file + 1.0) * table[-1, 1 + s]
        cls[s, l_file + 1 :] = d_last / (ell[l_file + 1 :] * (ell[l_file + 1 :] + 1.0))
    cls[4] = 0.1 * np.sqrt(cls[0] * cls[2])
    cls[5] = 0.1 * np.sqrt(cls[1] * cls[2])
    for l in range(ELL_MIN, lmax + 1):
        m = cl_matrix(cls, l)
        d = 1.0 / np.sqrt(np.diag(m))
        w = np.linalg.eigvalsh(m * np.outer(d, d))  # of the correlation matrix
        assert w[0] > 0, "C_ell matrix not positive definite at ell %d" % l
    return cls, l_file


def cl_matrix(cls, l):
    """The 3x3 (T, E, B) covariance of ell."""
    m = np.zeros((3, 3))
    for s, name in enumerate(SPECTRA):
        a, b = PAIRS[name]
        m[a, b] = m[b, a] = cls[s, l]
    return m


def write_cls(path, cls, l_file):
    with open(path, "w") as f:
        f.write("# C_ell in muK^2 (NOT D_ell). columns: ell TT EE BB TE TB EB.\n")
        f.write("# ell <= %d: TT EE BB TE of %s; above: constant D_ell = l(l+1)C_l/2pi\n"
                % (l_file, CLS_IN))
        f.write("# (the value at ell %d); TB = 0.1 sqrt(TT BB), EB = 0.1 sqrt(EE BB).\n" % l_file)
        f.write("# Written by tools/make_pixel_reference.py (healpy %s, numpy %s).\n"
                % (hp.__version__, np.__version__))
        for l in range(cls.shape[1]):
            f.write("%4d %s\n" % (l, " ".join("%.17e" % v for v in cls[:, l])))


def matrices_per_ell(cls, lmax):
    """name -> array (lmax+1, 3, 3) of the per-ell (T, E, B) matrix of each output matrix."""
    out = {}
    s = np.zeros((lmax + 1, 3, 3))
    for l in range(ELL_MIN, lmax + 1):
        s[l] = cl_matrix(cls, l)
    out["S"] = s
    lo = lmax - BIN_WIDTH + 1
    for name in SPECTRA:
        p = np.zeros((lmax + 1, 3, 3))
        a, b = PAIRS[name]
        p[lo:, a, b] = p[lo:, b, a] = 1.0
        out["P_" + name] = p
    return out, lo


def pixel_vec(nside, p):
    return np.array(hp.pix2vec(nside, int(p)))


def antipode(nside, j):
    a = int(hp.vec2pix(nside, *(-pixel_vec(nside, j))))
    z = float(pixel_vec(nside, a) @ pixel_vec(nside, j))
    assert abs(z + 1.0) < 1e-14, "pixel %d has no exact antipode" % j
    return a


def at_distance(nside, j, angle, direction):
    """The pixel nearest the point at `angle` from pixel j's centre along `direction` (rad)."""
    v = pixel_vec(nside, j)
    theta, phi = hp.vec2ang(v)
    e_theta = np.array([np.cos(theta[0]) * np.cos(phi[0]), np.cos(theta[0]) * np.sin(phi[0]),
                        -np.sin(theta[0])])
    e_phi = np.array([-np.sin(phi[0]), np.cos(phi[0]), 0.0])
    t = np.cos(direction) * e_theta + np.sin(direction) * e_phi
    return int(hp.vec2pix(nside, *(np.cos(angle) * v + np.sin(angle) * t)))


def worst_norm_pixel(nside):
    """The first RING pixel whose centre vector r (double) has the largest 1 - r.r, summed as
    (x x + y y) + z z: a code that takes z = r_i . r_j for i = j (or r_i . (-r_i) for the
    antipode) sees z = 1 - 4.4e-16 there, which moves P_l(z) by ~l^2 2.2e-16 (1e-10 at l ~ 700).
    """
    v = np.array(hp.pix2vec(nside, np.arange(hp.nside2npix(nside))))
    d = 1.0 - ((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2])
    return int(np.argmax(d))


def choose_pixels(nside, rng):
    """[(j, [i, ...]), ...]: the reference pixels and, for each, the pixels i compared."""
    npix = hp.nside2npix(nside)
    refs = [
        5,                                                   # ring 2, near the north pole
        int(hp.ang2pix(nside, np.pi / 2, 1.0)),               # on the equator (z = 0)
        int(hp.ang2pix(nside, 1.1, 2.3)),                     # generic
        npix - 18,                                            # third ring from the south pole
        worst_norm_pixel(nside),                              # |r|^2 furthest below 1
    ]
    pix_size = hp.nside2resol(nside)
    out = []
    for j in refs:
        chosen = [j, antipode(nside, j)]
        chosen += [int(n) for n in hp.get_all_neighbours(nside, j) if n >= 0]
        for k in (2, 3, 5, 8, 13, 21):
            chosen.append(at_distance(nside, j, k * pix_size, rng.uniform(0, 2 * np.pi)))
        chosen += [int(rng.integers(0, 4)), int(npix - 1 - rng.integers(0, 4))]  # first, last ring
        while len(chosen) < 42:
            chosen.append(int(rng.integers(0, npix)))
        seen = []
        for i in chosen:
            if i not in seen:
                seen.append(i)
        out.append((j, seen))
    return out


def columns(nside, lmax, j, pixels, per_ell):
    """name -> array (3 rows X, 3 columns Y, len(pixels)): M[X_i, Y_j] for i in pixels."""
    npix = hp.nside2npix(nside)
    l_of = hp.Alm.getlm(lmax)[0]
    out = {name: np.zeros((3, 3, len(pixels))) for name in per_ell}
    for y in range(3):
        delta = np.zeros((3, npix))
        delta[y, j] = 1.0
        alm = hp.map2alm(delta, lmax=lmax, iter=0, use_weights=False, pol=True)
        alm = np.asarray(alm) * (npix / (4.0 * np.pi))
        for name, m in per_ell.items():
            ml = m[l_of]  # (n_alm, 3, 3)
            out_alm = np.einsum("kab,bk->ak", ml, alm)
            maps = hp.alm2map([np.ascontiguousarray(a) for a in out_alm], nside, lmax=lmax,
                              pol=True)
            for x in range(3):
                out[name][x, y] = maps[x][pixels]
    return out


def legendre_sums(z, lmax):
    """mpmath: [P_l(z) for l = 0..lmax]."""
    p = [mp.mpf(1), z]
    for l in range(2, lmax + 1):
        p.append(((2 * l - 1) * z * p[-1] - (l - 1) * p[-2]) / l)
    return p


def cos_angle(nside, i, j):
    """mpmath: cos of the angle between the centres of pixels i and j, from healpy's (theta,
    phi) of each (doubles), without rounding the dot product to double: that alone moves z by
    ~1e-16, which moves S between neighbouring pixels by ~1e-12 of its largest entry."""
    ti, pi = hp.pix2ang(nside, int(i))
    tj, pj = hp.pix2ang(nside, int(j))
    ti, pi, tj, pj = (mp.mpf(float(v)) for v in (ti, pi, tj, pj))
    return mp.cos(ti) * mp.cos(tj) + mp.sin(ti) * mp.sin(tj) * mp.cos(pi - pj)


def check_with_mpmath(nside, lmax, j, pixels, cols, per_ell):
    """(at z = +-1, elsewhere): name -> the largest |healpy - mpmath| where an entry has a
    closed form: TT (and the structural zeros) at (j, i) for the first 12 i; also Q/U and TQ at
    i = j (z = 1) and at the antipode (z = -1), where the Wigner d have closed forms."""
    mp.mp.dps = 40
    w = [mp.mpf(2 * l + 1) / (4 * mp.pi) for l in range(lmax + 1)]
    worst_exact = {name: 0.0 for name in per_ell}
    worst_other = {name: 0.0 for name in per_ell}
    anti = antipode(nside, j)
    for k, i in enumerate(pixels[:12]):
        exact = i in (j, anti)
        z = mp.mpf(1 if i == j else -1) if exact else cos_angle(nside, i, j)
        p = legendre_sums(z, lmax)
        for name, m in per_ell.items():
            col = cols[name]
            expect = {(0, 0): mp.fsum(w[l] * m[l, 0, 0] * p[l] for l in range(lmax + 1))}
            if exact:
                # d^l_22, d^l_2-2, d^l_20 at beta = 0: 1, 0, 0; at beta = pi: 0, (-1)^l, 0.
                sgn = [1 if i == j else (-1) ** l for l in range(lmax + 1)]
                a = [mp.mpf(0.5) * sgn[l] for l in range(lmax + 1)]  # (d22 + d2-2)/2
                b = [mp.mpf(0.5) * sgn[l] * (1 if i == j else -1) for l in range(lmax + 1)]
                qu = [0 if i == j else sgn[l] for l in range(lmax + 1)]  # d2-2
                expect[(1, 1)] = mp.fsum(w[l] * (m[l, 1, 1] * a[l] + m[l, 2, 2] * b[l])
                                         for l in range(lmax + 1))
                expect[(2, 2)] = mp.fsum(w[l] * (m[l, 2, 2] * a[l] + m[l, 1, 1] * b[l])
                                         for l in range(lmax + 1))
                eb = mp.fsum(w[l] * m[l, 1, 2] * qu[l] for l in range(lmax + 1))
                expect[(1, 2)] = eb
                expect[(2, 1)] = eb
                expect[(0, 1)] = expect[(1, 0)] = expect[(0, 2)] = expect[(2, 0)] = 0
            worst = worst_exact if exact else worst_other
            for (x, y), value in expect.items():
                d = abs(float(col[x, y, k]) - float(value))
                worst[name] = max(worst[name], d)
                if VERBOSE:
                    print("  nside %d j %d i %d %s[%d,%d]: healpy %r, mpmath %s"
                          % (nside, j, i, name, x, y, col[x, y, k], mp.nstr(value, 17)))
    return worst_exact, worst_other


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    nsides = [int(a) for a in sys.argv[2:]] or NSIDES
    lmax_all = 3 * max(NSIDES) - 1
    cls, l_file = extended_cls(lmax_all)
    write_cls(os.path.join(out_dir, CLS_OUT), cls, l_file)
    rng = np.random.default_rng(SEED)
    for nside in nsides:
        lmax = 3 * nside - 1
        per_ell, bin_lo = matrices_per_ell(cls, lmax)
        chosen = choose_pixels(nside, rng)
        rows = []
        diffs = [{name: 0.0 for name in MATRICES} for _ in range(2)]
        for j, pixels in chosen:
            cols = columns(nside, lmax, j, pixels, per_ell)
            for k, i in enumerate(pixels):
                rows.append((j, i, [cols[name][:, :, k].reshape(9) for name in MATRICES]))
            d = check_with_mpmath(nside, lmax, j, pixels, cols, per_ell)
            for e in range(2):
                diffs[e] = {name: max(diffs[e][name], d[e][name]) for name in MATRICES}
        scales = {name: max(np.abs(r[2][k]).max() for r in rows)
                  for k, name in enumerate(MATRICES)}
        worst = max(diffs[e][name] / scales[name] for e in range(2) for name in MATRICES)
        for name in MATRICES:
            print("  nside %d %-4s largest entry %.6e; healpy vs mpmath, of it: %.1e at z = +-1, "
                  "%.1e elsewhere" % (nside, name, scales[name], diffs[0][name] / scales[name],
                                      diffs[1][name] / scales[name]))
        if not worst <= CHECK_TOL:
            sys.exit("healpy and mpmath differ by %.2e of the largest entry" % worst)
        print("nside %d: %d entries per matrix; healpy vs mpmath at the closed-form points: "
              "%.1e of the largest entry" % (nside, 9 * len(rows), worst))
        path = os.path.join(out_dir, "pixel_reference_nside%d.txt" % nside)
        with open(path, "w") as f:
            f.write("# pixel_reference_nside%d.txt: entries of the pixel covariance S and of bin\n"
                    % nside)
            f.write("# matrices P_p for the data vector [T | Q | U] (healpy COSMO convention), from\n")
            f.write("# healpy %s (numpy %s) by tools/make_pixel_reference.py (see its docstring).\n"
                    % (hp.__version__, np.__version__))
            f.write("# S: ell %d..%d, C_ell of %s (all six spectra). P_X: unit C^X on the bin.\n"
                    % (ELL_MIN, lmax, CLS_OUT))
            f.write("# Checked against mpmath at closed-form points: %.1e of the largest entry.\n"
                    % worst)
            f.write("# nside %d lmax %d ell_min %d bin %d %d\n" % (nside, lmax, ELL_MIN, bin_lo, lmax))
            f.write("# pairs %d\n" % len(rows))
            f.write("# columns: j i, then for S P_TT P_EE P_BB P_TE P_TB P_EB the 9 entries\n")
            f.write("#   M[X_i, Y_j], XY = TT TQ TU QT QQ QU UT UQ UU (X row at i, Y column at j)\n")
            for j, i, values in rows:
                text = " ".join("0" if v == 0.0 else repr(float(v))
                                for block in values for v in block)
                f.write("%d %d %s\n" % (j, i, text))


if __name__ == "__main__":
    main()
