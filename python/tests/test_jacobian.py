"""Sparse Jacobians for SciPy: values against analytic ones, plans reused, least_squares."""

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import least_squares

import nanprop
from conftest import bratu, tridiagonal, tridiagonal_jacobian


class Counted:
    """f, counting its calls."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, x):
        self.calls += 1
        return self.f(x)


def test_forward_and_central_match_the_analytic_jacobian():
    n = 200
    x = np.random.default_rng(0).uniform(-1, 1, n)
    p = nanprop.trace(tridiagonal, x)
    exact = tridiagonal_jacobian(x)
    J = nanprop.jacobian(tridiagonal, x, p)
    assert isinstance(J, scipy.sparse.csr_matrix) and J.nnz == p.nnz
    # forward: error O(sqrt(eps)) relative to the scale of x
    assert np.abs(J.toarray() - exact).max() < 1e-6
    Jc = nanprop.jacobian(tridiagonal, x, p, method="central")
    assert np.abs(Jc.toarray() - exact).max() < 1e-9


def test_a_plan_colors_once_and_each_jacobian_costs_colors_evaluations():
    N = 15
    f, jac = bratu(N)
    x0 = np.full(N * N, 0.2)
    p = nanprop.trace(f, x0)
    plan = nanprop.JacobianPlan(p)
    assert plan.num_colors == 5  # the 5-point stencil's optimum
    assert plan.evaluations_per_jacobian() == 6 and plan.evaluations_per_jacobian(True) == 5
    g = Counted(f)
    for k in range(3):
        x = x0 + 0.1 * k
        J = plan.evaluate(g, x)
        assert np.abs(J.toarray() - jac(x)).max() < 1e-6
    assert g.calls == 3 * 6
    g.calls = 0
    plan.evaluate(g, x0, fx=f(x0))
    assert g.calls == 5 and plan.last_evaluations == 5


def test_an_exception_in_f_during_a_jacobian_propagates():
    p = nanprop.trace(tridiagonal, np.zeros(10))
    plan = nanprop.JacobianPlan(p)

    def f(x):
        if np.any(x != 0.0):
            raise ZeroDivisionError("from f")
        return tridiagonal(x)

    with pytest.raises(ZeroDivisionError, match="from f"):
        plan.evaluate(f, np.zeros(10))


def test_plan_options_are_checked():
    p = nanprop.trace(tridiagonal, np.zeros(10))
    with pytest.raises(nanprop.InvalidArgumentError, match="method"):
        nanprop.JacobianPlan(p, method="sideways")
    with pytest.raises(nanprop.InvalidArgumentError, match="per-column"):
        nanprop.JacobianPlan(p, step=[1e-6, 1e-6])
    with pytest.raises(nanprop.InvalidArgumentError, match="finite and nonzero"):
        nanprop.JacobianPlan(p, step=0.0)
    plan = nanprop.JacobianPlan(p, step=1e-7, step_kind="absolute")
    J = plan.evaluate(tridiagonal, np.zeros(10))
    assert np.abs(J.toarray() - tridiagonal_jacobian(np.zeros(10))).max() < 1e-6
    with pytest.raises(nanprop.InvalidArgumentError, match="x has 3 values"):
        plan.evaluate(tridiagonal, np.zeros(3))


def test_least_squares_converges_with_fewer_evaluations_than_scipys_own_grouping():
    # 2-D Bratu, 30 x 30: SciPy groups the columns of the pattern itself (jac_sparsity=...,
    # a greedy pass in a random order); nanprop's plan colors it by saturation (DSATUR).
    # Both start from the same point and converge to the same solution.
    N = 30
    f, jac = bratu(N, lam=5.0)
    x0 = np.zeros(N * N)
    p = nanprop.trace(f, x0)
    plan = nanprop.JacobianPlan(p)
    fun, jacobian = plan.fun_and_jac(g := Counted(f))
    ours = least_squares(fun, x0, jac=jacobian, method="trf")
    theirs_f = Counted(f)
    theirs = least_squares(theirs_f, x0, jac_sparsity=p.to_scipy(), method="trf")
    assert ours.success and theirs.success
    assert np.abs(ours.fun).max() < 1e-8 and np.abs(theirs.fun).max() < 1e-8
    assert np.abs(ours.x - theirs.x).max() < 1e-6
    from scipy.optimize._numdiff import group_columns

    groups = group_columns(p.to_scipy()).max() + 1
    assert plan.num_colors < groups
    assert g.calls < theirs_f.calls, (g.calls, theirs_f.calls, plan.num_colors, groups)
