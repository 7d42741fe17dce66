#!/usr/bin/env python3
"""Fits the polynomials of the vector exp and the exact GELU's erfc (src/fucina/backend/cpu/vector_ops.cpp).

exp: exp(r) = 1 + r + r²·P(r) for |r| ≤ ln 2 / 2 (what is left of x after n·ln 2, n = round(x/ln 2)),
P of degree 5, and ln 2 as hi + lo with hi's last 12 mantissa bits zero, so n·hi is exact for |n| < 2^12.

erfc: erfc(z) = t · exp(-z²) · Q(t), t = 1 / (1 + z/2), z ≥ 0, Q of degree 9. Q(t) = erfcx(z) / t is
smooth on the t the kernel sees: z = |x|/√2 with |x| capped at 20 gives t in [1/(1 + 10/√2), 1].

Each fit minimises the relative error of the whole function (least squares on Chebyshev nodes,
reweighted toward the worst points), so Φ's negative tail, t·exp(-z²)·Q(t)/2, keeps a relative error
bound however small it is. Run by hand (Debian: python3-numpy, python3-mpmath); prints the
coefficients, constant term first, as the kernel lists them.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30


def fit(lo, hi, degree, target, weight_of):
    """Coefficients of the P minimising max |weight_of(x)·(P(x) − target(x))| on [lo, hi]: the
    weight makes that the relative error of the whole function."""
    nodes = np.cos(np.linspace(0, np.pi, 3001)) * (hi - lo) / 2 + (hi + lo) / 2
    want = np.array([target(x) for x in nodes])
    weight = np.array([weight_of(x) for x in nodes])
    basis = np.vander(nodes, degree + 1, increasing=True)
    w = weight.copy()
    coef = np.linalg.lstsq(basis * w[:, None], want * w, rcond=None)[0]
    for _ in range(30):  # Lawson-style reweighting toward a minimax error
        err = np.abs((basis @ coef - want) * weight)
        w = w * (1 + 50 * err / err.max())
        coef = np.linalg.lstsq(basis * w[:, None], want * w, rcond=None)[0]
    return coef


def show(name, coef, rel_error):
    print(f"// {name}: degree {len(coef) - 1}, max relative error {rel_error:.2e}")
    print(", ".join(f"{c:.9g}f" for c in coef.astype(np.float32)))


# exp
half_ln2 = float(mp.log(2)) / 2
p_exact = lambda r: float((mp.exp(r) - 1 - r) / mp.mpf(r) ** 2) if r != 0 else 0.5
coef = fit(-half_ln2, half_ln2, 5, p_exact, lambda r: r * r / float(mp.exp(r)))
check = np.linspace(-half_ln2, half_ln2, 20001)
approx = 1 + check + check**2 * np.polyval(coef[::-1], check)
show("exp's P", coef, np.abs(approx / np.array([float(mp.exp(r)) for r in check]) - 1).max())
ln2 = mp.log(2)
ln2_hi = (np.array([float(ln2)], np.float32).view(np.uint32) & np.uint32(0xFFFFF000)).view(np.float32)[0]
ln2_lo = np.float32(float(ln2 - mp.mpf(float(ln2_hi))))
print(f"// ln 2 = hi + lo\n{float(ln2_hi):.17g}f, {float(ln2_lo):.9g}f")

# erfc
t_min = 1 / (1 + 20 / np.sqrt(2) / 2)
q_exact = lambda t: float(mp.erfc(2 / mp.mpf(t) - 2) * mp.exp((2 / mp.mpf(t) - 2) ** 2) / t)
coef = fit(t_min, 1, 9, q_exact, lambda t: 1 / q_exact(t))
check = np.linspace(t_min, 1, 20001)
show("erfc's Q", coef, np.abs(np.polyval(coef[::-1], check) / np.array([q_exact(t) for t in check]) - 1).max())
