"""Shared helpers: test functions with known patterns, and tools that CI must have."""

import os
import shutil

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def require(tool: str, why: str) -> str:
    """The path of `tool`; skips the test without it, except under CI, where it fails."""
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI", "") not in ("", "false"):
            pytest.fail(f"{tool} is missing, and CI requires {why} (.ci/run installs it)")
        pytest.skip(f"{tool} not installed ({why})")
    return path


def tridiagonal(x):
    """y_i = 3 x_i - x_i^2 - x_{i-1} - 2 x_{i+1} + 1 (MINPACK's broyden tridiagonal)."""
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


def tridiagonal_jacobian(x):
    n = x.size
    J = np.zeros((n, n))
    J[np.arange(n), np.arange(n)] = 3.0 - 4.0 * x
    J[np.arange(1, n), np.arange(n - 1)] = -1.0
    J[np.arange(n - 1), np.arange(1, n)] = -2.0
    return J


def bratu(N, lam=1.0):
    """The 2-D Bratu problem on an N x N grid (5-point stencil), and its Jacobian."""
    h = 1.0 / (N + 1)

    def f(u):
        U = u.reshape(N, N)
        P = np.pad(U, 1)
        F = 4 * U - P[:-2, 1:-1] - P[2:, 1:-1] - P[1:-1, :-2] - P[1:-1, 2:]
        return (F - h * h * lam * np.exp(U)).ravel()

    def jac(u):
        n = N * N
        J = np.zeros((n, n))
        for i in range(N):
            for j in range(N):
                k = i * N + j
                J[k, k] = 4 - h * h * lam * np.exp(u[k])
                for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    a, b = i + di, j + dj
                    if 0 <= a < N and 0 <= b < N:
                        J[k, a * N + b] = -1.0
        return J

    return f, jac


def random_sparse(m, n, per_row, seed):
    """y_i = sum_k c_ik sin(x_{j_ik}) * x_{j_i0}: row i depends on its per_row random columns."""
    rng = np.random.default_rng(seed)
    cols = np.array([np.sort(rng.choice(n, per_row, replace=False)) for _ in range(m)])
    coef = rng.uniform(0.5, 2.0, size=(m, per_row))

    def f(x):
        return (coef * np.sin(x[cols])).sum(axis=1) * x[cols[:, 0]]

    dense = np.zeros((m, n), dtype=bool)
    dense[np.repeat(np.arange(m), per_row), cols.ravel()] = True
    return f, dense
