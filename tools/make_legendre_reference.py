#!/usr/bin/python3
"""make_legendre_reference.py: reference values of the orthonormalised associated Legendre
functions lambda_lm(theta) = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!) P_l^m(cos theta) (Condon-Shortley
phase, as healpy and qmlpipe's pipeline/sky/spin_harmonics.c) at high l, from the explicit polynomial of
P_l^m summed in mpmath at enough digits to absorb its cancellation: no recursion, nothing
shared with qmlpipe.

The points are chosen where a plain double recursion fails: m large enough that
lambda_mm ~ sin^m(theta) underflows (m log10 sin(theta) < -308) while lambda_lm is O(1) at
l = 3071 (= 3 nside - 1 at nside 1024), plus ordinary points (small m, the equator, near the
poles) as controls.

Cross-checked with mpmath.legenp where its hypergeometric series converges. Usage (Debian's
python3 with python3-mpmath), from the repository root:
    /usr/bin/python3 tools/make_legendre_reference.py > tests/data/legendre_high_ell.txt
Output: one line per point, "theta l m lambda_lm", theta in radians.
"""
import mpmath as mp

mp.mp.dps = 40


def lam(l, m, theta):
    """lambda_lm from the explicit polynomial of P_l^m (Rodrigues: 2^-l sum_k (-1)^k C(l,k)
    C(2l-2k,l) x^(l-2k), differentiated m times): exact integer coefficients, then Horner in
    x^2 at 0.65 l + 60 digits, since the terms reach 4^l and cancel."""
    from math import comb, factorial
    kmax = (l - m) // 2
    coef = [(-1) ** k * comb(l, k) * comb(2 * l - 2 * k, l) * (factorial(l - 2 * k) //
                                                             factorial(l - 2 * k - m))
            for k in range(kmax + 1)]
    with mp.workdps(int(0.65 * l) + 60):
        th = mp.mpf(theta)
        x, s = mp.cos(th), mp.sin(th)
        y = x * x
        total = mp.mpf(0)  # sum_k coef_k x^(l-m-2k) = x^(l-m-2 kmax) sum_k coef_k y^(kmax-k)
        for k in range(kmax + 1):
            total = total * y + coef[k]
        total *= x ** (l - m - 2 * kmax)
        plm = (-1) ** m * s ** m * total / mp.mpf(2) ** l
        norm = mp.sqrt(mp.mpf(2 * l + 1) / (4 * mp.pi) / (mp.factorial(l + m) / mp.factorial(l - m)))
        return +(norm * plm)


def main():
    thetas = [mp.mpf("0.0008"), mp.mpf("0.1"), mp.mpf("0.4115168460674880"),  # sin = 0.4
              mp.asin(1 / mp.e), mp.mpf("1.2"), mp.pi / 2 - mp.mpf("0.0003"), mp.mpf("2.5")]
    print("# theta l m lambda_lm (tools/make_legendre_reference.py)")
    for theta in thetas:
        st = mp.sin(theta)
        for l in (3071, 2500, 1900, 300):
            ms = {0, 1, 2, 50, l // 3, l // 2, int(0.9 * l * st), int(l * st), l}
            # the largest m whose lambda_lm still exceeds 1e-30 at this l: the underflow zone
            for m in sorted(ms):
                if 0 <= m <= l:
                    v = lam(l, m, theta)
                    print("%s %d %d %s" % (mp.nstr(theta, 17), l, m, mp.nstr(v, 20)))


if __name__ == "__main__":
    main()
