#!/usr/bin/env python3
"""Fits the polynomial Q of the vector GELU's erfc (src/fucina/backend/cpu/vector_ops.cpp):

    erfc(z) = t · exp(-z²) · Q(t),   t = 1 / (1 + z/2),   z ≥ 0

Q(t) = erfcx(z) / t is smooth on the t the kernel sees: z = |x|/√2 with |x| capped at 20 gives
t in [1/(1 + 10/√2), 1] ≈ [0.124, 1]. The fit minimises Q's relative error (least squares on
Chebyshev nodes, reweighted toward the worst points), so Φ's negative tail, t·exp(-z²)·Q(t)/2,
keeps a relative error bound however small it is. Run by hand (Debian: python3-numpy,
python3-mpmath); prints the coefficients, constant term first, as the kernel lists them.
"""
import mpmath as mp
import numpy as np

DEGREE = 9
mp.mp.dps = 30
t_min = 1 / (1 + 20 / np.sqrt(2) / 2)


def q_exact(t):
    z = 2 / mp.mpf(t) - 2
    return float(mp.erfc(z) * mp.exp(z * z) / t)


nodes = np.cos(np.linspace(0, np.pi, 3001)) * (1 - t_min) / 2 + (1 + t_min) / 2
want = np.array([q_exact(t) for t in nodes])
basis = np.vander(nodes, DEGREE + 1, increasing=True)
weight = 1 / want
coef = np.linalg.lstsq(basis * weight[:, None], want * weight, rcond=None)[0]
for _ in range(30):  # Lawson-style reweighting toward a minimax relative error
    rel = np.abs(basis @ coef / want - 1)
    weight = weight * (1 + 50 * rel / rel.max())
    coef = np.linalg.lstsq(basis * weight[:, None], want * weight, rcond=None)[0]

check = np.linspace(t_min, 1, 20001)
exact = np.array([q_exact(t) for t in check])
coef32 = coef.astype(np.float32)
horner = np.full(check.shape, coef32[-1], np.float32)
for c in coef32[-2::-1]:
    horner = (horner.astype(np.float64) * check.astype(np.float32) + c).astype(np.float32)
print(f"// degree {DEGREE}: max relative error {np.abs(np.polyval(coef[::-1], check) / exact - 1).max():.2e}"
      f" (f32 Horner {np.abs(horner / exact - 1).max():.2e})")
print(", ".join(f"{c:.9g}f" for c in coef32))
