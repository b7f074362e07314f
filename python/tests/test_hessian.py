"""Sparse Hessians from a gradient (star coloring) and smoothed Jacobians, against closed
forms."""

import math

import numpy as np
import pytest
import scipy.sparse

import nanprop


def grid_gradient(k):
    """The gradient of f = sum over the grid's edges of cosh(x_a - x_b) + z sum x_v^3 / 3
    + z^2 / 2 (z the last input, a global variable), and its Hessian."""
    v = k * k
    edges = [(r * k + c, r * k + c + 1) for r in range(k) for c in range(k - 1)]
    edges += [(r * k + c, (r + 1) * k + c) for r in range(k - 1) for c in range(k)]

    def gradient(x):
        g = np.zeros(v + 1)
        z = x[v]
        for a, b in edges:
            s = math.sinh(x[a] - x[b])
            g[a] += s
            g[b] -= s
        g[:v] += z * x[:v] ** 2
        g[v] = np.sum(x[:v] ** 3) / 3 + z
        return g

    def hess(x):
        h = np.zeros((v + 1, v + 1))
        for a, b in edges:
            c = math.cosh(x[a] - x[b])
            h[a, a] += c
            h[b, b] += c
            h[a, b] -= c
            h[b, a] -= c
        idx = np.arange(v)
        h[idx, idx] += 2 * x[v] * x[:v]
        h[idx, v] = h[v, idx] = x[:v] ** 2
        h[v, v] = 1.0
        return h

    return gradient, hess


def test_hessian_from_a_traced_gradient_with_few_star_colors():
    gradient, hess = grid_gradient(7)
    x = np.random.default_rng(1).uniform(-0.5, 0.5, 50)
    p = nanprop.trace(gradient, x)
    colors = nanprop.hessian_coloring(p)
    k, column = colors.max() + 1, nanprop.coloring(p).max() + 1
    assert k <= 7 and column == 50, (k, column)
    assert colors.shape == (50,)
    H = nanprop.hessian(gradient, x, p, "central")
    assert isinstance(H, scipy.sparse.csr_matrix) and H.nnz == p.nnz
    assert np.abs(H.toarray() - hess(x)).max() < 1e-8
    assert (H != H.T).nnz == 0, "exactly symmetric"


def test_a_plan_on_the_lower_triangle_reuses_the_gradient_at_x():
    gradient, hess = grid_gradient(5)
    x = np.linspace(-0.3, 0.4, 26)
    lower = scipy.sparse.tril(scipy.sparse.csr_matrix(hess(x) != 0)).tocsr()
    plan = nanprop.HessianPlan(lower)
    H = plan.evaluate(gradient, x, gx=gradient(x))
    assert plan.last_evaluations == plan.num_colors == plan.evaluations_per_hessian(True)
    assert np.abs(H.toarray() - np.tril(hess(x))).max() < 1e-5
    with pytest.raises(nanprop.InvalidArgumentError, match="square"):
        nanprop.HessianPlan(scipy.sparse.csr_matrix(np.ones((2, 3))))


def test_smoothed_jacobian_of_a_chain_of_steps():
    n, sigma = 61, 0.1
    x = 1.0 + 0.15 * np.sin(7.0 * np.arange(n))

    def steps(x):
        return (x[:-1] - x[1:] > 0).astype(float) + 2 * x[:-1]

    p = nanprop.trace(steps, x, sample_points=8, sample_scale=3 * sigma)
    assert all((i, i + 1) in p for i in range(n - 1)), "sampled tracing finds the step inputs"
    J, se = nanprop.smoothed_jacobian(steps, x, p, sigma, samples=400, sigma_kind="absolute")
    s2 = sigma * math.sqrt(2)
    d = x[:-1] - x[1:]
    g = np.exp(-0.5 * (d / s2) ** 2) / math.sqrt(2 * math.pi) / s2
    exact = np.zeros((n - 1, n))
    exact[np.arange(n - 1), np.arange(n - 1)] = g + 2
    exact[np.arange(n - 1), np.arange(1, n)] = -g
    err = np.abs(J.toarray() - exact)[p.to_scipy().toarray() != 0]
    bound = 3 * se.toarray()[p.to_scipy().toarray() != 0]
    assert np.mean(err <= bound) >= 0.95
    Jf = nanprop.jacobian(steps, x, p)
    assert np.abs(Jf.toarray()[:, 1:].diagonal()).max() < 1e-6, "differences see no step"
    avg, _ = nanprop.smoothed_jacobian(
        steps, x, p, sigma, samples=400, sigma_kind="absolute", estimator="average"
    )
    assert np.sqrt(np.mean(err**2)) < np.sqrt(np.mean((avg.toarray() - exact)[exact != 0] ** 2))
    with pytest.raises(nanprop.InvalidArgumentError, match="estimator"):
        nanprop.smoothed_jacobian(steps, x, p, sigma, estimator="magic")
